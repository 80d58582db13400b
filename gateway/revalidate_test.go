package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// validatingApp serves /{name}?cc=… with a body of its current version, an
// ETag (or only a Last-Modified, for names starting with "lm"), and
// answers 304 to a request whose validator still matches; it records the
// conditional headers each request came with and the body bytes it sent.
type validatingApp struct {
	mu      sync.Mutex
	version int
	seen    []string // If-None-Match|If-Modified-Since of each request
	sent    int      // body bytes written
}

var lastModified = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func (a *validatingApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, r.Header.Get("If-None-Match")+"|"+r.Header.Get("If-Modified-Since"))
	body := fmt.Sprintf("version %d of %s: %s", a.version, r.URL.Path, strings.Repeat("x", 4096))
	etag := fmt.Sprintf(`"v%d"`, a.version)
	lm := lastModified.Add(time.Duration(a.version) * time.Hour)
	w.Header().Set("Cache-Control", r.URL.Query().Get("cc"))
	w.Header().Set("X-Served", fmt.Sprint(len(a.seen)))
	if strings.HasPrefix(r.URL.Path, "/lm") {
		w.Header().Set("Last-Modified", lm.Format(http.TimeFormat))
		if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && !lm.After(ims) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	} else {
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	n, _ := w.Write([]byte(body))
	a.sent += n
}

func (a *validatingApp) last() (seen string, sent int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen[len(a.seen)-1], a.sent
}

// TestRevalidation: a stored answer that is no longer fresh is asked for
// with its validators; the owner app's 304 serves it again, whole and
// freshened with the 304's fields, without its body crossing the road
// (RFC 9111 §4.3). A changed answer replaces it; an app's own conditional
// request gets the owner's 304 itself; a must-revalidate answer is
// revalidated before each use and never served stale; a no-cache request
// is satisfied by a successful revalidation.
func TestRevalidation(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, nil)
	app := &validatingApp{version: 1}
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	studio.register(t, "docs", srv.URL)
	get := func(path, cc string, hdr ...string) (status int, body, outcome string, h http.Header) {
		r := laptop.c.Must(t, "GET", "/v1/peers/studio/docs"+path+"?cc="+url.QueryEscape(cc), nil, hdr...)
		return r.Status, string(r.Body), r.Outcome(), r.Header
	}

	// The first read: the whole answer, asked without validators.
	status, body, _, _ := get("/doc", "max-age=0")
	seen, sent := app.last()
	if status != 200 || !strings.HasPrefix(body, "version 1 of /doc") || seen != "|" {
		t.Fatalf("first read: %d %.20q, the app saw validators %q", status, body, seen)
	}
	// Again: asked with If-None-Match; the 304 serves the stored answer.
	status, body2, outcome, h := get("/doc", "max-age=0")
	seen, sent2 := app.last()
	if seen != `"v1"|` {
		t.Errorf("the second read reached the app with validators %q, want If-None-Match \"v1\"", seen)
	}
	if status != 200 || body2 != body || outcome != "answered" || h.Get("X-Delta-Route") != "lan" {
		t.Errorf("revalidated read: %d %q route %q, body the same: %v", status, outcome, h.Get("X-Delta-Route"), body2 == body)
	}
	if sent2 != sent {
		t.Errorf("the app sent %d more body bytes for a revalidated read", sent2-sent)
	}
	if h.Get("X-Served") != "2" || h.Get("ETag") != `"v1"` || h.Get("Age") != "0" {
		t.Errorf("the stored answer was not freshened with the 304's fields: X-Served %q ETag %q Age %q", h.Get("X-Served"), h.Get("ETag"), h.Get("Age"))
	}
	st := laptop.c.Must(t, "GET", "/v1/status", nil)
	if !strings.Contains(string(st.Body), `"cache_revalidated": 1`) {
		t.Errorf("status does not count one revalidation: %s", st.Body)
	}

	// The answer changes: the new one replaces the stored one.
	app.mu.Lock()
	app.version = 2
	app.mu.Unlock()
	if _, body, _, _ := get("/doc", "max-age=0"); !strings.HasPrefix(body, "version 2 of /doc") {
		t.Errorf("after a change: %.20q", body)
	}
	if status, body, _, _ := get("/doc", "max-age=0"); status != 200 || !strings.HasPrefix(body, "version 2 of /doc") {
		t.Errorf("the changed answer revalidated: %d %.20q", status, body)
	}
	if seen, _ := app.last(); seen != `"v2"|` {
		t.Errorf("the changed answer was revalidated with %q, want \"v2\"", seen)
	}
	// An app's own conditional request: its validators go as they are,
	// and the owner's 304 is its answer.
	if status, body, outcome, _ := get("/doc", "max-age=0", "If-None-Match", `"v2"`); status != 304 || body != "" || outcome != "answered" {
		t.Errorf("the app's own If-None-Match: %d %q %q, want the owner's 304", status, outcome, body)
	}
	// Only a Last-Modified: revalidated with If-Modified-Since.
	get("/lm", "no-cache")
	if status, body, _, _ := get("/lm", "no-cache"); status != 200 || !strings.HasPrefix(body, "version 2 of /lm") {
		t.Errorf("a no-cache answer revalidated by date: %d %.20q", status, body)
	}
	if seen, _ := app.last(); seen != "|"+lastModified.Add(2*time.Hour).Format(http.TimeFormat) {
		t.Errorf("revalidated with %q, want If-Modified-Since of its Last-Modified", seen)
	}
	// The app asks for a fresh answer (no-cache): a revalidation is one.
	if status, _, _, _ := get("/doc", "max-age=60"); status != 200 {
		t.Fatal(status)
	}
	if status, body, _, _ := get("/doc", "max-age=60", "Cache-Control", "no-cache"); status != 200 || !strings.HasPrefix(body, "version 2 of /doc") {
		t.Errorf("no-cache request: %d %.20q", status, body)
	}
	if seen, _ := app.last(); seen != `"v2"|` {
		t.Errorf("a no-cache request reached the app with %q, want it revalidated", seen)
	}

	// must-revalidate: revalidated before each use...
	get("/mr", "max-age=0, must-revalidate")
	if status, _, _, _ := get("/mr", "max-age=0, must-revalidate"); status != 200 {
		t.Fatal(status)
	}
	if seen, _ := app.last(); seen != `"v2"|` {
		t.Errorf("a must-revalidate answer was used with %q, want it revalidated", seen)
	}
	// ...and never served stale when the owner cannot be asked.
	studio.g.Close()
	if status, _, outcome, _ := get("/mr", "max-age=0, must-revalidate"); status != 503 || outcome != "unavailable" {
		t.Errorf("a must-revalidate answer with the peer gone: %d %q, want unavailable", status, outcome)
	}
}
