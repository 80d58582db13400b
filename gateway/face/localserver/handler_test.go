package localserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/face/desk"
	"github.com/delta-roads/delta/gateway/face/forward"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// fakeBackend is the gateway as the local API sees it, answering from
// what a test sets and noting what it was asked.
type fakeBackend struct {
	mu     sync.Mutex
	asked  []string
	status localapi.Status
	call   *record.Call
	err    error
}

func (b *fakeBackend) note(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, s)
}

func (b *fakeBackend) Status(context.Context) (localapi.Status, error) {
	b.note("status")
	return b.status, b.err
}

func (b *fakeBackend) Ask(_ context.Context, id string) (*record.Call, error) {
	b.note("ask " + id)
	return b.call, b.err
}

func (b *fakeBackend) Dismiss(_ context.Context, id, by string) (*record.Call, error) {
	b.note("dismiss " + id + " by " + by)
	return b.call, b.err
}

func (b *fakeBackend) Settle(_ context.Context, id string, to record.CallState, note string) (*record.Call, error) {
	b.note(fmt.Sprintf("settle %s %s %q", id, to, note))
	return b.call, b.err
}

func (b *fakeBackend) CheckReceiptRecord(_ context.Context, id, caller, by, note string) (*journal.Receipt, error) {
	b.note("check " + id)
	return nil, journal.ErrNotFound
}

func (b *fakeBackend) Ping(_ context.Context, peer string) ([]localapi.PingRoad, error) {
	b.note("ping " + peer)
	if peer != "studio" {
		return nil, fmt.Errorf("%w: %q", roads.ErrUnknownPeer, peer)
	}
	return []localapi.PingRoad{{Road: "lan", OK: true}}, nil
}

func (b *fakeBackend) LoginLink() string {
	b.note("login link")
	return "http://127.0.0.1:7420/login/once"
}

// fakeRouter knows one peer, studio, and has no roads.
type fakeRouter struct{}

func (fakeRouter) Known(peer string) bool { return peer == "studio" }
func (fakeRouter) Choose(context.Context, string, roads.Road, ...roads.Road) (roads.Candidate, error) {
	return roads.Candidate{}, roads.ErrNoRoad
}
func (fakeRouter) Report(roads.Candidate, time.Duration, error) {}
func (fakeRouter) Invalidate(string, roads.Road, error)         {}
func (fakeRouter) Peers() []localapi.PeerStatus                 { return []localapi.PeerStatus{{Name: "studio"}} }

const token = "tok-123"

// newHandler is the local API over a fake backend and router and a real
// journal in a temporary folder; page is what the status page's paths get.
func newHandler(t *testing.T) (*Handler, *fakeBackend, *journal.DB) {
	t.Helper()
	db, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	be := &fakeBackend{status: localapi.Status{Unsettled: 2}}
	h := New(Config{Backend: be, DB: db, Router: fakeRouter{}, Counters: desk.NewCounters(),
		Page:  http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the page") }),
		Token: token, StateDir: "/state", OwnDoors: func() []net.Addr { return []net.Addr{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7420}} },
		Log: slog.New(slog.DiscardHandler), Now: time.Now})
	h.SetForwards(forward.New(forward.Config{Dir: t.TempDir(), Serve: h.ServeForward}))
	return h, be, db
}

