package gateway

import (
	"github.com/delta-roads/delta/gateway/face/desk"
	"github.com/delta-roads/delta/gateway/state/journal"
)

// Journal is the gateway's journal, for this package's tests.
func (g *Gateway) Journal() *journal.DB { return g.db }

// PeerAddr is the (first) peer API listener's address, for this package's tests.
func (g *Gateway) PeerAddr() string { return g.peerLns[0].Addr().String() }

// CapLists caps what a snapshot lists (unsettled calls, calls settled
// recently, receipts) for a test, until it ends.
func CapLists(t interface{ Cleanup(func()) }, unsettled, settled, receipts int) {
	t.Cleanup(desk.CapLists(unsettled, settled, receipts))
}
