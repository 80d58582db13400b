package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// seenApp is an owner app that keeps what each request brought it (the
// Host, the headers, the body) and has a few ways to fail: /echo answers
// what it saw as JSON; /halfway sends a head promising 100,000 bytes, ten
// of them, and closes; /garbage answers with bytes that are not HTTP;
// /ws takes any upgrade and echoes what comes.
type seenApp struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []seen
}

type seen struct {
	Method, Path, Host string
	Header             http.Header
	Body               string
}

func startSeenApp(t *testing.T) *seenApp {
	a := &seenApp{}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *seenApp) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s := seen{Method: r.Method, Path: r.URL.RequestURI(), Host: r.Host, Header: r.Header.Clone(), Body: string(body)}
	a.mu.Lock()
	a.got = append(a.got, s)
	a.mu.Unlock()
	switch r.URL.Path {
	case "/halfway":
		resumableStart(w)
		c, _, _ := http.NewResponseController(w).Hijack()
		c.Close()
	case "/stall":
		resumableStart(w)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	case "/pastlength": // an answer written past its length, on a connection kept open
		c, _, _ := http.NewResponseController(w).Hijack()
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" +
			"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nCache-Control: max-age=600\r\n\r\nPOISON"))
		time.AfterFunc(3*time.Second, func() { c.Close() })
	case "/bighead": // a 16 MiB header line
		c, _, _ := http.NewResponseController(w).Hijack()
		c.Write([]byte("HTTP/1.1 200 OK\r\nX-Big: "))
		c.Write(bytes.Repeat([]byte("a"), 16<<20))
		c.Write([]byte("\r\nContent-Length: 0\r\n\r\n"))
		c.Close()
	case "/many1xx": // 1,500 interim answers, then one
		c, _, _ := http.NewResponseController(w).Hijack()
		c.Write(bytes.Repeat([]byte("HTTP/1.1 102 Processing\r\n\r\n"), 1500))
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		c.Close()
	case "/426":
		w.Header().Set("Upgrade", "echo/1")
		w.Header().Set("Connection", "Upgrade")
		w.WriteHeader(http.StatusUpgradeRequired)
	case "/status000":
		c, _, _ := http.NewResponseController(w).Hijack()
		c.Write([]byte("HTTP/1.1 000 Zero\r\nContent-Length: 0\r\n\r\n"))
		c.Close()
	case "/garbage":
		c, _, _ := http.NewResponseController(w).Hijack()
		c.Write([]byte("this is not HTTP at all\r\n\r\n"))
		c.Close()
	case "/ws":
		c, brw, _ := http.NewResponseController(w).Hijack()
		defer c.Close()
		fmt.Fprintf(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\nConnection: Upgrade\r\n\r\n", r.Header.Get("Upgrade"))
		line, err := brw.ReadString('\n')
		if err == nil {
			c.Write([]byte("echo:" + line))
		}
	case "/redirect":
		http.Redirect(w, r, "/landed/", http.StatusMovedPermanently)
	default:
		if strings.HasPrefix(r.URL.Path, "/login") {
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s3cret", Path: "/"})
		}
		if r.Method == "PROPFIND" {
			w.WriteHeader(http.StatusMultiStatus)
		}
		json.NewEncoder(w).Encode(s)
	}
}

// seenPair starts laptop and studio, and on studio a seenApp registered
// as name.
func seenPair(t *testing.T, name string) (laptop, studio *node, app *seenApp) {
	t.Helper()
	laptop, studio = pair(t, nil)
	app = startSeenApp(t)
	studio.register(t, name, app.srv.URL)
	return laptop, studio, app
}

// resumableStart writes the head and the first ten bytes of a 100,000-byte
// answer that can be resumed (as rclone's webdav over a file deleted
// behind it), flushed.
func resumableStart(w http.ResponseWriter) {
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("ETag", `"v1"`)
	w.Header().Set("Content-Length", "100000")
	w.WriteHeader(200)
	w.Write([]byte("0123456789"))
	w.(http.Flusher).Flush()
}

func (a *seenApp) last(t *testing.T) seen {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.got) == 0 {
		t.Fatal("the owner app got nothing")
	}
	return a.got[len(a.got)-1]
}

func (a *seenApp) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.got)
}