// do serves one request to h and returns the answer, its outcome and its
// body.
func do(h http.Handler, method, target, auth, body string) (*http.Response, string) {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.Host = "127.0.0.1:7420"
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	res := w.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// errorOf reads Delta's error body.
func errorOf(t *testing.T, body string) localapi.ErrorBody {
	t.Helper()
	var eb localapi.ErrorBody
	if err := json.Unmarshal([]byte(body), &eb); err != nil {
		t.Fatalf("not Delta's error body (%v): %s", err, body)
	}
	return eb
}

// TestGuard: every request needs the local token (Bearer, or Basic with
// it as the password) and a loopback Host; the status page's paths go to
// the page on its own login; refusals say nothing was sent, in fields.
func TestGuard(t *testing.T) {
	h, be, _ := newHandler(t)
	for _, tc := range []struct {
		name, auth, host string
		status           int
		outcome          localapi.Outcome
	}{
		{"no token", "", "127.0.0.1:7420", 401, localapi.Unauthorized},
		{"a wrong token", "Bearer nope", "127.0.0.1:7420", 401, localapi.Unauthorized},
		{"a foreign Host", "Bearer " + token, "evil.example:7420", 400, localapi.BadRequest},
		{"the token", "Bearer " + token, "localhost:7420", 200, localapi.Answered},
		{"Basic with the token", "Basic " + basic("restic", token), "[::1]:7420", 200, localapi.Answered},
	} {
		r := httptest.NewRequest("GET", localapi.StatusPath, nil)
		r.Host = tc.host
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status || w.Header().Get(localapi.HeaderOutcome) != string(tc.outcome) {
			t.Errorf("%s: %d %s, want %d %s (%s)", tc.name, w.Code, w.Header().Get(localapi.HeaderOutcome), tc.status, tc.outcome, w.Body)
			continue
		}
		if tc.status != 200 && errorOf(t, w.Body.String()).Guarantee() != localapi.NothingSent {
			t.Errorf("%s: the refusal does not say nothing was sent: %s", tc.name, w.Body)
		}
		if tc.status == 401 && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate", tc.name)
		}
	}
	if _, body := do(h, "GET", "/login", "", ""); body != "the page" {
		t.Errorf("the page's path: %q", body)
	}
	if n := len(be.asked); n != 2 {
		t.Errorf("the backend was asked %d times (%v): refused requests reached it", n, be.asked)
	}
}

