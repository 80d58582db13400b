package gateway_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// TestTwoSendsApp: reads of an app that writes its head and its body in
// two sends, on a connection kept alive between the owner Delta and the
// app, arrive whole through two Deltas, each the answer to its own
// request (issue 40: each used to wait 40 ms for a delayed
// acknowledgement; BenchmarkTwoSends measures it, as a ratio to a fresh
// connection straight to the app).
func TestTwoSendsApp(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartSendsApp(t) // head and body in two sends
	studio.register(t, "py", app.URL)
	for i := range 10 {
		path := "/item/" + strconv.Itoa(i)
		r := laptop.c.Must(t, "GET", "/v1/peers/studio/py"+path, nil, "Cache-Control", "no-store")
		if r.Status != 200 || string(r.Body) != "answer to "+path || r.Outcome() != "answered" {
			t.Fatalf("read %d: %d %q %q", i, r.Status, r.Outcome(), r.Body)
		}
	}
	if app.Reused() == 0 {
		t.Errorf("the owner Delta never reused its connection to the app: the case this test is for did not arise")
	}
}

// BenchmarkTwoSends: a 1 KiB read of an app that answers in two sends,
// through two Deltas (the owner's connection to the app kept alive), next
// to a fresh connection straight to the app (curl's case, which a fresh
// connection's quick acknowledgements spare) and a kept one, in the same
// run. The macOS release workflow runs it too: macOS has no per-socket
// TCP_QUICKACK, so its figures say what a Mac's owner Delta pays.
func BenchmarkTwoSends(b *testing.B) {
	laptop, studio := pair(b, func(n *node) { n.cfg.Logger = nil })
	app := gatewaytest.StartSendsApp(b)
	studio.register(b, "py", app.URL)
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	pooled := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.Run("direct-fresh", func(b *testing.B) {
		for b.Loop() {
			get(b, fresh, app.URL+"/r", "")
		}
	})
	// What a client that keeps its connection to the app pays (the case
	// TCP_QUICKACK removes on Linux; on a Mac this shows whether its
	// delayed acknowledgement holds the body at all).
	b.Run("direct-kept", func(b *testing.B) {
		for b.Loop() {
			get(b, pooled, app.URL+"/r", "")
		}
	})
	b.Run("two-deltas", func(b *testing.B) {
		for b.Loop() {
			get(b, pooled, laptop.c.URL+"/v1/peers/studio/py/r", laptop.c.Token)
		}
	})
}
