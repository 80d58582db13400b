package gateway

import (
	"testing"

	"github.com/delta-roads/delta/gateway/net/h1"
)

// TestClientIdleBelowTheDoor: Delta's pooled client (h1.IdleTimeout, both
// of its pools: peer reads and owner-to-app reads) gives an idle connection
// up before a Delta door closes it (doorLimits.Idle), so that a request is
// not written into a connection the door is closing (review turn 4, §2 gap
// 4: both were 90 s).
func TestClientIdleBelowTheDoor(t *testing.T) {
	if h1.IdleTimeout >= doorLimits.Idle {
		t.Fatalf("the client keeps idle connections %s, the door %s: the client must give up first", h1.IdleTimeout, doorLimits.Idle)
	}
}
