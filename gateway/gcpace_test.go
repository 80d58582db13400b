package gateway_test

import (
	"context"
	"testing"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/net/gcpace"
)

// TestCollectorPacedByAppRequests: an app's read marks Delta busy
// for the collector's pace (gcpace); its own traffic and the local API's
// other requests do not, or an idle Delta with a peer, whose road is
// checked every 30 s, would never be paced as quiet.
func TestCollectorPacedByAppRequests(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	gcpace.Settle()
	gcpace.Settle() // whatever came before: settled

	for _, path := range []string{localapi.StatusPath, localapi.CallsPath} {
		if r := laptop.c.Must(t, "GET", path, nil); r.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
		}
	}
	if _, err := laptop.g.Ping(context.Background(), "studio"); err != nil { // at studio's door, as a road's check
		t.Fatalf("ping studio: %v", err)
	}
	if gcpace.Settle() {
		t.Fatal("the local API's status and calls, or a ping at the peer's door, counted as an app's request")
	}
	if r := laptop.c.Must(t, "GET", "/v1/peers/studio/notes/paced", nil); r.Status != 200 || r.Outcome() != "answered" {
		t.Fatalf("read: %d %q %s", r.Status, r.Outcome(), r.Body)
	}
	if !gcpace.Settle() {
		t.Fatal("an app's read did not count")
	}
	if gcpace.Settle() {
		t.Fatal("Settle said served twice for one read")
	}
	studio.g.Close() // the local API's part alone: the read goes no further
	laptop.c.Do("GET", "/v1/peers/studio/notes/paced", nil)
	if !gcpace.Settle() {
		t.Fatal("an app's read at the local API, its peer gone, did not count")
	}
}
