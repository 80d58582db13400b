package kit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/examples/notes"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/kit"
)

// pair starts two real Deltas (laptop, studio) in static mode and an owner
// app on studio; the kit opens laptop's state folder, as an app would.
func pair(t *testing.T) (c *kit.Client, laptop, studio *gatewaytest.Delta, app *gatewaytest.OwnerApp) {
	t.Helper()
	laptop, studio = gatewaytest.StaticPair(t, "laptop", "studio")
	app = gatewaytest.StartOwnerApp(t)
	studio.Register(t, "owner", app.URL)
	c, err := kit.Open(laptop.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, laptop, studio, app
}

func TestAnswered(t *testing.T) {
	c, laptop, _, app := pair(t)
	ctx := context.Background()
	id := kit.NewRequestID()
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
		t.Fatalf("NewRequestID %q is not a version 4 UUID", id)
	}
	ans, err := c.Call(ctx, "studio", "owner", "POST", "/answer/1", []byte("hello"), &kit.CallOptions{RequestID: id})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Status != 201 || string(ans.Body) != "hello" || ans.RequestID != id || ans.Road != "lan" || ans.Replayed {
		t.Fatalf("answer: %+v", ans)
	}
	// The same call again is answered from the journal: nothing is sent.
	again, err := c.Call(ctx, "studio", "owner", "POST", "/answer/1", []byte("hello"), &kit.CallOptions{RequestID: id})
	if err != nil || !again.Replayed || app.Effects("/answer/1") != 1 {
		t.Fatalf("replay: %+v %v, effects %d", again, err, app.Effects("/answer/1"))
	}
	// A call without an id gets one minted by the kit.
	ans, err = c.Call(ctx, "studio", "owner", "PUT", "/answer/2", nil, nil)
	if err != nil || ans.RequestID == "" {
		t.Fatalf("call without an id: %+v %v", ans, err)
	}
	read, err := c.Get(ctx, "studio", "owner", "/things?x=1", nil)
	if err != nil || read.Status != 200 || string(read.Body) != "GET /things?x=1" || read.Stale {
		t.Fatalf("read: %+v %v", read, err)
	}
	rec, err := c.CallRecord(ctx, id)
	if err != nil || rec.State != "answered" || len(rec.Attempts) != 1 || !rec.Attempts[0].FirstByte || len(rec.History) == 0 {
		t.Fatalf("record: %+v %v", rec, err)
	}
	// An app that names itself nothing is named by its program, never by
	// Go's client ("Go-http-client"); Client.App names it otherwise.
	if rec.CallerApp != "kit.test" || kit.ProgramName() != "kit.test" {
		t.Fatalf("a call of an unnamed app is named %q (ProgramName %q), not its program's name", rec.CallerApp, kit.ProgramName())
	}
	named, err := kit.Open(laptop.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer named.Close()
	named.App = "editor"
	if _, err := named.Call(ctx, "studio", "owner", "POST", "/answer/named", nil, &kit.CallOptions{RequestID: id + "-named"}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := c.CallRecord(ctx, id+"-named"); rec == nil || rec.CallerApp != "editor" {
		t.Fatalf("Client.App = editor: the call is named %+v", rec)
	}
	if _, err := c.Call(ctx, "studio", "owner", "GET", "/x", nil, nil); err == nil || !strings.Contains(err.Error(), "not a call") {
		t.Fatalf("GET through Call: %v", err)
	}
}

func TestUnavailable(t *testing.T) {
	c, _, studio, app := pair(t)
	ctx := context.Background()
	// Not registered on studio: studio proves nothing was carried out.
	_, err := c.Call(ctx, "studio", "nobody", "POST", "/answer/x", nil, nil)
	var u *kit.Unavailable
	if !errors.As(err, &u) || u.Outcome != "not_found" || u.Peer != "studio" {
		t.Fatalf("unknown app: %v", err)
	}
	// An unknown peer: nothing was sent.
	_, err = c.Call(ctx, "nowhere", "owner", "POST", "/answer/x", nil, nil)
	if !errors.As(err, &u) || u.Outcome != "not_found" || !strings.Contains(u.Detail, "nothing was sent") {
		t.Fatalf("unknown peer: %v", err)
	}
	// studio's Delta stopped: the connect fails, nothing was sent.
	studio.G.Close()
	_, err = c.Call(ctx, "studio", "owner", "POST", "/answer/y", nil, nil)
	if !errors.As(err, &u) || u.Outcome != "unavailable" || u.Status != 503 || !strings.Contains(u.Detail, "nothing was sent") {
		t.Fatalf("stopped peer: %v", err)
	}
	if app.Effects("/answer/y") != 0 {
		t.Fatal("the app acted on a call that was not sent")
	}
	_, err = c.Get(ctx, "studio", "owner", "/r", nil)
	if !errors.As(err, &u) || u.Outcome != "unavailable" {
		t.Fatalf("read from a stopped peer: %v", err)
	}
}

func TestOutcomeUnknownThenSettle(t *testing.T) {
	c, _, _, app := pair(t)
	ctx := context.Background()
	id := kit.NewRequestID()
	_, err := c.Call(ctx, "studio", "owner", "POST", "/apply-then-sleep/1", []byte("late"), &kit.CallOptions{RequestID: id, Timeout: 300 * time.Millisecond})
	var unknown *kit.OutcomeUnknown
	if !errors.As(err, &unknown) || unknown.RequestID != id {
		t.Fatalf("a call whose answer came too late: %v", err)
	}
	app.Release("/apply-then-sleep/1")
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rec, err := c.WaitSettled(sctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != "carried_out" || !rec.Settled() || rec.Answer == nil || string(rec.Answer.Body) != "late" {
		t.Fatalf("settled: %+v", rec)
	}
	// A call the owner cannot account for needs a person.
	id2 := kit.NewRequestID()
	_, err = c.Call(ctx, "studio", "owner", "POST", "/reset-after-read/1", nil, &kit.CallOptions{RequestID: id2})
	if !errors.As(err, &unknown) {
		t.Fatalf("a call whose app reset: %v", err)
	}
	rec, err = c.WaitSettled(sctx, id2)
	if err != nil || rec.State != "needs_person" || rec.Settled() {
		t.Fatalf("settled: %+v %v", rec, err)
	}
	// It cannot be set aside: setting aside means "keep asking".
	var ae *kit.APIError
	if _, err := c.Dismiss(ctx, id2); !errors.As(err, &ae) || ae.Outcome != "conflict" || !strings.Contains(ae.Detail, "needs a person") {
		t.Fatalf("dismiss a call that needs a person: %v", err)
	}
	if rec, _ := c.CallRecord(ctx, id2); rec.Dismissed {
		t.Fatalf("dismissed: %+v", rec)
	}
	// WaitSettled gives up with ctx.
	short, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	idHeld := kit.NewRequestID()
	go c.Call(ctx, "studio", "owner", "POST", "/hold/h", nil, &kit.CallOptions{RequestID: idHeld})
	app.WaitArrived(t, idHeld)
	if _, err := c.WaitSettled(short, idHeld); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitSettled past its ctx: %v", err)
	}
	app.Release("/hold/h")
}

func TestConflict(t *testing.T) {
	c, _, _, _ := pair(t)
	ctx := context.Background()
	id := kit.NewRequestID()
	if _, err := c.Call(ctx, "studio", "owner", "POST", "/answer/1", []byte("one"), &kit.CallOptions{RequestID: id}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Call(ctx, "studio", "owner", "POST", "/answer/1", []byte("two"), &kit.CallOptions{RequestID: id})
	var cf *kit.Conflict
	if !errors.As(err, &cf) || cf.RequestID != id {
		t.Fatalf("another request under the same id: %v", err)
	}
}

func TestDeltaDown(t *testing.T) {
	dir := t.TempDir()
	_, err := kit.Open(dir)
	var down *kit.DeltaDown
	if !errors.As(err, &down) || down.StateDir != dir || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("Open on a folder without Delta: %v", err)
	}
	c, laptop, _, app := pair(t)
	laptop.G.Close() // local.json goes with it
	id := kit.NewRequestID()
	_, err = c.Call(context.Background(), "studio", "owner", "POST", "/answer/z", nil, &kit.CallOptions{RequestID: id})
	if !errors.As(err, &down) || down.RequestID != id || !strings.Contains(err.Error(), "nothing was sent") {
		t.Fatalf("a call with the local Delta stopped: %v", err)
	}
	if _, err := c.Status(context.Background()); !errors.As(err, &down) {
		t.Fatalf("status with the local Delta stopped: %v", err)
	}
	if app.Requests() != 0 {
		t.Fatal("the app was reached")
	}
}

// TestLocalDeltaGoneMidCall: the local Delta takes the call and closes the
// connection without an answer: the call may have been handed over, so it
// is unknown, never "nothing was sent".
func TestLocalDeltaGoneMidCall(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			// It proves it holds the folder's token, as Delta does,
			// then takes the call and breaks.
			br := bufio.NewReader(conn)
			if req, err := http.ReadRequest(br); err == nil && req.URL.Path == "/v1/proof" {
				body, _ := json.Marshal(map[string]string{"proof": localapi.Proof("tok", req.URL.Query().Get("nonce"))})
				fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nX-Delta-Outcome: answered\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				http.ReadRequest(br)
			}
			conn.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	writeLocal(t, dir, "http://"+ln.Addr().String())
	c, err := kit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Call(context.Background(), "studio", "owner", "POST", "/x", []byte("b"), nil)
	var unknown *kit.OutcomeUnknown
	if !errors.As(err, &unknown) || unknown.RequestID == "" {
		t.Fatalf("a call whose local connection broke: %v", err)
	}
}

func writeLocal(t *testing.T, dir, url string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"url": url, "pid": os.Getpid()}) // a process that runs
	if err := writeFile(dir+"/local.json", b); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(dir+"/local-token", []byte("tok")); err != nil {
		t.Fatal(err)
	}
}

