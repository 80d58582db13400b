package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/routes"
)

// dial connects for cand: to its road alone, or racing cand.Next after the
// stagger. Every outcome is reported to the router, late losers included
// (a loser that times out arms its hold-down).
func (g *Gateway) dial(ctx context.Context, cand roads.Candidate) (*routes.RoadConn, error) {
	rc, err := g.dialRoad(ctx, cand)
	if err != nil {
		return nil, err
	}
	if rc.Cand.Interface != "" {
		g.liveMu.Lock()
		g.live[rc] = struct{}{}
		g.liveMu.Unlock()
		rc.OnClose = func() {
			g.liveMu.Lock()
			delete(g.live, rc)
			g.liveMu.Unlock()
		}
	}
	return rc, nil
}

// DropInterface closes every connection bound to a local interface that
// went down, lost its address or vanished, idle or busy: a read on it is
// retried on another road at once, a call on it is outcome_unknown at once,
// instead of either waiting for a timeout to learn the road is gone.
func (g *Gateway) DropInterface(iface string) {
	g.liveMu.Lock()
	var drop []*routes.RoadConn
	for rc := range g.live {
		if rc.Cand.Interface == iface {
			drop = append(drop, rc)
		}
	}
	g.liveMu.Unlock()
	for _, rc := range drop {
		rc.Conn.Close()
	}
	if len(drop) > 0 {
		g.log.Info("closed the connections over a lost interface", "interface", iface, "connections", len(drop))
	}
}

func (g *Gateway) dialRoad(ctx context.Context, cand roads.Candidate) (*routes.RoadConn, error) {
	if len(cand.Next) == 0 {
		start := time.Now()
		c, err := cand.Dial(ctx)
		if err != nil {
			g.router.Report(cand, 0, err)
			return nil, err
		}
		g.router.Report(cand, time.Since(start), nil)
		return &routes.RoadConn{Conn: c, Cand: cand}, nil
	}
	first := cand
	first.Next = nil
	rc, took, fails, err := routes.Race(ctx, routes.Choice{First: first, Next: cand.Next}, routes.Stagger,
		func(f routes.Failure, _ net.Conn) { g.router.Report(f.Cand, f.Took, f.Err) })
	for _, f := range fails {
		g.router.Report(f.Cand, 0, f.Err)
	}
	if err != nil {
		return nil, err
	}
	g.router.Report(rc.Cand, took, nil)
	if w, ok := g.router.(interface{ Won(roads.Road) }); ok {
		w.Won(rc.Cand.Road)
	}
	return rc, nil
}

// racedRoads are the roads a dial for cand may have tried.
func racedRoads(cand roads.Candidate) []roads.Road {
	rs := []roads.Road{cand.Road}
	for _, n := range cand.Next {
		rs = append(rs, n.Road)
	}
	return rs
}

type dialKey struct{}

// dialState carries a read's candidate into the transport's dial, and what
// the dial found back out.
type dialState struct {
	cand roads.Candidate

	mu      sync.Mutex
	used    roads.Candidate // the road of the connection the request went on
	dialErr error           // set if the request's own dial failed
}

func (d *dialState) setUsed(c roads.Candidate) { d.mu.Lock(); d.used = c; d.mu.Unlock() }
func (d *dialState) get() (roads.Candidate, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.used, d.dialErr
}

// transports holds one pooled HTTP transport per peer, for reads and the
// reconciler's questions (never for calls). Its dial takes the request's
// candidate from the context and races as dial does; a pooled connection
// knows its road (routes.RoadConn).
type transports struct {
	g  *Gateway
	mu sync.Mutex
	m  map[string]*http.Transport
}

func newTransports(g *Gateway) *transports { return &transports{g: g, m: map[string]*http.Transport{}} }

func (t *transports) forPeer(peer string) *http.Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr, ok := t.m[peer]; ok {
		return tr
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			st, _ := ctx.Value(dialKey{}).(*dialState)
			if st == nil {
				return nil, errNoCandidate
			}
			rc, err := t.g.dial(ctx, st.cand)
			st.mu.Lock()
			st.dialErr = err
			st.mu.Unlock()
			if err != nil {
				return nil, err
			}
			return rc, nil
		},
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	t.m[peer] = tr
	return tr
}

var errNoCandidate = errors.New("gateway: a peer transport was asked to dial without a candidate in the request's context")

// closeIdle closes a peer's idle pooled connections (all roads: a road went
// away, or a better one came back and should be taken at once).
func (t *transports) closeIdle(peer string) {
	t.mu.Lock()
	tr := t.m[peer]
	t.mu.Unlock()
	if tr != nil {
		tr.CloseIdleConnections()
	}
}

func (t *transports) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tr := range t.m {
		tr.CloseIdleConnections()
	}
}

// CloseIdle closes the idle pooled connections to peer (netwatch: a road
// went down, or a better one came up).
func (g *Gateway) CloseIdle(peer string) { g.transport.closeIdle(peer) }

// heldDown reports whether err is a hold-down refusal.
func heldDown(err error) bool {
	var hd *routes.HeldDownError
	return errors.As(err, &hd)
}
