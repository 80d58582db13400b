package gateway_test

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/carry/transfer"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/net/ticket"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// endless is a long body: n bytes of 'x', counted as they are read (by
// the client's writer, which may go on after its answer came).
type endless struct{ n, read atomic.Int64 }

func (e *endless) Read(p []byte) (int, error) {
	left := e.n.Load() - e.read.Load()
	if left <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), left)
	for i := range k {
		p[i] = 'x'
	}
	e.read.Add(k)
	return int(k), nil
}

// TestStreamedBodyLongerThanAnnounced: a streamed call that announces
// X-Delta-Body-Length: 1 and sends 256 MiB is refused at the second
// byte, never read (into memory) to its end; its app sees nothing.
func TestStreamedBodyLongerThanAnnounced(t *testing.T) {
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	tk := netKey.Mint(ticket.Claims{Node: "node-laptop", Name: "laptop", Expires: time.Now().Add(time.Minute)})
	body := &endless{}
	body.n.Store(256 << 20)
	req, _ := http.NewRequest("POST", "http://"+laptop.otherAddr+"/delta/v1/apps/notes/answer/long", io.NopCloser(body))
	req.ContentLength = -1 // chunked
	req.Header.Set("Authorization", proto.TicketAuth(tk))
	req.Header.Set(localapi.HeaderRequestID, "long-1")
	req.Header.Set(proto.HeaderBodyLength, "1")
	req.Trailer = http.Header{proto.HeaderDigest: nil}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || !strings.Contains(string(b), "longer than the 1 bytes announced") {
			t.Errorf("the owner's reply: %d %s", resp.StatusCode, b)
		}
	}
	// Either a refusal came back, or the owner closed the connection
	// while the body was still being written: what matters is that it
	// did not read the rest.
	if sent := body.read.Load(); sent > 64<<20 {
		t.Errorf("the owner read %d MiB of a body announced as 1 byte", sent>>20)
	}
	if app.Requests() != 0 {
		t.Errorf("the app saw %d requests", app.Requests())
	}
}

// TestAnswerHeadsBounded: an owner app's head over 10 MiB, or past 1,000
// interim answers, is its broken answer: a read gets 502 app_error, a
// call outcome_unknown, and the road stays (issue 34 A4). What the Deltas'
// memory does meanwhile is measured, not asserted.
func TestAnswerHeadsBounded(t *testing.T) {
	laptop, _, _ := seenPair(t, "web")
	for _, path := range []string{"/bighead", "/many1xx"} {
		r := laptop.c.Must(t, "GET", "/v1/peers/studio/web"+path, nil)
		if r.Status != 502 || r.Outcome() != "app_error" {
			t.Errorf("a read of %s: %d %s %s", path, r.Status, r.Outcome(), r.Err.Detail)
		}
		r = laptop.c.Must(t, "POST", "/v1/peers/studio/web"+path, []byte("x"))
		if r.Outcome() != "outcome_unknown" {
			t.Errorf("a call to %s: %d %s %s", path, r.Status, r.Outcome(), r.Err.Detail)
		}
	}
	if r := laptop.c.Must(t, "GET", "/v1/peers/studio/web/echo", nil); r.Status != 200 {
		t.Errorf("after them: %d %s", r.Status, r.Err.Detail)
	}
}

// TestBytesPastAnAnswer: an owner app that writes past its answer's
// length leaves bytes on its pooled connection; the next read, from any
// app, must not take them for its answer, nor the cache keep them
// (issue 34 A3).
func TestBytesPastAnAnswer(t *testing.T) {
	laptop, _, app := seenPair(t, "web")
	if r := laptop.c.Must(t, "GET", "/v1/peers/studio/web/pastlength", nil); r.Status != 200 || string(r.Body) != "ok" {
		t.Fatalf("the answer itself: %d %q", r.Status, r.Body)
	}
	for i := range 3 {
		r := laptop.c.Must(t, "GET", "/v1/peers/studio/web/echo", nil)
		if strings.Contains(string(r.Body), "POISON") || r.Status != 200 {
			t.Fatalf("read %d after it got %d %q", i, r.Status, r.Body)
		}
	}
	if got := app.count(); got != 4 {
		t.Errorf("the app got %d requests, want 4", got)
	}
}

