package tailnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"delta/gateway/pintls"
	"delta/gateway/roads"
)

// Known implements roads.Router: a peer is known once it answered hello.
func (n *Node) Known(peer string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.peers[peer]
	return ok
}

// Choose implements roads.Router: thunderbolt or lan if it answered in the
// last 30 s, else the tailnet. A pinned road is given as it is.
func (n *Node) Choose(_ context.Context, peer string, pin roads.Road, exclude ...roads.Road) (roads.Candidate, error) {
	n.mu.Lock()
	p, ok := n.peers[peer]
	if !ok {
		n.mu.Unlock()
		return roads.Candidate{}, fmt.Errorf("%w %q", roads.ErrUnknownPeer, peer)
	}
	now := time.Now()
	order := []roads.Road{pin}
	if pin == "" {
		order = nil
		for _, r := range []roads.Road{roads.Thunderbolt, roads.LAN} {
			if rs, ok := p.local[r]; ok && rs.believedUp(now) {
				order = append(order, r)
			}
		}
		order = append(order, roads.Tailnet)
	}
	n.mu.Unlock()
	for _, r := range order {
		if slices.Contains(exclude, r) {
			continue
		}
		if c, err := n.candidate(peer, r); err == nil {
			return c, nil
		} else if pin != "" {
			return roads.Candidate{}, err
		}
	}
	if pin != "" {
		return roads.Candidate{}, fmt.Errorf("%w: the %s road to %s was tried already", roads.ErrNoRoad, pin, peer)
	}
	return roads.Candidate{}, fmt.Errorf("%w: every road to %s has been tried", roads.ErrNoRoad, peer)
}

// candidate builds the candidate for one road to a named peer.
func (n *Node) candidate(peer string, road roads.Road) (roads.Candidate, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, ok := n.peers[peer]
	if !ok {
		return roads.Candidate{}, fmt.Errorf("%w %q", roads.ErrUnknownPeer, peer)
	}
	if road == roads.Tailnet {
		addr := p.tsAddr
		return roads.Candidate{Peer: peer, Road: road, Address: addr, Dial: func(ctx context.Context) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, road.ConnectTimeout())
			defer cancel()
			c, err := n.srv.Dial(ctx, "tcp", addr)
			if err != nil && ctx.Err() != nil {
				return nil, fmt.Errorf("connect to %s via the tailnet (%s) timed out after %.0f s: %w", peer, addr, road.ConnectTimeout().Seconds(), err)
			}
			return c, err
		}}, nil
	}
	rs, ok := p.local[road]
	if !ok {
		return roads.Candidate{}, fmt.Errorf("%w: %s has no %s road (its hello names none)", roads.ErrNoRoad, peer, road)
	}
	return roads.Candidate{Peer: peer, Road: road, Address: rs.addr, Interface: rs.iface, NeedsTicket: true,
		Dial: func(ctx context.Context) (net.Conn, error) { return n.dialLocal(ctx, p, road) }}, nil
}

// dialLocal connects to a peer's lan or thunderbolt address and completes a
// TLS handshake that accepts only the certificate pinned in its hello. On a
// mismatch it fetches hello once more over the tailnet: if the pin (or the
// address) changed, it dials again with the new one; otherwise the
// mismatch is the answer. Nothing is written to the connection it returns.
func (n *Node) dialLocal(ctx context.Context, p *peer, road roads.Road) (net.Conn, error) {
	for try := 0; ; try++ {
		n.mu.Lock()
		rs, ok := p.local[road]
		var addr, pin string
		if ok && p.hello != nil {
			addr, pin = rs.addr, p.hello.Pin
		}
		n.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("%s has no %s road any more", p.name, road)
		}
		d := net.Dialer{Timeout: road.ConnectTimeout()}
		raw, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
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
		h, herr := n.getHello(ctx, p)
		if herr != nil {
			n.log.Warn("certificate pin mismatch, and hello could not be fetched again", "peer", p.name, "address", addr, "pinned", mm.Want, "presented", mm.Got, "err", herr)
			return nil, mm
		}
		n.mu.Lock()
		n.applyHelloLocked(p, h)
		p.helloAt = time.Now()
		same := h.Pin == pin && p.local[road] != nil && p.local[road].addr == addr
		n.mu.Unlock()
		if same {
			n.log.Warn("certificate pin mismatch: the certificate at the peer's address is not the one it publishes over the tailnet", "peer", p.name, "address", addr, "pinned", mm.Want, "presented", mm.Got)
			return nil, mm
		}
		n.log.Info("peer's certificate or address changed; dialling again with its new hello", "peer", p.name, "road", road)
	}
}

// Report implements roads.Router.
func (n *Node) Report(c roads.Candidate, rtt time.Duration, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, ok := n.peers[c.Peer]
	if !ok {
		return
	}
	rs := &p.tailnet
	if c.Road != roads.Tailnet {
		if rs, ok = p.local[c.Road]; !ok {
			return
		}
	}
	rs.checkedAt = time.Now()
	if err != nil {
		rs.lastErr, rs.downAt = err.Error(), time.Now()
		return
	}
	rs.upAt, rs.rtt = time.Now(), rtt
}

// Invalidate implements roads.Router.
func (n *Node) Invalidate(peer string, road roads.Road, reason error) {
	n.log.Info(fmt.Sprintf("route to %s via %s dropped: %v", peer, road, reason))
	n.mu.Lock()
	defer n.mu.Unlock()
	if p, ok := n.peers[peer]; ok {
		if rs, ok := p.local[road]; ok {
			rs.upAt, rs.downAt, rs.lastErr = time.Time{}, time.Now(), reason.Error()
		}
	}
}

// Peers implements roads.Router.
func (n *Node) Peers() []roads.PeerStatus {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	names := make([]string, 0, len(n.peers))
	for name := range n.peers {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []roads.PeerStatus
	for _, name := range names {
		p := n.peers[name]
		ps := roads.PeerStatus{Name: name}
		for _, r := range []roads.Road{roads.Thunderbolt, roads.LAN} {
			if rs, ok := p.local[r]; ok {
				st := rs.status(r, now)
				if ps.Road == "" && st.State == "up" {
					ps.Road = r
				}
				ps.Roads = append(ps.Roads, st)
			}
		}
		st := p.tailnet.status(roads.Tailnet, now)
		if !p.online {
			st.State, st.LastError = "down", "offline according to the tailnet's control server"
		} else if st.State == "unknown" && p.hello != nil {
			st.State = "up"
		}
		if ps.Road == "" && st.State == "up" {
			ps.Road = roads.Tailnet
		}
		ps.Roads = append(ps.Roads, st)
		out = append(out, ps)
	}
	return out
}

func (r *roadState) status(road roads.Road, now time.Time) roads.RoadStatus {
	st := roads.RoadStatus{Road: road, Address: r.addr, Interface: r.iface, State: "unknown", LastError: r.lastErr,
		CheckedAt: r.checkedAt, RTTMillis: float64(r.rtt.Microseconds()) / 1000}
	switch {
	case r.believedUp(now):
		st.State = "up"
	case r.downAt.After(r.upAt):
		st.State = "down"
	}
	return st
}
