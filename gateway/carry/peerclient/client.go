// Package peerclient is how Delta reaches a peer: one attempt loop for
// reads, calls and the reconciler's questions. It owns the dial (one road,
// or a staggered race across roads), the pooled transports that reads and
// questions share, the connections bound to an interface (closed at once
// when it goes), tickets with one renewal on a door's 401, and the fall-back
// to one freshly chosen road. What may be tried again is decided by Next,
// one pure function; what the app is told stays with the caller.
//
// The transport is the caller's: an attempt is a function given the road
// and the ticket. Calls dial with Dial and write once with h1.Once; reads
// and questions go through RoundTrip, on the peer's pool.
package peerclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/roads"
)

// Tickets supplies the ticket to present to a peer.
type Tickets interface {
	// Ticket returns a ticket for peer. If renew, a cached one must not be
	// used: the peer refused it.
	Ticket(ctx context.Context, peer string, renew bool) (string, error)
}

// Config configures a Client.
type Config struct {
	// Router chooses roads and is told how each use went. Required.
	Router roads.Router
	// Tickets supplies tickets for roads that need them. Required.
	Tickets Tickets
	// Log receives what the client does to connections. If nil, nothing.
	Log *slog.Logger
	// OnFallBack, if not nil, is called each time a call or a read drops a
	// road and chooses again (the route_fallbacks counter).
	OnFallBack func()
	// OnConnect, if not nil, is called for each connect to a road: joined
	// is true when the caller waited on a connect already in flight
	// instead of dialling.
	OnConnect func(road roads.Road, joined bool)
}

// Client reaches peers. It is safe for concurrent use.
type Client struct {
	cfg Config

	liveMu sync.Mutex
	live   map[*RoadConn]struct{} // every connection open, on every road

	quiet     roads.Signal // a connection became busy while quietIdle: the quiet watch looks
	quietIdle atomic.Bool  // the quiet watch sleeps until a connection becomes busy

	poolMu sync.Mutex
	pools  map[string]*h1.Transport // by peer

	fl flights // connects in flight, joined by later callers (join.go)

	slotMu sync.Mutex
	slots  map[string]chan struct{} // by peer: its connections open (ConnsPerPeer)
}

// ConnsPerPeer bounds the connections this Delta has open to one peer at
// once, reads, calls, sessions and questions together: below the
// connections a peer's door admits from one source (256, gateway's
// peerConnsPerSource), with room for a race's losers. A request past it
// waits for one to close (until its context ends): the door never has to
// turn one away.
var ConnsPerPeer = 240

// slot waits for one of peer's ConnsPerPeer connections, and returns its
// release (call once, when the connection has closed).
func (c *Client) slot(ctx context.Context, peer string) (func(), error) {
	c.slotMu.Lock()
	if c.slots == nil {
		c.slots = map[string]chan struct{}{}
	}
	ch, ok := c.slots[peer]
	if !ok {
		ch = make(chan struct{}, ConnsPerPeer)
		c.slots[peer] = ch
	}
	c.slotMu.Unlock()
	select {
	case ch <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waited for one of the %d connections this Delta keeps open to %s at once: %w", ConnsPerPeer, peer, context.Cause(ctx))
	}
	var once sync.Once
	return func() { once.Do(func() { <-ch }) }, nil
}

// New returns a client.
func New(cfg Config) *Client {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.OnConnect == nil {
		cfg.OnConnect = func(roads.Road, bool) {}
	}
	return &Client{cfg: cfg, live: map[*RoadConn]struct{}{}, pools: map[string]*h1.Transport{}}
}

// Try is one attempt's road and ticket.
type Try struct {
	Cand roads.Candidate
	// Ticket is the ticket to present; "" where the road needs none.
	Ticket string
}

