package tailnet

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"tailscale.com/client/local"

	"github.com/delta-roads/delta/gateway/roads"
)

// LocalClient is tsnet's local API client (for tests).
func (n *Node) LocalClient() *local.Client { return n.lc }

// Dial connects to addr over the tailnet (for tests).
func (n *Node) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return n.srv.Dial(ctx, network, addr)
}

// Certificate is this computer's TLS certificate (for tests).
func (n *Node) Certificate() tls.Certificate { return n.cert }

// RoundEvery is how often the tailnet's upkeep goes round (for tests).
const RoundEvery = roundEvery

// AgeUpkeep makes peer's hello old and the tickets held for it (lan and
// read) expire in 3 min, as if the next round were due to renew them, but
// not yet a lan probe or the direct-read keeper (for tests).
func (n *Node) AgeUpkeep(peer string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p := n.peers[peer]; p != nil {
		p.helloAt = time.Now().Add(-roundEvery)
	}
	soon := time.Now().Add(3 * time.Minute)
	for _, held := range []map[string]heldTicket{n.tickets, n.readTickets} {
		if t, ok := held[peer]; ok {
			t.exp = soon
			held[peer] = t
		}
	}
}

// HeldTickets says when the lan and read tickets held for peer expire
// (zero for none held) (for tests).
func (n *Node) HeldTickets(peer string) (lan, read time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.tickets[peer].exp, n.readTickets[peer].exp
}

// RoundNow has the tailnet road to peer probed now, as its round falling
// due would; false if it is not believed up (for tests).
func (n *Node) RoundNow(peer string) bool {
	asked := n.book.Recheck(peer, roads.Tailnet, 0)
	n.router.Kick()
	return asked
}

// SetRoundSlack sets roundSlack until restore is called (for tests).
func SetRoundSlack(d time.Duration) (restore func()) {
	old := roundSlack
	roundSlack = d
	return func() { roundSlack = old }
}

// Rounds is how many probes of the tailnet road this Delta has sent (for
// tests).
func (n *Node) Rounds() uint64 { return n.upkeep.rounds.Load() }

// RoundDue says whether the route book has the tailnet road to peer due
// for a probe now (for tests).
func (n *Node) RoundDue(peer string) bool {
	due, _ := n.book.Due()
	for _, c := range due {
		if c.Peer == peer && c.Road == roads.Tailnet {
			return true
		}
	}
	return false
}

// SetHelloRetryUnit makes hello's retries (1, 2, 4 … units, at most 30 of
// them after a door's refusal, 1,800 otherwise) count in d instead of
// seconds, until the returned func (for tests).
func SetHelloRetryUnit(d time.Duration) (restore func()) {
	was := helloRetryUnit
	helloRetryUnit = d
	return func() { helloRetryUnit = was }
}
