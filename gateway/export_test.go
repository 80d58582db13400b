package gateway

import "github.com/delta-roads/delta/gateway/journal"

// Journal is the gateway's journal, for this package's tests.
func (g *Gateway) Journal() *journal.DB { return g.db }
