package gateway

import "github.com/delta-roads/delta/gateway/journal"

// Journal is the gateway's journal, for this package's tests.
func (g *Gateway) Journal() *journal.DB { return g.db }

// PeerAddr is the (first) peer API listener's address, for this package's tests.
func (g *Gateway) PeerAddr() string { return g.peerLns[0].Addr().String() }