func basic(user, pass string) string {
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth(user, pass)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

// TestRefusedBeforeRouting: an unclean path, a method Delta refuses, a
// path that is not the local API's, an unknown peer's read and a read
// with a body are refused with what was wrong, and nothing sent.
func TestRefusedBeforeRouting(t *testing.T) {
	h, _, _ := newHandler(t)
	auth := "Bearer " + token
	for _, tc := range []struct {
		method, target, body string
		status               int
		detail               string
	}{
		{"GET", "/v1/peers/studio/notes/a/../b", "", 400, "segment"},
		{"TRACE", "/v1/peers/studio/notes", "", 405, "TRACE"},
		{"GET", "/v1/nothing", "", 404, "not part of Delta's local API"},
		{"GET", "/v1/peers/stdio/notes/x", "", 404, "did you mean studio?"},
		{"GET", "/v1/peers/studio/notes/x", "a body", 400, "carries no body"},
		{"GET", "/v1/peers/-bad/notes", "", 400, "peer"},
	} {
		res, body := do(h, tc.method, tc.target, auth, tc.body)
		if res.StatusCode != tc.status || !strings.Contains(body, tc.detail) {
			t.Errorf("%s %s: %d %s, want %d naming %q", tc.method, tc.target, res.StatusCode, body, tc.status, tc.detail)
			continue
		}
		if tc.status != 404 || strings.HasPrefix(tc.target, "/v1/peers/") {
			if g := errorOf(t, body).Guarantee(); g != localapi.NothingSent {
				t.Errorf("%s %s: guarantee %d, want nothing sent", tc.method, tc.target, g)
			}
		}
	}
}

// TestCallActions: the actions on a call reach the backend with the
// request id, and its errors become the outcomes they are: not found,
// conflict (not unsettled), unavailable; settle's body is checked first.
func TestCallActions(t *testing.T) {
	h, be, _ := newHandler(t)
	auth := "Bearer " + token
	be.call = &record.Call{RequestID: "r-1", Peer: "studio", App: "notes", State: record.NeedsPerson}
	res, body := do(h, "POST", localapi.CallActionPath("r-1", localapi.ActionAsk), auth, "")
	var c localapi.Call
	if json.Unmarshal([]byte(body), &c); res.StatusCode != 200 || c.RequestID != "r-1" || c.State != string(record.NeedsPerson) {
		t.Fatalf("ask: %d %s", res.StatusCode, body)
	}
	do(h, "POST", localapi.CallActionPath("r-1", localapi.ActionDismiss), auth, "")
	do(h, "POST", localapi.CallActionPath("r-1", localapi.ActionSettle), auth, `{"state": "carried_out", "note": "I saw it"}`)
	want := []string{"ask r-1", "dismiss r-1 by the local API", `settle r-1 carried_out "I saw it"`}
	if fmt.Sprint(be.asked) != fmt.Sprint(want) {
		t.Errorf("the backend was asked %q, want %q", be.asked, want)
	}
	for _, bad := range []string{`{"state": "answered"}`, `not json`, `{"state": "carried_out", "note": "` + strings.Repeat("n", 1001) + `"}`} {
		if res, body := do(h, "POST", localapi.CallActionPath("r-1", localapi.ActionSettle), auth, bad); res.StatusCode != 400 || errorOf(t, body).Detail == "" {
			t.Errorf("settle %.40s: %d %s", bad, res.StatusCode, body)
		}
	}
	if len(be.asked) != 3 {
		t.Errorf("a bad settle reached the backend: %q", be.asked)
	}
	for _, tc := range []struct {
		err     error
		outcome localapi.Outcome
	}{
		{journal.ErrNotFound, localapi.NotFound},
		{desk.ErrNotUnsettled, localapi.Conflict},
		{journal.ErrNotSettleable, localapi.Conflict},
		{errors.New("disk I/O error"), localapi.Unavailable},
	} {
		be.err = tc.err
		res, body := do(h, "POST", localapi.CallActionPath("r-2", localapi.ActionSettle), auth, `{"state": "not_carried_out"}`)
		if res.Header.Get(localapi.HeaderOutcome) != string(tc.outcome) || res.StatusCode != tc.outcome.Status() {
			t.Errorf("%v: %d %s, want %s", tc.err, res.StatusCode, body, tc.outcome)
		}
	}
}

// TestApps: an app is registered in the journal with its URL checked
// (loopback, a port, not one of Delta's own doors, no name that differs
// only in case), listed, read and removed.
func TestApps(t *testing.T) {
	h, _, db := newHandler(t)
	auth := "Bearer " + token
	res, body := do(h, "PUT", localapi.AppPath("notes"), auth, `{"url": "http://127.0.0.1:8384/", "timeout": "20"}`)
	var a localapi.App
	if json.Unmarshal([]byte(body), &a); res.StatusCode != 200 || a.URL != "http://127.0.0.1:8384" || a.Secret == "" || a.Timeout != "20" {
		t.Fatalf("put: %d %s", res.StatusCode, body)
	}
	if got, err := db.Apps().Get(context.Background(), "notes"); err != nil || got.URL != "http://127.0.0.1:8384" {
		t.Fatalf("the journal has %+v, %v", got, err)
	}
	for _, tc := range []struct{ name, body, detail string }{
		{"Notes", `{"url": "http://127.0.0.1:9000"}`, "differs only in case"},
		{"x", `{"url": "http://192.0.2.1:80"}`, "loopback"},
		{"x", `{"url": "http://127.0.0.1:7420"}`, "Delta's own"},
		{"x", `{"url": "https://127.0.0.1:9000"}`, "http://"},
		{"x", `{"url": "http://127.0.0.1:9000", "timeout": "soon"}`, "timeout"},
		{"-x", `{"url": "http://127.0.0.1:9000"}`, "app name"},
	} {
		if res, body := do(h, "PUT", localapi.AppPath(tc.name), auth, tc.body); res.StatusCode != 400 || !strings.Contains(body, tc.detail) {
			t.Errorf("put %s %s: %d %s, want 400 naming %q", tc.name, tc.body, res.StatusCode, body, tc.detail)
		}
	}
	if _, body := do(h, "GET", localapi.AppsPath, auth, ""); !strings.Contains(body, `"app": "notes"`) || strings.Contains(body, "secret") {
		t.Errorf("list: %s", body)
	}
	if res, _ := do(h, "DELETE", localapi.AppPath("notes"), auth, ""); res.StatusCode != 204 {
		t.Errorf("delete: %d", res.StatusCode)
	}
	if res, body := do(h, "GET", localapi.AppPath("notes"), auth, ""); res.StatusCode != 404 {
		t.Errorf("after delete: %d %s", res.StatusCode, body)
	}
}

// TestStatusPingLogin: status, metrics, ping and the login link answer
// from the backend; a ping to a peer it does not know is not found.
func TestStatusPingLogin(t *testing.T) {
	h, be, _ := newHandler(t)
	auth := "Bearer " + token
	if _, body := do(h, "GET", localapi.MetricsPath, auth, ""); !strings.Contains(body, "delta_unsettled_calls 2\n") {
		t.Errorf("metrics: %s", body)
	}
	if res, body := do(h, "POST", localapi.PingPeerPath("studio"), auth, ""); res.StatusCode != 200 || !strings.Contains(body, `"road": "lan"`) {
		t.Errorf("ping: %d %s", res.StatusCode, body)
	}
	if res, body := do(h, "POST", localapi.PingPeerPath("laptop"), auth, ""); res.StatusCode != 404 || !strings.Contains(body, "laptop") {
		t.Errorf("ping an unknown peer: %d %s", res.StatusCode, body)
	}
	if _, body := do(h, "POST", localapi.LoginLinkPath, auth, ""); !strings.Contains(body, "/login/once") {
		t.Errorf("login link: %s", body)
	}
	be.err = errors.New("database is locked")
	if res, body := do(h, "GET", localapi.StatusPath, auth, ""); res.StatusCode != 503 || !strings.Contains(body, "database is locked") {
		t.Errorf("status on a failing journal: %d %s", res.StatusCode, body)
	}
}

// TestListening: the ports this computer's programs listen on, each
// with its program and the app already registered at it; Delta's own
// doors are not offered.
func TestListening(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("listening sockets are read on Linux only")
	}
	h, _, _ := newHandler(t)
	auth := "Bearer " + token
	app, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	door, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer door.Close()
	h.cfg.OwnDoors = func() []net.Addr { return []net.Addr{door.Addr()} }
	appURL := "http://" + app.Addr().String()
	if res, body := do(h, "PUT", localapi.AppPath("web"), auth, `{"url": "`+appURL+`"}`); res.StatusCode != 200 {
		t.Fatalf("register: %d %s", res.StatusCode, body)
	}
	res, body := do(h, "GET", localapi.ListeningPath, auth, "")
	var out struct{ Ports []localapi.Listening }
	if err := json.Unmarshal([]byte(body), &out); err != nil || res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	comm, _ := os.ReadFile("/proc/self/comm")
	found := false
	for _, p := range out.Ports {
		switch p.Address {
		case app.Addr().String():
			found = true
			if p.URL != appURL || p.App != "web" || p.Program != strings.TrimSpace(string(comm)) || p.PID != os.Getpid() {
				t.Errorf("the app's port: %+v", p)
			}
		case door.Addr().String():
			t.Errorf("Delta's own door offered: %+v", p)
		}
	}
	if !found {
		t.Errorf("%s not offered: %s", app.Addr(), body)
	}
}

