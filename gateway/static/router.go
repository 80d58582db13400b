package static

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/roads"
)

// Router is a roads.Router over a fixed list of peers, dialled over plain TCP.
// It prefers roads in the order of roads.All and keeps what it last learned of
// each road for status. It does not hold down; while a road is not known to
// be up, Probe connects to it every ProbeEvery, and a road that answers
// again (by a probe or by a use) is told as roads.RoadUp, so that the
// reconciler asks that peer about its unknown calls at once.
type Router struct {
	log    *slog.Logger
	events chan roads.Event

	mu      sync.Mutex
	peers   map[string]*staticPeer
	order   []string
	changed roads.Signal
}

// ProbeEvery is how often Probe connects to a road not known to be up.
const ProbeEvery = 2 * time.Second

// Events implements roads.EventSource.
func (s *Router) Events() <-chan roads.Event { return s.events }

// tellUp tells that a road to peer answered after it was down or not yet
// seen. It never blocks: a full channel already holds news to act on.
func (s *Router) tellUp(peer string) {
	select {
	case s.events <- roads.Event{Kind: roads.RoadUp, Peer: peer}:
	default:
	}
}

// Probe implements roads.Prober: until ctx ends, every road not known to
// be up is connected to (a TCP connect, nothing written) every ProbeEvery.
func (s *Router) Probe(ctx context.Context) {
	t := time.NewTicker(ProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var due []roads.Candidate
		s.mu.Lock()
		for _, name := range s.order {
			p := s.peers[name]
			for _, r := range roads.All {
				if st := p.stat[r]; st != nil && st.State != "up" {
					due = append(due, p.cands[r])
				}
			}
		}
		s.mu.Unlock()
		for _, c := range due {
			dctx, cancel := context.WithTimeout(ctx, min(c.Road.ConnectTimeout(), ProbeEvery))
			start := time.Now()
			conn, err := c.Dial(dctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.Report(c, 0, fmt.Errorf("probe: %w", err))
				continue
			}
			conn.Close()
			s.Report(c, time.Since(start), nil)
		}
	}
}

// Changed implements roads.Watchable.
func (s *Router) Changed() <-chan struct{} { return s.changed.C() }

type staticPeer struct {
	cands map[roads.Road]roads.Candidate
	stat  map[roads.Road]*roads.RoadStatus
}

// NewRouter returns a router for peers. log may be nil.
func NewRouter(peers []roads.StaticPeer, log *slog.Logger) (*Router, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Router{log: log, peers: map[string]*staticPeer{}, events: make(chan roads.Event, 16)}
	for _, p := range peers {
		if _, dup := s.peers[p.Name]; dup {
			return nil, fmt.Errorf("peer %q is named twice in the config", p.Name)
		}
		sp := &staticPeer{cands: map[roads.Road]roads.Candidate{}, stat: map[roads.Road]*roads.RoadStatus{}}
		for road, addr := range p.Roads {
			if _, err := roads.Parse(string(road)); err != nil {
				return nil, fmt.Errorf("peer %q: road %q is not one of thunderbolt, lan, tailnet", p.Name, road)
			}
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return nil, fmt.Errorf("peer %q: %s address %q is not host:port: %w", p.Name, road, addr, err)
			}
			d := net.Dialer{Timeout: road.ConnectTimeout()}
			sp.cands[road] = roads.Candidate{Peer: p.Name, Road: road, Address: addr, NeedsTicket: true,
				Dial: func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }}
			sp.stat[road] = &roads.RoadStatus{Road: road, Address: addr, State: "unknown"}
		}
		if len(sp.cands) == 0 {
			return nil, fmt.Errorf("peer %q has no roads in the config", p.Name)
		}
		s.peers[p.Name] = sp
		s.order = append(s.order, p.Name)
	}
	return s, nil
}

// Known implements roads.Router.
func (s *Router) Known(peer string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.peers[peer]
	return ok
}

// Choose implements roads.Router.
func (s *Router) Choose(_ context.Context, peer string, pin roads.Road, exclude ...roads.Road) (roads.Candidate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.peers[peer]
	if !ok {
		return roads.Candidate{}, fmt.Errorf("%w %q", roads.ErrUnknownPeer, peer)
	}
	if pin != "" {
		c, ok := p.cands[pin]
		if !ok || slices.Contains(exclude, pin) {
			return roads.Candidate{}, fmt.Errorf("%w: %s has no %s road", roads.ErrNoRoad, peer, pin)
		}
		return c, nil
	}
	for _, r := range roads.All {
		if c, ok := p.cands[r]; ok && !slices.Contains(exclude, r) {
			return c, nil
		}
	}
	return roads.Candidate{}, fmt.Errorf("%w: every road to %s has been tried", roads.ErrNoRoad, peer)
}

// Report implements roads.Router.
func (s *Router) Report(c roads.Candidate, rtt time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed.Notify()
	p, ok := s.peers[c.Peer]
	if !ok || p.stat[c.Road] == nil {
		return
	}
	st := p.stat[c.Road]
	st.CheckedAt = time.Now()
	if err != nil {
		st.State, st.LastError, st.LastErrorAt = "down", err.Error(), st.CheckedAt
		return
	}
	if st.State != "up" {
		s.tellUp(c.Peer)
	}
	st.State, st.RTTMillis = "up", float64(rtt.Microseconds())/1000
	st.RecentRTTs = roads.AppendRTT(st.RecentRTTs, st.RTTMillis)
}

// Invalidate implements roads.Router.
func (s *Router) Invalidate(peer string, road roads.Road, reason error) {
	s.log.Info(fmt.Sprintf("route to %s via %s dropped: %v", peer, road, reason))
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed.Notify()
	if p, ok := s.peers[peer]; ok && p.stat[road] != nil {
		p.stat[road].State, p.stat[road].LastError, p.stat[road].LastErrorAt = "down", reason.Error(), time.Now()
	}
}

// Peers implements roads.Router.
func (s *Router) Peers() []roads.PeerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []roads.PeerStatus
	for _, name := range s.order {
		p := s.peers[name]
		ps := roads.PeerStatus{Name: name}
		for _, r := range roads.All {
			if st, ok := p.stat[r]; ok {
				rs := *st
				rs.RecentRTTs = slices.Clone(st.RecentRTTs)
				ps.Roads = append(ps.Roads, rs)
				if ps.Road == "" && st.State != "down" {
					ps.Road = r
				}
			}
		}
		out = append(out, ps)
	}
	return out
}

var (
	_ roads.Router      = (*Router)(nil)
	_ roads.Watchable   = (*Router)(nil)
	_ roads.EventSource = (*Router)(nil)
	_ roads.Prober      = (*Router)(nil)
)