// Result is what an attempt did, as the loop needs it to go on.
type Result struct {
	Verdict Verdict
	// Sent reports whether a byte of the request was written.
	Sent bool
	// RoadFault reports whether a failure was the road's.
	RoadFault bool
	// Road is the road the attempt counts as tried on; NeedsTicket whether
	// it presents tickets.
	Road        roads.Road
	NeedsTicket bool
	// Tried are the roads the attempt tried (those a dial raced, or the
	// road the connection was on): a fall-back passes over them; Reason
	// is why they failed.
	Tried  []roads.Road
	Reason error
	// Evidence, when not "", is what the failure proves of the roads in
	// Tried: Do drops them for it (DESIGN §2c). Suspect has the attempt's
	// road probed at once instead: its failure proved nothing by itself.
	Evidence roads.Evidence
	Suspect  bool
}

// Do runs the attempt loop for one exchange of kind with peer: choose a
// road (only pin, if set), get its ticket, make the attempt, and then do
// what Next says: stop, renew the ticket and attempt once more, or drop the
// roads the attempt tried and choose again. It returns nil once an attempt
// is the answer, or an *Unattempted when an attempt could not be made.
func (c *Client) Do(ctx context.Context, kind Kind, peer string, pin roads.Road, attempt func(Try) Result) error {
	var exclude []roads.Road
	var first roads.Candidate // the first choice, for the roads it passed over
	renewed, fellBack := false, false
	for tries := 1; ; tries++ {
		cand, err := c.cfg.Router.Choose(ctx, peer, pin, exclude...)
		if err != nil {
			return noRoad(peer, err, fellBack)
		}
		if tries == 1 {
			first = cand
		}
		tk := ""
		if cand.NeedsTicket {
			if tk, err = c.cfg.Tickets.Ticket(ctx, peer, renewed); err != nil {
				return noTicket(peer, cand.Road, err)
			}
		}
		res := attempt(Try{Cand: cand, Ticket: tk})
		if kind != Question {
			c.evidence(peer, res)
		}
		switch Next(Facts{Kind: kind, Verdict: res.Verdict, Sent: res.Sent, RoadFault: res.RoadFault,
			NeedsTicket: res.NeedsTicket, Local: res.Road.Local(), Pinned: pin != "", Renewed: renewed, FellBack: fellBack, Tries: tries}) {
		case Stop:
			return nil
		case Renew:
			renewed = true
		case FallBack:
			fellBack = true
			if kind != Question && c.cfg.OnFallBack != nil {
				c.cfg.OnFallBack()
			}
			exclude = append(exclude, res.Tried...)
			if kind != Question {
				exclude = append(exclude, c.stillPassed(first)...)
			}
		}
	}
}

// evidence acts on what an attempt's failure proved of peer's roads:
// evidence drops the roads it tried (the router tells the gateway, which
// cuts their other exchanges: roads.RoadLost); a suspicion has its road
// probed at once.
func (c *Client) evidence(peer string, res Result) {
	switch {
	case res.Evidence != "":
		for _, road := range res.Tried {
			c.cfg.Router.Invalidate(peer, road, &roads.DropError{Evidence: res.Evidence, Err: res.Reason})
		}
	case res.Suspect:
		if s, ok := c.cfg.Router.(roads.Suspecter); ok && res.Reason != nil {
			s.Suspect(peer, res.Road, res.Reason.Error())
		}
	}
}