// TestPeerApps: GET /v1/peer-apps/{peer} is the peer's own answer, each
// app with this computer's forward to it; an unknown peer is not_found
// (nobody is asked), a peer that cannot be asked unavailable, with why;
// and it needs the local token as every path does.
func TestPeerApps(t *testing.T) {
	h, _, _ := newHandler(t)
	auth := "Bearer " + token
	var asked []string
	answer, fail := []string{"notes", "web"}, error(nil)
	h.cfg.PeerApps = func(_ context.Context, peer string) ([]string, error) {
		asked = append(asked, peer)
		return answer, fail
	}
	if res, body := do(h, "PUT", localapi.ForwardPath("studio", "web"), auth, `{}`); res.StatusCode != 200 {
		t.Fatalf("open a forward: %d %s", res.StatusCode, body)
	}
	res, body := do(h, "GET", localapi.PeerAppsOf("studio"), auth, "")
	var got localapi.PeerApps
	if err := json.Unmarshal([]byte(body), &got); err != nil || res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	if got.Peer != "studio" || len(got.Apps) != 2 || got.Apps[0].App != "notes" || got.Apps[0].Forward != nil ||
		got.Apps[1].App != "web" || got.Apps[1].Forward == nil || !strings.HasPrefix(got.Apps[1].Forward.URL, "http://127.0.0.1:") {
		t.Errorf("%s", body)
	}

	asked = nil
	if res, body := do(h, "GET", localapi.PeerAppsOf("stranger"), auth, ""); res.StatusCode != 404 || !strings.Contains(body, "unknown peer") || len(asked) != 0 {
		t.Errorf("an unknown peer: %d %s (asked %v)", res.StatusCode, body, asked)
	}
	fail = errors.New("no road to studio")
	if res, body := do(h, "GET", localapi.PeerAppsOf("studio"), auth, ""); res.StatusCode != 503 || !strings.Contains(body, "could not ask studio which apps it shares (no road to studio)") {
		t.Errorf("a peer that cannot be asked: %d %s", res.StatusCode, body)
	}
	if res, _ := do(h, "GET", localapi.PeerAppsOf("studio"), "", ""); res.StatusCode != 401 {
		t.Errorf("without the token: %d", res.StatusCode)
	}
}
