package tailnet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// TestOfflinePeer: when the tailnet's map says studio is offline, laptop
// does not dial its tailnet road: a call pinned to it is refused at once
// with the fact and "nothing was sent"; status and the menu's source say
// offline with the time; the lan road is still used. Back online, the
// tailnet road is used again.
func TestOfflinePeer(t *testing.T) {
	l, laptop, studio, app := labPair(t)
	waitRoadUp(t, laptop, studio, "tailnet")
	st, err := studio.n.LocalClient().Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := time.Now().Add(-3 * time.Minute).Truncate(time.Second)
	if err := l.SetOnline(st.Self.PublicKey, false, seen); err != nil {
		t.Fatal(err)
	}
	gatewaytest.WaitFor(t, 30*time.Second, "laptop to see studio offline on the tailnet", func() bool {
		return strings.Contains(string(laptop.c.Must(t, "GET", "/v1/status", nil).Body), `"state": "offline"`)
	})
	status := string(laptop.c.Must(t, "GET", "/v1/status", nil).Body)
	if !strings.Contains(status, `"offline_since": "`+seen.UTC().Format(time.RFC3339)) {
		t.Errorf("status lacks offline_since %s: %s", seen.UTC().Format(time.RFC3339), status)
	}
	start := len(app.Seen())
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/off", []byte("x"), "X-Delta-Route", "tailnet", "X-Delta-Request-Id", "offline-1")
	if r.Outcome() != "unavailable" || !strings.Contains(r.Err.Detail, "studio has been offline on the tailnet since "+seen.Local().Format("15:04")+" (asleep or off)") ||
		!strings.HasSuffix(r.Err.Detail, "nothing was sent to studio") {
		t.Fatalf("a call pinned to the offline tailnet road: %d %s", r.Status, r.Body)
	}
	if c := laptop.c.GetCall(t, "offline-1", 0); len(c.Attempts) != 0 {
		t.Errorf("the offline road was dialled: %+v", c.Attempts)
	}
	// The lan road is not the tailnet's to say: still used.
	waitRoadUp(t, laptop, studio, "lan")
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/lan", []byte("x"))
	if r.Status != 201 || r.Header.Get("X-Delta-Route") != "lan" {
		t.Fatalf("unpinned call with studio offline on the tailnet: %d via %q %s", r.Status, r.Header.Get("X-Delta-Route"), r.Body)
	}
	if len(app.Seen()) != start+1 {
		t.Errorf("the app saw %d requests, want 1", len(app.Seen())-start)
	}
	snap, err := laptop.g.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range snap.Peers {
		for _, rd := range p.Roads {
			found = found || p.Name == "studio" && rd.Road == "tailnet" && rd.State == "offline" && rd.OfflineSince.Equal(seen)
		}
	}
	if !found {
		t.Errorf("the menu's snapshot does not say studio's tailnet road is offline: %+v", snap.Peers)
	}

	if err := l.SetOnline(st.Self.PublicKey, true, time.Time{}); err != nil {
		t.Fatal(err)
	}
	waitRoadUp(t, laptop, studio, "tailnet")
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/back", []byte("x"), "X-Delta-Route", "tailnet")
	if r.Status != 201 {
		t.Fatalf("a call over the tailnet road once studio is back: %d %s", r.Status, r.Body)
	}
}