// stillPassed are the roads the first choice passed over (held down,
// offline, believed down) that have not answered since: a fall-back does
// not take them. Without it, a road whose hold-down ran out while the
// exchange waited on the others (a thunderbolt hold-down is 4 s, a tailnet
// connect 8 s) would be dialled again at the end, by every caller that
// arrived while it was held down: a sleeping peer would cost one more
// connect and a wait longer than the first attempt's.
func (c *Client) stillPassed(first roads.Candidate) []roads.Road {
	ans, _ := c.cfg.Router.(roads.Answerer)
	var out []roads.Road
	for _, r := range first.Passed {
		if ans != nil && ans.AnsweredSince(first.Peer, r, first.ChosenAt) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// Dial connects for cand: to its road alone, or racing cand.Next after the
// stagger. Every outcome is reported to the router, late losers included
// (a loser that times out arms its hold-down). A connection bound to an
// interface is closed by DropInterface when the interface goes.
func (c *Client) Dial(ctx context.Context, cand roads.Candidate) (*RoadConn, error) {
	release, err := c.slot(ctx, cand.Peer)
	if err != nil {
		return nil, err
	}
	rc, err := c.dialRoad(ctx, cand)
	if err != nil {
		release()
		return nil, err
	}
	rc.client = c
	c.liveMu.Lock()
	c.live[rc] = struct{}{}
	c.liveMu.Unlock()
	// Dialled for an exchange; a pool marks it idle when it has it back.
	// Busy only once it is in live: the quiet watch this wakes must find
	// it there, or it would sleep again with a busy connection unwatched.
	rc.SetBusy(true)
	rc.OnClose = func() {
		c.liveMu.Lock()
		delete(c.live, rc)
		c.liveMu.Unlock()
		release()
	}
	return rc, nil
}

func (c *Client) dialRoad(ctx context.Context, cand roads.Candidate) (*RoadConn, error) {
	router := c.cfg.Router
	// The router hears of each connection made here; of each failure from
	// the connect that failed, as it failed (join.go).
	cand = c.joined(cand)
	if len(cand.Next) == 0 {
		start := time.Now()
		conn, err := cand.Dial(ctx)
		if err != nil {
			return nil, err
		}
		router.Report(cand, time.Since(start), nil)
		return &RoadConn{Conn: conn, Cand: cand}, nil
	}
	// A connect under way is not cancelled by a caller that stops
	// waiting (Race): its verdict, whenever it comes, is the road's.
	first := cand
	first.Next = nil
	rc, took, lost, err := Race(ctx, roads.Choice{First: first, Next: cand.Next}, roads.Stagger,
		func(f Failure, _ net.Conn) {
			if f.Err == nil { // a loser that connected late: the road is up
				router.Report(f.Cand, f.Took, nil)
			}
		})
	if err != nil {
		return nil, err
	}
	router.Report(rc.Cand, took, nil)
	if w, ok := router.(roads.RaceCounter); ok {
		w.Won(rc.Cand.Road)
	}
	if l, ok := router.(roads.RaceLoser); ok {
		// A better road still connecting lost this race: the next
		// exchanges take the winner first, not the stagger again, until
		// the loser's connect (or a probe) proves it (issue 62).
		for _, o := range rc.Outrun {
			l.LostRace(o)
		}
	}
	if len(lost) > 0 {
		// A road that failed outright is a fall-back, raced or not: a
		// lan or thunderbolt road is dropped, as Do drops it.
		rc.Lost = lost
		if c.cfg.OnFallBack != nil {
			c.cfg.OnFallBack()
		}
		for _, f := range lost {
			if f.Cand.Road.Local() {
				router.Invalidate(f.Cand.Peer, f.Cand.Road, &roads.DropError{Evidence: roads.EvidenceConnect, Err: f.Err})
			}
		}
	}
	return rc, nil
}

// DropInterface closes every connection bound to a local interface that
// went down, lost its address or vanished, idle or busy: a read on it is
// retried on another road at once, a call on it is outcome_unknown at once,
// instead of either waiting for a timeout to learn the road is gone. It
// returns how many it closed.
func (c *Client) DropInterface(iface string) int {
	return c.dropWhere(func(rc *RoadConn) bool { return rc.Cand.Interface == iface }, &roads.InterfaceLostError{Interface: iface})
}

// DropRoad closes every connection to peer on road, idle or busy, because
// the road was dropped on evidence (why): every exchange on it ends now
// (DESIGN §2c), a read's resumed on a fresh road or cut, a call's
// outcome_unknown, each failing with a *CutError that says why. It
// returns how many it closed.
func (c *Client) DropRoad(peer string, road roads.Road, why error) int {
	return c.dropWhere(func(rc *RoadConn) bool { return rc.Cand.Peer == peer && rc.Cand.Road == road }, why)
}

func (c *Client) dropWhere(match func(*RoadConn) bool, why error) int {
	c.liveMu.Lock()
	var drop []*RoadConn
	for rc := range c.live {
		if match(rc) {
			drop = append(drop, rc)
		}
	}
	c.liveMu.Unlock()
	for _, rc := range drop {
		rc.drop(why)
	}
	return len(drop)
}

// RacedRoads are the roads a dial for cand may have tried.
func RacedRoads(cand roads.Candidate) []roads.Road {
	rs := []roads.Road{cand.Road}
	for _, n := range cand.Next {
		rs = append(rs, n.Road)
	}
	return rs
}

// RoundTrip sends req on peer's pool of connections (reads and questions,
// never calls). A new connection is dialled for cand as Dial does. It
// returns the candidate of the connection the request went on, and the
// error of its own dial, if that is what failed (then nothing was sent).
func (c *Client) RoundTrip(req *http.Request, cand roads.Candidate) (resp *http.Response, used roads.Candidate, dialErr error, err error) {
	st := &dialState{cand: cand, used: cand}
	ctx := httptrace.WithClientTrace(context.WithValue(req.Context(), dialKey{}, st), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if rc, ok := info.Conn.(*RoadConn); ok {
				st.setUsed(rc.Cand)
			}
		},
	})
	resp, err = c.pool(cand.Peer).RoundTrip(req.WithContext(ctx))
	used, dialErr = st.get()
	if err == nil {
		// An answer's head came over the road: it works (the time it
		// took is the app's as much as the road's).
		c.cfg.Router.Report(used, roads.Unmeasured, nil)
	}
	return resp, used, dialErr, err
}