// TestSessionsBounded: a Delta keeps at most transfer.MaxSessions sessions
// at once (here 2; those its apps opened and those it received
// together): one more is refused 503, nothing sent, and once one ends a
// new one opens (issue 34 A9).
func TestSessionsBounded(t *testing.T) {
	old := transfer.MaxSessions
	transfer.MaxSessions = 2
	t.Cleanup(func() { transfer.MaxSessions = old })
	laptop, _, _ := seenPair(t, "web")
	local := strings.TrimPrefix(laptop.c.URL, "http://")
	open := func() (net.Conn, *http.Response) {
		c, err := net.Dial("tcp", local)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "GET /v1/peers/studio/web/ws HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", local, laptop.g.Token())
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c, resp
	}
	first, r1 := open()
	_, r2 := open()
	if r1.StatusCode != 101 || r2.StatusCode != 101 {
		t.Fatalf("the first two sessions: %d %d", r1.StatusCode, r2.StatusCode)
	}
	if _, r := open(); r.StatusCode != 503 || r.Header.Get("X-Delta-Outcome") != "unavailable" {
		t.Errorf("a third session: %d %s", r.StatusCode, r.Header.Get("X-Delta-Outcome"))
	}
	first.Close()
	gatewaytest.WaitFor(t, 10*time.Second, "a session opened after one ended", func() bool {
		_, r := open()
		return r.StatusCode == 101
	})
}

// TestManyCallsToOnePeer: 300 calls at once to one peer, past its door's
// 256 connections from one source: the caller's Delta keeps at most
// peerclient.ConnsPerPeer open and queues the rest, so the door turns none
// away and every call is answered, none told "outcome unknown" for a
// connection closed at its accept (issue 34 A5).
func TestManyCallsToOnePeer(t *testing.T) {
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	const n = 300
	results := make(chan *gatewaytest.Response, n)
	for i := range n {
		go func() {
			r, err := laptop.c.Do("POST", "/v1/peers/studio/notes/hold/many", []byte("x"), "X-Delta-Request-Id", fmt.Sprintf("many-%d", i), "X-Delta-Timeout", "120")
			if err != nil {
				r = &gatewaytest.Response{Status: -1, Body: []byte(err.Error())}
			}
			results <- r
		}()
	}
	gatewaytest.WaitFor(t, 60*time.Second, "as many calls at the app as the caller keeps connections to its peer", func() bool {
		return app.Requests() >= peerclient.ConnsPerPeer
	})
	app.Release("/hold/many")
	for range n {
		if r := <-results; r.Status != 201 || r.Outcome() != "answered" {
			t.Errorf("a call: %d %s %s", r.Status, r.Outcome(), r.Body)
		}
	}
	if m := string(studio.c.Must(t, "GET", "/metrics", nil).Body); strings.Contains(m, "delta_door_connections_refused_total") && !strings.Contains(m, "delta_door_connections_refused_total 0") {
		t.Errorf("studio's door refused connections:\n%s", grepLines(m, "refused"))
	}
}

// TestForgetReceived: a person on the owner's computer can drop what a
// received call carried, as `delta forget` does for a call sent; its
// receipt and the body's size stay (issue 34 U2).
func TestForgetReceived(t *testing.T) {
	laptop, studio, _ := seenPair(t, "web")
	if r := laptop.c.Must(t, "POST", "/v1/peers/studio/web/echo", []byte("the secret plan"), "X-Delta-Request-Id", "fr-1", "Cookie", "x=1"); r.Status != 200 {
		t.Fatalf("the call: %d %s", r.Status, r.Body)
	}
	studio.waitReceiptDone(t, "node-laptop", "fr-1")
	if r := studio.c.Must(t, "GET", "/v1/receipts/fr-1", nil); !strings.Contains(string(r.Body), base64.StdEncoding.EncodeToString([]byte("the secret plan"))) {
		t.Fatalf("before: the receipt does not keep what the call carried: %s", r.Body)
	}
	r := studio.c.Must(t, "POST", "/v1/receipts/fr-1/forget", nil)
	if r.Status != 200 || strings.Contains(string(r.Body), base64.StdEncoding.EncodeToString([]byte("the secret plan"))) || !strings.Contains(string(r.Body), `"forgotten": true`) {
		t.Errorf("forget: %d %s", r.Status, r.Body)
	}
	if r := studio.c.Must(t, "POST", "/v1/receipts/nope/forget", nil); r.Status != 404 {
		t.Errorf("forget a call never received: %d", r.Status)
	}
	if r := studio.c.Must(t, "POST", "/v1/receipts/fr-1/forget", []byte(`{"caller": "elsewhere"}`)); r.Status != 404 {
		t.Errorf("forget with another caller: %d %s", r.Status, r.Body)
	}
}