// TestOwner: the middleware admits only Delta, and says who called.
func TestOwner(t *testing.T) {
	var got kit.Incoming
	h := kit.Owner("s3cret", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = kit.FromRequest(r)
		w.WriteHeader(204)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tc := range []struct {
		secret string
		want   int
		why    string
	}{{"", 403, "has no X-Delta-Forward-Secret"}, {"wrong", 403, "does not match"}, {"s3cret", 204, ""}} {
		req, _ := http.NewRequest("POST", srv.URL+"/n", nil)
		if tc.secret != "" {
			req.Header.Set(kit.HeaderSecret, tc.secret)
		}
		req.Header.Set(kit.HeaderRequestID, "id-1")
		req.Header.Set(kit.HeaderCaller, "laptop")
		req.Header.Set(kit.HeaderTimeout, "5")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Detail string }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || !strings.Contains(body.Detail, tc.why) {
			t.Errorf("secret %q: %d %q", tc.secret, resp.StatusCode, body.Detail)
		}
	}
	if got.RequestID != "id-1" || got.Caller != "laptop" || time.Until(got.Deadline) <= 0 {
		t.Fatalf("incoming: %+v", got)
	}
}

// TestNotesThroughDelta: the example owner app, registered with the kit,
// called from the other computer.
func TestNotesThroughDelta(t *testing.T) {
	laptop, studio := gatewaytest.StaticPair(t, "laptop", "studio")
	sc, err := kit.Open(studio.Dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	reg, err := sc.RegisterApp(ctx, "notes", "http://"+ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	app := &notes.App{}
	srv := &http.Server{Handler: app.Handler(reg.Secret)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	apps, err := sc.Apps(ctx)
	if err != nil || len(apps) != 1 || apps[0].App != "notes" || apps[0].Secret != "" {
		t.Fatalf("apps: %+v %v", apps, err)
	}

	lc, err := kit.Open(laptop.Dir)
	if err != nil {
		t.Fatal(err)
	}
	lc.App = "editor"
	id := kit.NewRequestID()
	ans, err := lc.Call(ctx, "studio", "notes", "POST", "/notes", []byte(`{"text":"milk"}`), &kit.CallOptions{RequestID: id,
		Header: http.Header{"Content-Type": {"application/json"}}})
	if err != nil || ans.Status != 201 {
		t.Fatalf("add a note: %+v %v", ans, err)
	}
	n := app.Notes()
	if len(n) != 1 || n[0].Text != "milk" || n[0].From != "laptop" || n[0].RequestID != id {
		t.Fatalf("notes: %+v", n)
	}
	read, err := lc.Get(ctx, "studio", "notes", "/notes/1", nil)
	if err != nil || !strings.Contains(string(read.Body), "milk") {
		t.Fatalf("read the note: %+v %v", read, err)
	}
	// Straight to the app, without Delta: refused.
	resp, err := http.Post("http://"+ln.Addr().String()+"/notes", "application/json", strings.NewReader(`{"text":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 || len(app.Notes()) != 1 {
		t.Fatalf("a request around Delta: %d", resp.StatusCode)
	}
	if err := sc.RemoveApp(ctx, "notes"); err != nil {
		t.Fatal(err)
	}
	if apps, _ := sc.Apps(ctx); len(apps) != 0 {
		t.Fatalf("apps after remove: %+v", apps)
	}
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }
