package tailnet_test

import (
	"fmt"
	"testing"
)

// TestManyTailnetCalls: 2,000 calls back to back over the tailnet road, each
// on a tailnet connection of its own, are all answered. Before the owner's
// netstack gave up TIME-WAIT (timewait.go), one connect in a few hundred
// reused a port the owner still held in TIME-WAIT, its SYN was dropped, and
// the call came back unavailable after the 8 s connect timeout (call 242 of
// BenchmarkRoads/call/tailnet with the old 60 s).
func TestManyTailnetCalls(t *testing.T) {
	_, laptop, _, _ := labPair(t)
	const calls = 2000
	for i := range calls {
		id := fmt.Sprintf("many-%d", i)
		r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/"+id, []byte(id), "X-Delta-Route", "tailnet", "X-Delta-Request-Id", id)
		if r.Status != 201 || r.Header.Get("X-Delta-Route") != "tailnet" || string(r.Body) != id {
			t.Fatalf("call %d of %d: %d via %q: %.300s", i+1, calls, r.Status, r.Header.Get("X-Delta-Route"), r.Body)
		}
	}
}
