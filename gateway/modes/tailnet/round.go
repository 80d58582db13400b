package tailnet

import (
	"context"
	"net/http"
	"time"

	"tailscale.com/tailcfg"

	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/direct"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// The tailnet's upkeep in rounds. While a tailnet session to a peer has
// carried anything in the last 45 s, Tailscale pings the peer every 3 s
// (magicsock's heartbeat), both ways; probed every 30 s, that was a third
// to a half of what an idle Delta with the tailnet up spent. So the upkeep a Delta sends a peer over the
// tailnet (the road's probe, hello, the lan ticket, the read ticket) goes
// together, once a round, and each Delta's round rides along with its
// peer's:
//
//   - the tailnet road is probed every roads.Tailnet.BeliefLifetime() (5
//     min) while it carries nothing (routes.Book);
//   - a probe that answers takes along what would fall due on its own
//     before the next one (rideAlong): hello, the lan ticket, the read
//     ticket;
//   - a peer's upkeep arriving at this tailnet door brings this
//     Delta's round forward (peerUpkeep) when its own last check is older
//     than roundSlack, so that the two Deltas' rounds fall together.
//
// docs/protocol.md §4, "The tailnet road's belief", says what it changes.
const roundEvery = 5 * time.Minute // roads.Tailnet.BeliefLifetime()

// roundSlack: a peer's upkeep brings this Delta's round forward when its
// own last check of the road is older than this (a variable for tests).
var roundSlack = time.Minute

// rideAlong does, after the tailnet road to peer answered a probe, the
// upkeep that would otherwise fall due on its own before the next round:
// hello older than roundEvery-roundSlack, the lan ticket held if it
// would be renewed (renewAhead) before the next round, and the read
// ticket held if the direct-read keeper would renew it (direct.Renew)
// before then; one fetched moments ago (by the keeper, as the round
// began) is not fetched again. A failure here is not the road's: each is
// asked again when it falls due. Then the tailnet's status is re-read
// (discover), for the path the probe took, and Config.AfterRound is told.
func (n *Node) rideAlong(ctx context.Context, peer string) {
	n.mu.Lock()
	p := n.peers[peer]
	if p == nil {
		n.mu.Unlock()
		return
	}
	now := time.Now()
	next := now.Add(roundEvery)
	helloDue := !p.fetching && now.Sub(p.helloAt) >= roundEvery-roundSlack
	if helloDue {
		p.fetching = true
	}
	lan, lanHeld := n.tickets[peer]
	read, readHeld := n.readTickets[peer]
	n.mu.Unlock()
	if helloDue {
		n.fetchHello(p)
	}
	if lanHeld && lan.exp.Sub(next) < renewAhead {
		n.Ticket(ctx, peer, true)
	}
	if readHeld && read.exp.Sub(next) < direct.Renew-roundSlack {
		n.fetchReadTicket(ctx, peer, p)
	}
	n.rescan() // the tailnet's path to peer, as the probe found it
	if n.cfg.AfterRound != nil {
		n.cfg.AfterRound()
	}
}

// peerUpkeep is a peer's upkeep (a probe, hello, a ticket) arriving at
// this tailnet door from node: this Delta's own round toward it is
// brought forward when its tailnet road was last checked more than
// roundSlack ago; and a node that has not answered this Delta's hello is
// a Delta now, asked for its hello at once, whatever its failures so far
// (helloRetry).
func (n *Node) peerUpkeep(r *http.Request, node string) {
	switch r.URL.Path {
	case proto.PathPing, proto.PathHello, proto.PathTickets:
	default:
		return
	}
	n.mu.Lock()
	name, ask := "", false
	if p := n.byNode[tailcfg.StableNodeID(node)]; p != nil {
		if n.peers[p.name] == p {
			name = p.name
		}
		if p.hello == nil && p.fails > 0 {
			p.fails, p.refused, ask = 0, false, true
		}
	}
	n.mu.Unlock()
	if ask {
		n.rescan()
	}
	if name != "" && n.book.Recheck(name, roads.Tailnet, roundSlack) {
		n.router.Kick()
	}
}