// forwardTo opens laptop's forward to studio's app and returns it.
func forwardTo(t *testing.T, laptop *node, app string, token bool) localapi.Forward {
	t.Helper()
	body := `{}`
	if token {
		body = `{"token": true}`
	}
	r := laptop.c.Must(t, "PUT", "/v1/forwards/studio/"+app, []byte(body))
	if r.Status != 200 {
		t.Fatalf("open a forward: %d %s", r.Status, r.Body)
	}
	var f localapi.Forward
	if err := json.Unmarshal(r.Body, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// plain sends one request as an app that knows only a URL would: no
// token, no Delta header; hdr is name, value pairs ("Host" sets the Host).
func plain(t *testing.T, method, url, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Add(hdr[i], hdr[i+1])
		}
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestForward: a forward carries an app's own paths to the peer's app
// with no prefix and no token, reads and calls alike, with the outcome
// headers of /v1/peers/…; an app that sends no request id gets one; it is
// kept and opened again on the same port at the next start; it is listed
// and removed.
func TestForward(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio, app := seenPair(t, "web")
	f := forwardTo(t, laptop, "web", false)
	if !strings.HasPrefix(f.URL, "http://127.0.0.1:") || f.BrowserURL == "" || !f.Open || f.Warning != "" {
		t.Fatalf("forward %+v", f)
	}
	// A forward to an app the peer does not have is opened, and the
	// person is told at once (it said nothing until a request got a 404).
	if nf := forwardTo(t, laptop, "nosuchapp", false); !nf.Open || nf.Warning != `studio has no app "nosuchapp" (its apps: web): the forward is open, and answers 404 until studio registers it (there: delta apps add nosuchapp URL)` {
		t.Errorf("a forward to an app studio lacks: %+v", nf)
	}
	if r := laptop.c.Must(t, "DELETE", "/v1/forwards/studio/nosuchapp", nil); r.Status/100 != 2 {
		t.Fatalf("close the forward to nosuchapp: %d %s", r.Status, r.Body)
	}

	resp, body := plain(t, "GET", f.URL+"echo?q=1", "")
	if resp.StatusCode != 200 || resp.Header.Get("X-Delta-Outcome") != "answered" || resp.Header.Get("X-Delta-Route") != "lan" {
		t.Fatalf("a read through the forward: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if s := app.last(t); s.Path != "/echo?q=1" {
		t.Errorf("the app got %q, want its own path /echo?q=1", s.Path)
	}
	resp, body = plain(t, "POST", f.URL+"items", "a note", "User-Agent", "rclone/v1.60.1")
	id := resp.Header.Get("X-Delta-Request-Id")
	if resp.StatusCode != 200 || resp.Header.Get("X-Delta-Outcome") != "answered" || id == "" {
		t.Fatalf("a call through the forward: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	// A client given only a URL is named by its User-Agent, here and on
	// the owner (whose receipts named only the computer).
	if c := laptop.c.GetCall(t, id, 0); c.State != "answered" || c.Path != "/items" || c.CallerApp != "rclone" {
		t.Errorf("the call's record: %s %s, made by %q", c.State, c.Path, c.CallerApp)
	}
	var recs struct{ Receipts []localapi.Receipt }
	if r := studio.c.Must(t, "GET", "/v1/receipts", nil); r.Status != 200 || json.Unmarshal(r.Body, &recs) != nil ||
		!slices.ContainsFunc(recs.Receipts, func(rc localapi.Receipt) bool {
			return rc.RequestID == id && rc.CallerApp == "rclone" && rc.Caller == "laptop"
		}) {
		t.Errorf("studio's receipts do not name laptop's rclone: %s", r.Body)
	}
	if s := app.last(t); s.Body != "a note" || s.Header.Get("X-Delta-Request-Id") != id {
		t.Errorf("the app got %q with id %q", s.Body, s.Header.Get("X-Delta-Request-Id"))
	}

	// An unknown outcome through a forward is journaled and reconciled as
	// one through /v1/peers/….
	notes := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", notes.URL)
	fn := forwardTo(t, laptop, "notes", false)
	resp, body = plain(t, "POST", fn.URL+"sleep-then-apply/f1", "x", "X-Delta-Request-Id", "fwd-1", "X-Delta-Timeout", "0.3")
	if resp.StatusCode != 502 || resp.Header.Get("X-Delta-Outcome") != "outcome_unknown" {
		t.Fatalf("a call whose answer did not come in time: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	notes.Release("/sleep-then-apply/f1")
	if c := laptop.c.GetCall(t, "fwd-1", 30); c.State != "carried_out" {
		t.Errorf("the unknown call through the forward settled %s, want carried_out", c.State)
	}
	if resp, _ = plain(t, "POST", fn.URL+"sleep-then-apply/f1", "x", "X-Delta-Request-Id", "fwd-1"); resp.Header.Get("X-Delta-Outcome") == "" || notes.Effects("/sleep-then-apply/f1") != 1 {
		t.Errorf("a repeat of the id: %d %s, effects %d", resp.StatusCode, resp.Header.Get("X-Delta-Outcome"), notes.Effects("/sleep-then-apply/f1"))
	}

	// Kept, and opened again on the same port.
	kept, err := os.ReadFile(filepath.Join(laptop.dir, "forwards.json"))
	if err != nil || !strings.Contains(string(kept), f.Listen) {
		t.Fatalf("forwards.json: %v %s", err, kept)
	}
	// The notes forward as it was kept before forwards' names had labels.
	var file struct {
		Forwards []map[string]any `json:"forwards"`
	}
	if err := json.Unmarshal(kept, &file); err != nil || len(file.Forwards) != 2 {
		t.Fatalf("forwards.json: %v %s", err, kept)
	}
	for _, sp := range file.Forwards {
		if sp["app"] == "notes" {
			delete(sp, "label")
		}
	}
	old, _ := json.Marshal(file)
	laptop.g.Close()
	if err := os.WriteFile(filepath.Join(laptop.dir, "forwards.json"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	laptop.start(t) // its own peer listener stays closed: it only sends here
	if resp, body = plain(t, "GET", f.URL+"echo", ""); resp.StatusCode != 200 {
		t.Fatalf("after a restart the forward answered %d %s", resp.StatusCode, body)
	}
	r := laptop.c.Must(t, "GET", "/v1/forwards", nil)
	var list struct {
		Forwards []localapi.Forward `json:"forwards"`
	}
	if err := json.Unmarshal(r.Body, &list); err != nil || len(list.Forwards) != 2 {
		t.Fatalf("the list: %v %s", err, r.Body)
	}
	for _, g := range list.Forwards {
		switch g.App {
		case "web": // its own name, and so a browser's cookies, kept
			if g.Listen != f.Listen || g.BrowserURL != f.BrowserURL {
				t.Errorf("after a restart web is %s %s, was %s %s", g.Listen, g.BrowserURL, f.Listen, f.BrowserURL)
			}
		case "notes": // given a label, and kept with it
			n, _, _ := strings.Cut(strings.TrimPrefix(g.BrowserURL, "http://"), ":")
			if parts := strings.Split(n, "."); len(parts) != 4 || parts[0] != "notes" || parts[1] != "studio" || g.BrowserURL == fn.BrowserURL {
				t.Errorf("a forward kept before labels has the name %q (was %q)", g.BrowserURL, fn.BrowserURL)
			}
			if now, _ := os.ReadFile(filepath.Join(laptop.dir, "forwards.json")); strings.Count(string(now), `"label"`) != 2 {
				t.Errorf("its label was not kept: %s", now)
			}
		}
	}
	// Opened again as it is: the same name.
	if g := forwardTo(t, laptop, "web", false); g.BrowserURL != f.BrowserURL {
		t.Errorf("opened again, web is %s, was %s", g.BrowserURL, f.BrowserURL)
	}
	if r := laptop.c.Must(t, "DELETE", "/v1/forwards/studio/web", nil); r.Status != 204 {
		t.Fatalf("remove: %d %s", r.Status, r.Body)
	}
	if _, err := http.Get(f.URL); err == nil {
		t.Errorf("the forward still answers after its removal")
	}
	if r := laptop.c.Must(t, "DELETE", "/v1/forwards/studio/web", nil); r.Status != 404 {
		t.Errorf("removing it twice: %d", r.Status)
	}
	if r := laptop.c.Must(t, "PUT", "/v1/forwards/studio/web", []byte(`{"listen": "0.0.0.0:0"}`)); r.Status != 400 || !strings.Contains(r.Err.Detail, "not on a loopback address") {
		t.Errorf("a forward on every address: %d %s", r.Status, r.Body)
	}
	if r := laptop.c.Must(t, "PUT", "/v1/forwards/nowhere/web", nil); r.Status != 404 {
		t.Errorf("a forward to an unknown peer: %d %s", r.Status, r.Body)
	}
}

// TestForwardGuard: DNS rebinding, other sites in a browser (a simple
// POST too) and, when asked, a missing token are refused with a 403 (401)
// that names why, and nothing reaches the peer.
func TestForwardGuard(t *testing.T) {
	laptop, _, app := seenPair(t, "web")
	f := forwardTo(t, laptop, "web", false)
	port := f.Listen[strings.LastIndex(f.Listen, ":")+1:]
	own := strings.TrimSuffix(strings.TrimPrefix(f.BrowserURL, "http://"), "/") // web.studio.LABEL.localhost:PORT
	if !strings.HasPrefix(own, "web.studio.") || !strings.HasSuffix(own, ".localhost:"+port) || own == "web.studio.localhost:"+port {
		t.Fatalf("the forward's own name: %q", f.BrowserURL)
	}
	refused := []struct {
		name, method string
		hdr          []string
		why          string
	}{
		{"rebinding", "GET", []string{"Host", "evil.example:" + port}, "DNS-rebinding guard"},
		{"another port", "GET", []string{"Host", "127.0.0.1:1"}, "DNS-rebinding guard"},
		{"another forward's label", "GET", []string{"Host", "web.studio.aaaaaaaaaaaaa.localhost:" + port}, "DNS-rebinding guard"},
		{"a simple POST from another site", "POST", []string{"Origin", "http://evil.example", "Content-Type", "application/x-www-form-urlencoded"}, "another site"},
		{"a POST from another loopback port", "POST", []string{"Origin", "http://127.0.0.1:7420"}, "another site"},
		{"Origin null", "POST", []string{"Origin", "null"}, "another site"},
		{"cross-site", "GET", []string{"Sec-Fetch-Site", "cross-site"}, "Sec-Fetch-Site: cross-site"},
		{"same-site", "GET", []string{"Sec-Fetch-Site", "same-site"}, "Sec-Fetch-Site: same-site"},
	}
	for _, tc := range refused {
		resp, body := plain(t, tc.method, f.URL+"x", "a=1", tc.hdr...)
		if resp.StatusCode != 403 || resp.Header.Get("X-Delta-Outcome") != "forbidden" || !strings.Contains(body, tc.why) || !strings.Contains(body, "nothing was sent") {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, body)
		}
	}
	if app.count() != 0 {
		t.Fatalf("the owner app got %d requests the guard refused", app.count())
	}
	// Its own origin, and its own name, pass.
	for _, hdr := range [][]string{
		{"Origin", "http://127.0.0.1:" + port, "Sec-Fetch-Site", "same-origin"},
		{"Host", own, "Origin", "http://" + own},
		{"Host", "web.studio.localhost:" + port}, // its name before labels: as its address
		{"Host", "localhost:" + port},
	} {
		if resp, body := plain(t, "POST", f.URL+"x", "a=1", hdr...); resp.StatusCode != 200 {
			t.Errorf("%v: %d %s", hdr, resp.StatusCode, body)
		}
	}
	// A browser's navigation to its address, or to the name forwards had
	// before labels, is sent on to its own name.
	for _, host := range []string{"127.0.0.1:" + port, "web.studio.localhost:" + port} {
		resp, body := plain(t, "GET", f.URL+"page?x=1", "", "Host", host, "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Site", "none")
		if loc := resp.Header.Get("Location"); resp.StatusCode != 307 || loc != f.BrowserURL+"page?x=1" {
			t.Errorf("a navigation to %s: %d to %q %s", host, resp.StatusCode, loc, body)
		}
	}
	if calls := laptop.c.Must(t, "GET", "/v1/calls", nil); strings.Count(string(calls.Body), `"request_id"`) != 4 {
		t.Errorf("the journal holds other calls than the four let in: %s", calls.Body)
	}

	// --token: the forward's own secret (never the local token, issue 63
	// D5), as Basic with any user name, or Bearer.
	ft := forwardTo(t, laptop, "web", true)
	if len(ft.Secret) < 20 || ft.Secret == laptop.g.Token() {
		t.Fatalf("a --token forward's secret: %q", ft.Secret)
	}
	resp, body := plain(t, "GET", ft.URL+"echo", "")
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic realm=") || !strings.Contains(body, "nothing was sent") {
		t.Errorf("no secret: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	n := app.count()
	if resp, body := plain(t, "GET", ft.URL+"echo", "", "Authorization", "Bearer "+laptop.g.Token()); resp.StatusCode != 401 {
		t.Errorf("the local token on a --token forward: %d %s; want 401, it takes its own secret alone", resp.StatusCode, body)
	}
	u := strings.Replace(ft.URL, "http://", "http://anyone:"+ft.Secret+"@", 1)
	if resp, body := plain(t, "GET", u+"echo", ""); resp.StatusCode != 200 {
		t.Errorf("Basic: %d %s", resp.StatusCode, body)
	}
	if resp, body := plain(t, "GET", ft.URL+"echo", "", "Authorization", "Bearer "+ft.Secret); resp.StatusCode != 200 {
		t.Errorf("Bearer: %d %s", resp.StatusCode, body)
	}
	if s := app.last(t); s.Header.Get("Authorization") != "" {
		t.Errorf("the secret reached the app: %q", s.Header.Get("Authorization"))
	}
	if app.count() != n+2 {
		t.Errorf("the app got %d requests, want 2", app.count()-n)
	}
}

// TestBasicAuth: the local API takes the token as a Basic password, and
// its 401 asks for it with WWW-Authenticate.
func TestBasicAuth(t *testing.T) {
	laptop, _, app := seenPair(t, "web")
	resp, body := plain(t, "GET", laptop.c.URL+"/v1/peers/studio/web/echo", "")
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Basic realm="Delta"` {
		t.Errorf("no token: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	u := strings.Replace(laptop.c.URL, "http://", "http://restic:"+laptop.g.Token()+"@", 1)
	if resp, body := plain(t, "GET", u+"/v1/peers/studio/web/echo", ""); resp.StatusCode != 200 || resp.Header.Get("X-Delta-Outcome") != "answered" {
		t.Errorf("Basic: %d %s", resp.StatusCode, body)
	}
	if s := app.last(t); s.Header.Get("Authorization") != "" {
		t.Errorf("the token reached the app: %q", s.Header.Get("Authorization"))
	}
}

// TestAppSeesItsClient: the owner app gets the Host its client used and
// Delta's own X-Forwarded-Host, X-Forwarded-Proto, Forwarded (a client's
// own are not passed on as Delta's), so a redirect and a Destination
// point back through the same door; cookies pass through a forward, never
// Delta's page cookie, and never from /v1/peers/…; a read with a cookie
// is not served from the cache another app filled.
func TestAppSeesItsClient(t *testing.T) {
	laptop, _, app := seenPair(t, "web")
	f := forwardTo(t, laptop, "web", false)
	host := strings.TrimSuffix(strings.TrimPrefix(f.URL, "http://"), "/")

	plain(t, "PROPFIND", f.URL+"echo", "", "X-Forwarded-Host", "evil.example", "Forwarded", "for=1.2.3.4", "X-Forwarded-For", "1.2.3.4",
		"Cookie", "sid=s3cret; delta_session=page", "Destination", f.URL+"other")
	s := app.last(t)
	if s.Host != host || s.Header.Get("X-Forwarded-Host") != host || s.Header.Get("X-Forwarded-Proto") != "http" {
		t.Errorf("the app saw Host %q, X-Forwarded-Host %q, X-Forwarded-Proto %q; want %q", s.Host, s.Header.Get("X-Forwarded-Host"), s.Header.Get("X-Forwarded-Proto"), host)
	}
	if fw := s.Header.Get("Forwarded"); fw != `for=_laptop;host="`+host+`";proto=http` || s.Header.Get("X-Forwarded-For") != "" {
		t.Errorf("Forwarded %q, X-Forwarded-For %q", fw, s.Header.Get("X-Forwarded-For"))
	}
	if s.Header.Get("Cookie") != "sid=s3cret" {
		t.Errorf("through a forward the app got Cookie %q, want sid=s3cret (never Delta's page cookie)", s.Header.Get("Cookie"))
	}
	if s.Header.Get("Destination") != f.URL+"other" {
		t.Errorf("Destination %q", s.Header.Get("Destination"))
	}
	// A redirect points back through the forward.
	resp, _ := plain(t, "GET", f.URL+"redirect", "")
	if resp.StatusCode != 301 || resp.Header.Get("Location") != "/landed/" {
		t.Errorf("redirect: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A login's cookie comes back, and is not stored for others.
	resp, _ = plain(t, "GET", f.URL+"login", "")
	if !strings.Contains(resp.Header.Get("Set-Cookie"), "sid=s3cret") {
		t.Errorf("Set-Cookie %q", resp.Header.Get("Set-Cookie"))
	}

	// /v1/peers/…: the local API's Host, the prefix, no cookie.
	laptop.c.Must(t, "GET", "/v1/peers/studio/web/echo", nil, "Cookie", "sid=s3cret", "X-Forwarded-Host", "evil.example")
	s = app.last(t)
	local := strings.TrimPrefix(laptop.c.URL, "http://")
	if s.Host != local || s.Header.Get("X-Forwarded-Prefix") != "/v1/peers/studio/web" || s.Header.Get("Cookie") != "" {
		t.Errorf("on /v1/peers the app saw Host %q, prefix %q, Cookie %q", s.Host, s.Header.Get("X-Forwarded-Prefix"), s.Header.Get("Cookie"))
	}
	// A cached answer is not served to a request with a cookie.
	n := app.count()
	laptop.c.Must(t, "GET", "/v1/peers/studio/web/echo", nil) // fresh? the app sets no Cache-Control: not cached
	plain(t, "GET", f.URL+"echo", "", "Cookie", "sid=s3cret")
	if app.count() != n+2 {
		t.Errorf("the owner app got %d of 2 reads", app.count()-n)
	}
}

// TestSafeMethodsAreReads: PROPFIND (and the other safe methods) is a
// read: its body reaches the app, it is not journaled, and it carries no
// request id.
func TestSafeMethodsAreReads(t *testing.T) {
	laptop, _, app := seenPair(t, "dav")
	for _, m := range []string{"PROPFIND", "REPORT", "SEARCH", "QUERY"} {
		r := laptop.c.Must(t, m, "/v1/peers/studio/dav/tree/", []byte(`<propfind xmlns="DAV:"><allprop/></propfind>`), "Depth", "1")
		if r.Outcome() != "answered" || r.Header.Get("X-Delta-Request-Id") != "" {
			t.Errorf("%s: %d %s, request id %q", m, r.Status, r.Outcome(), r.Header.Get("X-Delta-Request-Id"))
		}
		if s := app.last(t); s.Method != m || !strings.Contains(s.Body, "allprop") || s.Header.Get("Depth") != "1" {
			t.Errorf("%s: the app got %s with body %q", m, s.Method, s.Body)
		}
	}
	if calls := laptop.c.Must(t, "GET", "/v1/calls", nil); strings.Contains(string(calls.Body), `"request_id"`) {
		t.Errorf("safe methods were journaled: %s", calls.Body)
	}
	if m := string(laptop.c.Must(t, "GET", "/metrics", nil).Body); !strings.Contains(m, `delta_reads_total{outcome="answered"} 4`) {
		t.Errorf("not counted as reads:\n%s", grepLines(m, "delta_reads_total"))
	}
}

// TestAppFaultKeepsTheRoad: an owner app that breaks its answer (a head
// then a close; bytes that are not HTTP) is the app's fault: the read
// whose head came is cut, the one without gets 502 app_error, and the
// road stays up for every other request.
func TestAppFaultKeepsTheRoad(t *testing.T) {
	laptop, _, _ := seenPair(t, "web")

	_, err := laptop.c.Do("GET", "/v1/peers/studio/web/halfway", nil)
	if err == nil {
		t.Fatal("a read whose app broke off after its head came to the app as whole")
	}
	r := laptop.c.Must(t, "GET", "/v1/peers/studio/web/echo", nil)
	if r.Status != 200 || r.Outcome() != "answered" {
		t.Fatalf("right after an app broke off, another read got %d %s: %s", r.Status, r.Outcome(), r.Err.Detail)
	}
	// An app silent mid-body past X-Delta-Timeout: its Delta ends the
	// answer, and this side keeps the road.
	if _, err := laptop.c.Do("GET", "/v1/peers/studio/web/stall", nil, "X-Delta-Timeout", "0.3"); err == nil {
		t.Fatal("a read whose app fell silent came to the app as whole")
	}
	if r := laptop.c.Must(t, "GET", "/v1/peers/studio/web/echo", nil); r.Status != 200 {
		t.Fatalf("right after an app fell silent, another read got %d %s: %s", r.Status, r.Outcome(), r.Err.Detail)
	}
	r = laptop.c.Must(t, "GET", "/v1/peers/studio/web/garbage", nil)
	if r.Status != 502 || r.Outcome() != "app_error" || !strings.Contains(r.Err.Detail, "broke its answer before its head") {
		t.Errorf("garbage: %d %s %s", r.Status, r.Outcome(), r.Err.Detail)
	}
	r = laptop.c.Must(t, "GET", "/v1/peers/studio/web/status000", nil)
	if r.Status != 502 || r.Outcome() != "app_error" || !strings.Contains(r.Err.Detail, "status 000 is not an HTTP status") {
		t.Errorf("status 000: %d %s %s", r.Status, r.Outcome(), r.Err.Detail)
	}
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/web/status000", []byte("x"))
	if r.Outcome() != "outcome_unknown" {
		t.Errorf("a call the app answered with status 000: %d %s %s", r.Status, r.Outcome(), r.Err.Detail)
	}
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/web/garbage", []byte("x"))
	if r.Outcome() != "outcome_unknown" {
		t.Errorf("a call the app answered with garbage: %d %s %s", r.Status, r.Outcome(), r.Err.Detail)
	}
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/web/echo", []byte("x"))
	if r.Status != 200 || r.Outcome() != "answered" {
		t.Errorf("a call after them: %d %s %s", r.Status, r.Outcome(), r.Err.Detail)
	}
	st := laptop.c.Must(t, "GET", "/v1/status", nil)
	var status localapi.Status
	json.Unmarshal(st.Body, &status)
	for _, p := range status.Peers {
		for _, rd := range p.Roads {
			if rd.State == localapi.RoadDown {
				t.Errorf("road %s to %s is down after the app's faults: %+v", rd.Road, p.Name, rd)
			}
		}
	}
}

// TestSessionOpensAsAppsExpect: a session's opening reaches the owner app
// with Connection: Upgrade and nothing that contradicts it, from the
// local API and through a forward.
func TestSessionOpensAsAppsExpect(t *testing.T) {
	laptop, _, app := seenPair(t, "web")
	local := strings.TrimPrefix(laptop.c.URL, "http://")
	doors := []struct{ addr, path, auth string }{{local, "/v1/peers/studio/web/ws", "Authorization: Bearer " + laptop.g.Token() + "\r\n"}}
	f := forwardTo(t, laptop, "web", false)
	doors = append(doors, struct{ addr, path, auth string }{f.Listen, "/ws", ""})
	for _, d := range doors {
		c, err := net.Dial("tcp", d.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n%sConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", d.path, d.addr, d.auth)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 101 {
			t.Fatalf("the opening on %s: %v %v", d.path, resp, err)
		}
		c.Write([]byte("hello\n"))
		line, err := br.ReadString('\n')
		if err != nil || line != "echo:hello\n" {
			t.Errorf("the session on %s: %q %v", d.path, line, err)
		}
		s := app.last(t)
		if got := s.Header.Values("Connection"); len(got) != 1 || !strings.EqualFold(got[0], "Upgrade") {
			t.Errorf("on %s the app saw Connection %q, want Upgrade alone", d.path, got)
		}
	}
}

// TestUpgradeWithABodyIsACall: a request with a body, or a call, that
// asks for an Upgrade (curl --http2 on http:// sends Upgrade: h2c) is a
// call: journaled, sent at most once, its body whole; only a bodiless
// read opens a session.
func TestUpgradeWithABodyIsACall(t *testing.T) {
	laptop, _, app := seenPair(t, "web")
	for i, up := range []string{"h2c", "websocket"} {
		id := fmt.Sprintf("up-%d", i)
		r := laptop.c.Must(t, "POST", "/v1/peers/studio/web/echo", []byte("pay=1"), "Connection", "Upgrade, HTTP2-Settings", "Upgrade", up,
			"HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA", "X-Delta-Request-Id", id)
		if r.Status != 200 || r.Outcome() != "answered" || r.Header.Get("X-Delta-Request-Id") != id {
			t.Fatalf("POST with Upgrade: %s: %d %s %s", up, r.Status, r.Outcome(), r.Body)
		}
		s := app.last(t)
		if s.Body != "pay=1" || s.Header.Get("Upgrade") != "" || s.Header.Get("Http2-Settings") != "" {
			t.Errorf("Upgrade: %s: the app got body %q, Upgrade %q", up, s.Body, s.Header.Get("Upgrade"))
		}
		if c := laptop.c.GetCall(t, id, 0); c.State != "answered" || c.Method != "POST" {
			t.Errorf("Upgrade: %s: the journal: %s %s", up, c.State, c.Method)
		}
		n := app.count()
		if r := laptop.c.Must(t, "POST", "/v1/peers/studio/web/echo", []byte("pay=1"), "Connection", "Upgrade", "Upgrade", up, "X-Delta-Request-Id", id); r.Header.Get("X-Delta-Replayed") != "true" || app.count() != n {
			t.Errorf("Upgrade: %s: the repeat reached the app (%d) or was not replayed: %v", up, app.count()-n, r.Header)
		}
	}
	// A bodiless GET asking for h2c is a read, its Upgrade dropped.
	if r := laptop.c.Must(t, "GET", "/v1/peers/studio/web/echo", nil, "Connection", "Upgrade", "Upgrade", "h2c"); r.Status != 200 || app.last(t).Header.Get("Upgrade") != "" {
		t.Errorf("GET with Upgrade: h2c: %d %s", r.Status, r.Body)
	}
}

// TestUpgradeRequiredKeepsUpgrade: a 426 carries its Upgrade header to
// the app (RFC 9110 §15.5.22), whether it answers a read or declines a
// session's opening; other answers' Upgrade is hop-by-hop and dropped.
func TestUpgradeRequiredKeepsUpgrade(t *testing.T) {
	laptop, _, _ := seenPair(t, "web")
	for _, hdr := range [][]string{nil, {"Connection", "Upgrade", "Upgrade", "other/2"}} {
		r := laptop.c.Must(t, "GET", "/v1/peers/studio/web/426", nil, hdr...)
		if r.Status != 426 || r.Header.Get("Upgrade") != "echo/1" || r.Header.Get("Connection") == "Upgrade" {
			t.Errorf("a 426 (%v): %d, Upgrade %q, Connection %q", hdr, r.Status, r.Header.Get("Upgrade"), r.Header.Get("Connection"))
		}
	}
}

// TestClientOriginNeverReachesApp (issue 63, D7): of the headers that
// proxies use to tell an app about its client, whatever a client sends
// (any spelling, underscores included) never reaches the owner app,
// through a forward or on /v1/peers/…, on a read, a call or a session's
// opening: only Delta's own Forwarded, X-Forwarded-Host, -Proto and
// -Prefix do.
func TestClientOriginNeverReachesApp(t *testing.T) {
	laptop, _, app := seenPair(t, "web")
	f := forwardTo(t, laptop, "web", false)
	sent := []string{"X-Forwarded-Port", "9", "X-Forwarded-Ssl", "on", "X-Forwarded-Scheme", "https", "X-Forwarded-Server", "evil",
		"X-Forwarded-Uri", "/admin", "X-Original-URL", "/admin", "X-Rewrite-URL", "/admin", "X-Client-IP", "10.0.0.1",
		"True-Client-IP", "10.0.0.1", "X-Real-IP", "10.0.0.1", "X_Forwarded_For", "10.0.0.1", "X_Forwarded_Host", "evil.example",
		"Forwarded", "for=10.0.0.1", "CF-Connecting-IP", "10.0.0.1"}
	ours := map[string]bool{"Forwarded": true, "X-Forwarded-Host": true, "X-Forwarded-Proto": true, "X-Forwarded-Prefix": true}
	check := func(how string) {
		t.Helper()
		s := app.last(t)
		for k, vs := range s.Header {
			if proto.IsClientOrigin(k) && !ours[k] {
				t.Errorf("%s: the app got %s: %q", how, k, vs)
			}
			if v := strings.Join(vs, ","); ours[k] && (strings.Contains(v, "10.0.0.1") || strings.Contains(v, "evil")) {
				t.Errorf("%s: the app got the client's value as %s: %q", how, k, vs)
			}
		}
	}
	plain(t, "GET", f.URL+"echo", "", sent...)
	check("a read through the forward")
	plain(t, "POST", f.URL+"echo", "x", sent...)
	check("a call through the forward")
	laptop.c.Must(t, "GET", "/v1/peers/studio/web/echo", nil, sent...)
	check("a read on /v1/peers")
}

// TestReplayOnlyThroughItsDoor (issue 63, D9): a call's recorded outcome
// is told again only through the door it came in by. Through a forward
// without a token, a repeat of a request id and body that a call made
// with the token used gets a conflict that names nothing of that call
// (not its answer, method, target or time), and the reverse; a repeat
// through the same door gets the recorded answer, replayed.
func TestReplayOnlyThroughItsDoor(t *testing.T) {
	laptop, _, app := seenPair(t, "web")
	f := forwardTo(t, laptop, "web", false)
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/web/secret-report", []byte("x"), "X-Delta-Request-Id", "d9-token")
	if r.Status != 200 || r.Outcome() != "answered" {
		t.Fatalf("the call with the token: %d %s", r.Status, r.Body)
	}
	n := app.count()
	resp, body := plain(t, "POST", f.URL+"secret-report", "x", "X-Delta-Request-Id", "d9-token")
	if resp.StatusCode != 409 || strings.Contains(body, "secret-report") || strings.Contains(body, "POST") || strings.Contains(body, `"Method"`) ||
		!strings.Contains(body, "another door") || !strings.Contains(body, "nothing was sent") {
		t.Errorf("the token's request id repeated through a forward: %d %s; want 409 naming nothing of it", resp.StatusCode, body)
	}
	// Through the forward, its own: replayed there, refused on the local API.
	if resp, body := plain(t, "POST", f.URL+"notes", "y", "X-Delta-Request-Id", "d9-forward"); resp.StatusCode != 200 {
		t.Fatalf("a call through the forward: %d %s", resp.StatusCode, body)
	}
	if resp, _ := plain(t, "POST", f.URL+"notes", "y", "X-Delta-Request-Id", "d9-forward"); resp.StatusCode != 200 || resp.Header.Get("X-Delta-Replayed") != "true" {
		t.Errorf("the forward's own call repeated through it: %d, replayed %q", resp.StatusCode, resp.Header.Get("X-Delta-Replayed"))
	}
	if r := laptop.c.Must(t, "POST", "/v1/peers/studio/web/notes", []byte("y"), "X-Delta-Request-Id", "d9-forward"); r.Status != 409 || strings.Contains(string(r.Body), "/notes") {
		t.Errorf("the forward's request id repeated on the local API: %d %s", r.Status, r.Body)
	}
	if app.count() != n+1 {
		t.Errorf("the app got %d calls, want the forward's one alone", app.count()-n)
	}
}
