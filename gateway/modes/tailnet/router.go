package tailnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/api/roadfacts"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/net/rawsock"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/netwatch"
)

// Known implements roads.Router: a peer is known once it answered hello,
// and from the start when it had answered before (peers.json).
func (n *Node) Known(peer string) bool {
	if n.book.Known(peer) {
		return true
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.remembered[peer]
	return ok
}

// Choose implements roads.Router through the route book: a pinned road as
// it is; otherwise the best usable road, with the others to race after the
// stagger. A remembered peer not found again yet has no road yet
// (roads.NotYetError).
func (n *Node) Choose(ctx context.Context, peer string, pin roads.Road, exclude ...roads.Road) (roads.Candidate, error) {
	c, err := n.router.Choose(ctx, peer, pin, exclude...)
	if errors.Is(err, roads.ErrUnknownPeer) && n.Known(peer) {
		return roads.Candidate{}, &roads.NotYetError{Peer: peer, Started: n.started, Now: time.Now()}
	}
	if err != nil && pin == "" && len(exclude) == 0 {
		// Every road refused: wake the peer if it allows it.
		return roads.Candidate{}, n.maybeWake(peer, err)
	}
	return c, err
}

// AnsweredSince implements roads.Answerer.
func (n *Node) AnsweredSince(peer string, road roads.Road, t time.Time) bool {
	return n.router.AnsweredSince(peer, road, t)
}

// Report implements roads.Router.
func (n *Node) Report(c roads.Candidate, rtt time.Duration, err error) { n.router.Report(c, rtt, err) }

// Invalidate implements roads.Router (routes.Router.Invalidate: a road
// dropped on evidence is told as roads.RoadLost).
func (n *Node) Invalidate(peer string, road roads.Road, reason error) {
	n.router.Invalidate(peer, road, reason)
}

// Suspect implements roads.Suspecter (routes.Router.Suspect).
func (n *Node) Suspect(peer string, road roads.Road, why string) { n.router.Suspect(peer, road, why) }

// LostRace implements roads.RaceLoser (routes.Router.LostRace).
func (n *Node) LostRace(c roads.Candidate) { n.router.LostRace(c) }

// Peers implements roads.Router: the route book's peers, then the
// remembered ones not found again yet.
func (n *Node) Peers() []localapi.PeerStatus {
	ps := n.book.Peers()
	found := map[string]bool{}
	for _, p := range ps {
		found[p.Name] = true
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := range ps {
		p := n.peers[ps[i].Name]
		if p == nil {
			continue
		}
		for j := range ps[i].Roads {
			if ps[i].Roads[j].Road == string(roads.Tailnet) {
				ps[i].Roads[j].Path = TailnetPath(p.curAddr, p.relay)
			}
		}
	}
	return append(ps, n.rememberedStatusLocked(found)...)
}

// TailnetPath says how the tailnet reaches a peer, from tsnet's peer status:
// "direct 192.168.1.20:41641", "relayed through DERP fra", or "" before
// tsnet knows.
func TailnetPath(curAddr, relay string) string {
	switch {
	case curAddr != "":
		return "direct " + curAddr
	case relay != "":
		return "relayed through DERP " + relay
	}
	return ""
}

// Changed implements roads.Watchable: it closes at the next change of the
// route book (a road's state or round trip, a peer found or gone, the
// login state).
func (n *Node) Changed() <-chan struct{} { return n.book.Changed() }

// StateChanged implements roads.StateWatchable (routes.Book.StateChanged):
// the menu follows the roads with it as it follows the journal.
func (n *Node) StateChanged() <-chan struct{} { return n.book.StateChanged() }

// Won counts a race won by road.
func (n *Node) Won(road roads.Road) { n.book.Won(road) }

// RouteCounters are the route book's counts (for status).
func (n *Node) RouteCounters() localapi.RouteCounters {
	c := n.book.Counters()
	c.Upkeep = n.upkeep.counters()
	return c
}

// candidatesLocked are a named peer's roads: the tailnet, and each lan or
// thunderbolt address of its hello that a running local interface of the
// same road reaches, bound to that interface (loopback addresses, in
// tests, need none).
func (n *Node) candidatesLocked(p *peer) []roads.Candidate {
	name, tsAddr := p.name, p.tsAddr
	tailnet := roads.Tailnet
	cands := []roads.Candidate{{Peer: name, Road: tailnet, Address: tsAddr, Dial: func(ctx context.Context) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, tailnet.ConnectTimeout())
		defer cancel()
		c, err := n.srv.Dial(ctx, "tcp", tsAddr)
		if err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("connect to %s via the tailnet (%s) timed out after %.0f s: %w", name, tsAddr, tailnet.ConnectTimeout().Seconds(), ctx.Err())
		}
		return meterConn(ctx, c), err
	}}}
	for _, hr := range p.hello.Roads {
		if !hr.Road.Local() {
			continue
		}
		ap, err := netip.ParseAddrPort(hr.Address)
		if err != nil {
			continue
		}
		iface, ok := localRoad(n.ifaces, hr.Road, ap.Addr())
		if !ok {
			continue
		}
		road, addr := hr.Road, hr.Address
		cands = append(cands, roads.Candidate{Peer: name, Road: road, Address: addr, Interface: iface, NeedsTicket: true,
			Dial: func(ctx context.Context) (net.Conn, error) { return n.dialLocal(ctx, p, road, addr, iface) }})
	}
	return cands
}