// TestStreamedCallOneHashPass: a call whose body streams (3 MiB) is summed
// once, by the owner as it spools it: the caller's journal holds the
// digest the owner said in its reply, which is the call's; the same body
// again under its id gets the recorded answer, another body is refused
// 409, and the app had the call once. A streamed call whose outcome is
// unknown learns its digest from the owner's reply too.
func TestStreamedCallOneHashPass(t *testing.T) {
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	body := []byte(strings.Repeat("0123456789abcdef", 3<<16)) // 3 MiB: over proto.InMemoryBody
	const id, path = "one-pass-1", "/answer/one-pass"
	want := proto.Digest("POST", "notes", path, body)

	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes"+path, body, "X-Delta-Request-Id", id)
	if r.Status != 201 || r.Outcome() != "answered" || string(r.Body) != string(body) {
		t.Fatalf("the streamed call: %d %s (%d bytes) %s", r.Status, r.Outcome(), len(r.Body), r.Err.Detail)
	}
	if r.Header.Get(proto.HeaderDigest) != "" {
		t.Errorf("the app was shown Delta's own %s", proto.HeaderDigest)
	}
	c, err := laptop.g.Journal().Calls().Get(t.Context(), id)
	if err != nil || c.Digest != want || c.Request == nil || c.Request.Size != len(body) {
		t.Fatalf("the caller's record: %v, digest %q (want %q)", err, c.Digest, want)
	}
	if rc := studio.waitReceiptDone(t, "node-laptop", id); rc.Digest != want {
		t.Errorf("the owner's receipt has digest %q, want %q", rc.Digest, want)
	}

	again := laptop.c.Must(t, "POST", "/v1/peers/studio/notes"+path, body, "X-Delta-Request-Id", id)
	// Its answer is over 1 MiB: replayed without its body (DESIGN §2a).
	if again.Status != 201 || again.Header.Get("X-Delta-Replayed") != "true" || again.Header.Get("X-Delta-Answer-Omitted") == "" {
		t.Errorf("the same call again: %d %s replayed %q", again.Status, again.Outcome(), again.Header.Get("X-Delta-Replayed"))
	}
	other := []byte(strings.Repeat("x", len(body)))
	if r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes"+path, other, "X-Delta-Request-Id", id); r.Status != 409 {
		t.Errorf("another body under the same id: %d %s %s", r.Status, r.Outcome(), r.Err.Detail)
	}
	if n := app.Effects(path); n != 1 {
		t.Errorf("the app carried the call out %d times", n)
	}

	const lost = "/reset-after-read/one-pass"
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes"+lost, body, "X-Delta-Request-Id", "one-pass-2")
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("a streamed call whose app broke its connection: %d %s %s", r.Status, r.Outcome(), r.Err.Detail)
	}
	if c, err := laptop.g.Journal().Calls().Get(t.Context(), "one-pass-2"); err != nil || c.Digest != proto.Digest("POST", "notes", lost, body) {
		t.Errorf("its record: %v, digest %q", err, c.Digest)
	}
}

// TestStreamedBodyPassedChecked: at the owner's door, a streamed body's
// trailer X-Delta-Body-Passed (the bytes the caller's Delta read from its
// app) must name what arrived: another count is refused, a body that ends
// without it did not arrive whole, and neither reaches the app; a body
// whose count is right is forwarded, and the reply says its digest.
func TestStreamedBodyPassedChecked(t *testing.T) {
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	send := func(id, passed string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+laptop.otherAddr+"/delta/v1/apps/notes/answer/"+id, strings.NewReader("streamed body"))
		req.ContentLength = -1 // chunked
		req.Header.Set("Authorization", proto.TicketAuth(netKey.Mint(ticket.Claims{Node: "node-laptop", Name: "laptop", Expires: time.Now().Add(time.Minute)})))
		req.Header.Set(localapi.HeaderRequestID, id)
		req.Trailer = http.Header{proto.HeaderBodyPassed: nil}
		if passed != "" {
			req.Trailer.Set(proto.HeaderBodyPassed, passed)
		}
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	for _, tc := range []struct{ id, passed, want string }{
		{"passed-short", "12", "read 12 bytes of the body from its app, and 13 arrived"},
		{"passed-none", "", "ended without the caller's count of it"},
		{"passed-words", "thirteen", "X-Delta-Body-Passed \\\"thirteen\\\" is not a size in bytes"},
	} {
		resp, b := send(tc.id, tc.passed)
		if resp.StatusCode != 400 || !strings.Contains(b, tc.want) || !strings.Contains(b, `"carried_out":false`) {
			t.Errorf("%s: %d %s", tc.id, resp.StatusCode, b)
		}
		if rc := studio.waitReceiptDone(t, "node-laptop", tc.id); rc.State != proto.ReceiptNotCarriedOut {
			t.Errorf("%s: the receipt is %s", tc.id, rc.State)
		}
	}
	if n := app.Requests(); n != 0 {
		t.Fatalf("the app saw %d requests", n)
	}
	resp, b := send("passed-right", "13")
	want := proto.Digest("POST", "notes", "/answer/passed-right", []byte("streamed body"))
	if resp.StatusCode != 201 || b != "streamed body" || resp.Header.Get(proto.HeaderDigest) != want {
		t.Errorf("a body whose count is right: %d %q, digest %q (want %q)", resp.StatusCode, b, resp.Header.Get(proto.HeaderDigest), want)
	}
}
