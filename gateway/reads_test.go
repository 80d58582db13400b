package gateway_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// TestReadCache: fresh answers are served without asking; when the peer
// cannot be reached, stored answers are served labelled stale, never ones
// marked no-store, no-cache or must-revalidate.
func TestReadCache(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	get := func(name, cc string, hdr ...string) *gatewaytest.Response {
		return laptop.c.Must(t, "GET", "/v1/peers/studio/notes/cache/"+name+"?cc="+url.QueryEscape(cc), nil, hdr...)
	}

	first := get("fresh", "max-age=60")
	if first.Status != 200 || first.Outcome() != "answered" || first.Header.Get("X-Delta-Route") != "lan" {
		t.Fatalf("first read: %d %q %s", first.Status, first.Outcome(), first.Body)
	}
	before := app.Requests()
	second := get("fresh", "max-age=60")
	if app.Requests() != before {
		t.Errorf("a fresh answer was asked for again")
	}
	if string(second.Body) != string(first.Body) || second.Outcome() != "answered" || second.Header.Get("Age") == "" {
		t.Errorf("cached read: %q %q Age %q", second.Body, second.Outcome(), second.Header.Get("Age"))
	}
	// The app asks not to be served from the cache.
	get("fresh", "max-age=60", "Cache-Control", "no-cache")
	if app.Requests() != before+1 {
		t.Errorf("Cache-Control: no-cache on the request was served from the cache")
	}
	// HEAD is carried too.
	if h := laptop.c.Must(t, "HEAD", "/v1/peers/studio/notes/cache/head", nil); h.Status != 200 || h.Outcome() != "answered" || len(h.Body) != 0 {
		t.Errorf("HEAD: %d %q %q", h.Status, h.Outcome(), h.Body)
	}

	for _, name := range []string{"stale-ok", "no-store", "no-cache", "must-revalidate"} {
		cc := map[string]string{"stale-ok": "max-age=0", "no-store": "no-store", "no-cache": "no-cache", "must-revalidate": "max-age=0, must-revalidate"}[name]
		if r := get(name, cc); r.Status != 200 {
			t.Fatalf("%s: %d", name, r.Status)
		}
	}

	// The peer goes away.
	studio.g.Close()
	stale := get("stale-ok", "max-age=0")
	if stale.Status != 200 || stale.Outcome() != "stale" || !strings.Contains(stale.Header.Get("X-Delta-Stale"), "studio") {
		t.Fatalf("stale read: %d %q X-Delta-Stale %q", stale.Status, stale.Outcome(), stale.Header.Get("X-Delta-Stale"))
	}
	if age, err := strconv.Atoi(stale.Header.Get("Age")); err != nil || age < 0 {
		t.Errorf("stale read has Age %q", stale.Header.Get("Age"))
	}
	if !strings.HasPrefix(string(stale.Body), "version ") {
		t.Errorf("stale body %q", stale.Body)
	}
	for _, name := range []string{"no-store", "no-cache", "must-revalidate", "never-read"} {
		r := get(name, "")
		if r.Status != 503 || r.Outcome() != "unavailable" || !strings.Contains(r.Err.Detail, "studio") {
			t.Errorf("%s with the peer gone: %d %q %q; want unavailable naming studio", name, r.Status, r.Outcome(), r.Err.Detail)
		}
	}
	st := laptop.c.Must(t, "GET", "/v1/status", nil)
	if !strings.Contains(string(st.Body), `"stale": 1`) || !strings.Contains(string(st.Body), `"cache_hits": 1`) {
		t.Errorf("status does not count the stale read and the cache hit: %s", st.Body)
	}
}

// TestReadAppFailures: the owner app down or slow is the owner's answer,
// not the road's: no fallback, no stale.
func TestReadAppFailures(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	studio.register(t, "gone", "http://"+gatewaytest.DeadAddr(t))
	r := laptop.c.Must(t, "GET", "/v1/peers/studio/gone/x", nil)
	if r.Status != 503 || r.Outcome() != "unavailable" || !strings.Contains(r.Err.Detail, "app gone on studio is not listening") {
		t.Errorf("app down: %d %q %q", r.Status, r.Outcome(), r.Err.Detail)
	}
	r = laptop.c.Must(t, "GET", "/v1/peers/studio/notes/hold/slow", nil, "X-Delta-Timeout", "0.2")
	if r.Status != 504 || r.Outcome() != "timeout" || !strings.Contains(r.Err.Detail, "did not answer within 200ms") {
		t.Errorf("app slow: %d %q %q", r.Status, r.Outcome(), r.Err.Detail)
	}
	app.Release("/hold/slow")
	st := laptop.c.Must(t, "GET", "/v1/status", nil)
	if !strings.Contains(string(st.Body), `"route_fallbacks": 0`) {
		t.Errorf("an app failure counted as a route fallback: %s", st.Body)
	}
}