// TriedRoads are the roads a failed RoundTrip may blame: the one its
// connection was on, or, when its own dial failed, every road the dial
// raced.
func TriedRoads(used, cand roads.Candidate, dialErr error) []roads.Road {
	if dialErr != nil {
		return RacedRoads(cand)
	}
	return []roads.Road{used.Road}
}

type dialKey struct{}

// dialState carries a request's candidate into the pool's dial, and what
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

var errNoCandidate = errors.New("peerclient: a peer's pool was asked to dial without a candidate in the request's context")

// pool is peer's pooled HTTP transport; its dial takes the request's
// candidate from the context and races as Dial does, and a pooled
// connection knows its road (RoadConn).
func (c *Client) pool(peer string) *h1.Transport {
	c.poolMu.Lock()
	defer c.poolMu.Unlock()
	if tr, ok := c.pools[peer]; ok {
		return tr
	}
	tr := &h1.Transport{
		Dial: func(ctx context.Context, _ string) (net.Conn, error) {
			st, _ := ctx.Value(dialKey{}).(*dialState)
			if st == nil {
				return nil, errNoCandidate
			}
			rc, err := c.Dial(ctx, st.cand)
			st.mu.Lock()
			st.dialErr = err
			st.mu.Unlock()
			if err != nil {
				return nil, err
			}
			return rc, nil
		},
		MaxIdlePerHost: 64,
	}
	c.pools[peer] = tr
	return tr
}

// CloseIdle closes a peer's idle pooled connections (all roads: a road
// went away, or a better one came back and should be taken at once).
func (c *Client) CloseIdle(peer string) {
	c.poolMu.Lock()
	tr := c.pools[peer]
	c.poolMu.Unlock()
	if tr != nil {
		tr.CloseIdleConnections()
	}
}

// CloseAll closes every pool's idle connections.
func (c *Client) CloseAll() {
	c.poolMu.Lock()
	defer c.poolMu.Unlock()
	for _, tr := range c.pools {
		tr.CloseIdleConnections()
	}
}

// Describe names a failed connect the way details do.
func Describe(cand roads.Candidate, op string, timeout bool) string {
	if timeout && op == "connect" {
		return fmt.Sprintf("connect to %s timed out after %.1f s", cand, cand.Road.ConnectTimeout().Seconds())
	}
	if op != "" {
		return op + " to " + cand.String()
	}
	return cand.String()
}

// Known reports whether peer is one of this computer's peers, as the
// router knows them; when it is not, why says so with the nearest name it
// does know (roads.UnknownPeer). A carrier asks here, never the router.
func (c *Client) Known(peer string) (ok bool, why string) {
	if c.cfg.Router.Known(peer) {
		return true, ""
	}
	return false, roads.UnknownPeer(peer, roads.PeerNames(c.cfg.Router))
}