// localRoad decides whether a peer's lan or thunderbolt address from its
// hello is a road from here, and the local interface it is bound to: not
// one of this computer's own addresses (two Macs with VirtualBox both have
// 192.168.56.1: a road to it leads back here), and only while a running
// interface of that road reaches it (not after a cable is pulled).
// Loopback addresses, in tests, need no interface.
func localRoad(st netwatch.State, road roads.Road, ip netip.Addr) (iface string, ok bool) {
	if ip.IsLoopback() {
		return "", true
	}
	if st.Owns(ip) {
		return "", false
	}
	iface = st.InterfaceFor(road, ip)
	return iface, iface != ""
}

// dialLocal connects to a peer's lan or thunderbolt address, bound to the
// local interface that reaches it, and completes a TLS handshake that
// accepts only the certificate pinned in its hello. On a mismatch it
// fetches hello once more over the tailnet (at most every 10 s): if the
// pin changed, it dials again with the new one; otherwise the mismatch is
// the answer. Nothing is written to the connection it returns.
func (n *Node) dialLocal(ctx context.Context, p *peer, road roads.Road, addr, iface string) (net.Conn, error) {
	for try := 0; ; try++ {
		n.mu.Lock()
		pin := ""
		if p.hello != nil {
			pin = p.hello.Pin
		}
		n.mu.Unlock()
		d := net.Dialer{Timeout: road.ConnectTimeout(), Control: roadfacts.BindControl(iface, road), KeepAliveConfig: roadfacts.KeepAlive}
		began := time.Now()
		raw, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			raw = rawsock.Wrap(raw)
		}
		raw = meterConn(ctx, raw)
		if err != nil {
			if netwatch.LocalNetworkBlocked(runtime.GOOS, err, iface != "", time.Since(began)) {
				err = fmt.Errorf("%w (%w)", err, roads.ErrLocalNetwork)
			}
			if iface != "" {
				return nil, fmt.Errorf("connect to %s via %s (%s on %s): %w", p.name, road, addr, iface, err)
			}
			return nil, err
		}
		c, err := pintls.Handshake(ctx, raw, pin, &n.cert)
		var mm *pintls.MismatchError
		if !errors.As(err, &mm) || try > 0 {
			if err != nil {
				return nil, err
			}
			return c, nil
		}
		n.mu.Lock()
		recent := time.Since(p.refetchAt) < refetchEvery
		if !recent {
			p.refetchAt = time.Now()
		}
		n.mu.Unlock()
		if recent {
			n.log.Warn("certificate pin mismatch; hello was fetched again moments ago", "peer", p.name, "address", addr, "pinned", mm.Want, "presented", mm.Got)
			return nil, mm
		}
		h, _, herr := n.getHello(ctx, p)
		if herr != nil {
			n.log.Warn("certificate pin mismatch, and hello could not be fetched again", "peer", p.name, "address", addr, "pinned", mm.Want, "presented", mm.Got, "err", herr)
			return nil, mm
		}
		n.mu.Lock()
		n.applyHelloLocked(p, h)
		p.helloAt = time.Now()
		n.mu.Unlock()
		if h.Pin == pin {
			n.log.Warn("certificate pin mismatch: the certificate at the peer's address is not the one it publishes over the tailnet", "peer", p.name, "address", addr, "pinned", mm.Want, "presented", mm.Got)
			return nil, mm
		}
		n.log.Info("peer's certificate changed; dialling again with its new hello", "peer", p.name, "road", road)
	}
}

// The route book's extras, offered to the gateway.
var (
	_ roads.Router         = (*Node)(nil)
	_ roads.RaceCounter    = (*Node)(nil)
	_ roads.Counted        = (*Node)(nil)
	_ roads.Watchable      = (*Node)(nil)
	_ roads.StateWatchable = (*Node)(nil)
	_ roads.Answerer       = (*Node)(nil)
	_ roads.Suspecter      = (*Node)(nil)
	_ roads.RaceLoser      = (*Node)(nil)
)
