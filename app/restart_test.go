package main

import (
	"strings"
	"testing"

	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/tailnet/tailnettest"
)

// TestRestartBeforePeerIsFound: a Delta that just restarted, whose peer is
// not found again yet (studio is down, so discovery cannot find it), still
// answers from its journal: a re-send of a journaled id gets its recorded
// outcome, another body under that id 409; a fresh call is "no road to
// studio yet", unavailable, never "not one of this computer's peers"; a
// name that never was a peer is 404. When studio is back, laptop finds it
// again and calls go through.
func TestRestartBeforePeerIsFound(t *testing.T) {
	c := tailnettest.Start(t, tailnettest.Options{})
	laptop, studio := tailnetPair(t, c)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	const id = "restart-1"
	if r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/items", []byte("first"), "X-Delta-Request-Id", id); r.Status != 201 {
		t.Fatalf("the first call: %d %s", r.Status, r.Body)
	}

	studio.kill(t)
	laptop.kill(t)
	laptop.start(t)

	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/items", []byte("first"), "X-Delta-Request-Id", id)
	if r.Status != 201 || r.Outcome() != "answered" || r.Header.Get("X-Delta-Replayed") != "true" || string(r.Body) != "first" {
		t.Errorf("a re-send of a journaled id right after the restart: %d %q replayed=%q %s; want the recorded answer",
			r.Status, r.Outcome(), r.Header.Get("X-Delta-Replayed"), r.Body)
	}
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/items", []byte("another"), "X-Delta-Request-Id", id)
	if r.Status != 409 || r.Outcome() != "conflict" {
		t.Errorf("another body under a journaled id: %d %q %s; want 409 conflict", r.Status, r.Outcome(), r.Body)
	}
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/items", []byte("fresh"), "X-Delta-Request-Id", "restart-2")
	if r.Status != 503 || r.Outcome() != "unavailable" || !strings.Contains(r.Err.Detail, "no road to studio yet (Delta started ") ||
		!strings.HasSuffix(r.Err.Detail, "nothing was sent to studio") {
		t.Errorf("a fresh call before studio is found again: %d %q %s; want 503 unavailable, no road yet, nothing was sent", r.Status, r.Outcome(), r.Body)
	}
	r = laptop.c.Must(t, "GET", "/v1/peers/studio/notes/items/1", nil)
	if r.Status != 503 || !strings.Contains(r.Err.Detail, "no road to studio yet") {
		t.Errorf("a read before studio is found again: %d %s", r.Status, r.Body)
	}
	r = laptop.c.Must(t, "POST", "/v1/peers/nobody/notes/items", []byte("x"), "X-Delta-Request-Id", "restart-3")
	if r.Status != 404 || r.Outcome() != "not_found" || !strings.Contains(r.Err.Detail, `"nobody" is not one of this computer's peers`) {
		t.Errorf("a call to a name that never was a peer: %d %s", r.Status, r.Body)
	}
	found := false
	for _, p := range laptop.status(t).Peers {
		found = found || p.Name == "studio"
	}
	if !found {
		t.Errorf("status does not list studio, remembered from before the restart")
	}
	if n := app.RequestsFor(id); n != 1 {
		t.Errorf("the owner app saw the call %d times, want 1", n)
	}

	studio.start(t)
	laptop.waitPeer(t, "studio")
	if r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/items", []byte("back"), "X-Delta-Request-Id", "restart-4"); r.Status != 201 {
		t.Errorf("a call once studio is found again: %d %s", r.Status, r.Body)
	}
}
