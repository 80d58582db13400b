package routes

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
)

// PingFunc checks one road to a peer: it connects over c and asks the
// peer's Delta (GET /delta/v1/ping). nil means it answered.
type PingFunc func(ctx context.Context, c roads.Candidate) error

// Router is the one road keeper of both modes: the route book behind
// roads.Router, its prober, and the road events it tells the gateway. A
// mode feeds it candidates (Book().Set: static mode from config.json, the
// tailnet node from discovery) and a PingFunc, and tells it what netwatch
// saw (InterfaceLost, InterfacesGained); everything else (hold-downs,
// races, expiring beliefs, probes) is the same in both.
type Router struct {
	book   *Book
	ping   PingFunc
	log    *slog.Logger
	events chan roads.Event
	kick   chan struct{}
}

// eventBuffer bounds the road events waiting for the gateway.
const eventBuffer = 256

// NewRouter returns a router over book that probes with ping. log may be
// nil.
func NewRouter(book *Book, ping PingFunc, log *slog.Logger) *Router {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Router{book: book, ping: ping, log: log, events: make(chan roads.Event, eventBuffer), kick: make(chan struct{}, 1)}
}

// Book is the route book the router keeps.
func (r *Router) Book() *Book { return r.book }

// Known implements roads.Router.
func (r *Router) Known(peer string) bool { return r.book.Known(peer) }

// Choose implements roads.Router: a pinned road as it is; otherwise the
// best usable road, with the others to race after the stagger.
func (r *Router) Choose(_ context.Context, peer string, pin roads.Road, exclude ...roads.Road) (roads.Candidate, error) {
	ch, err := r.book.Choose(peer, pin, exclude...)
	if err != nil {
		return roads.Candidate{}, err
	}
	c := ch.First
	c.Next, c.Passed, c.ChosenAt = ch.Next, ch.Passed, ch.At
	return c, nil
}

// AnsweredSince implements roads.Answerer.
func (r *Router) AnsweredSince(peer string, road roads.Road, t time.Time) bool {
	return r.book.AnsweredSince(peer, road, t)
}

// Report implements roads.Router. A success on a peer none of whose roads
// was believed up is told as roads.RoadUp: the peer is back. A failure
// that drops the road is told as roads.RoadLost: its exchanges are cut.
func (r *Router) Report(c roads.Candidate, rtt time.Duration, err error) {
	back := err == nil && !r.book.AnyUp(c.Peer)
	if r.book.Report(c, rtt, err) {
		r.lost(c.Peer, c.Road, err)
	}
	if back {
		r.Tell(roads.Event{Kind: roads.RoadUp, Peer: c.Peer})
	}
}

// Invalidate implements roads.Router: the road is dropped, and told as
// roads.RoadLost when it was not down already.
func (r *Router) Invalidate(peer string, road roads.Road, reason error) {
	if r.book.Invalidate(peer, road, reason) {
		r.lost(peer, road, reason)
	}
}

// lost tells the gateway that peer's road was dropped on evidence why.
func (r *Router) lost(peer string, road roads.Road, why error) {
	r.Tell(roads.Event{Kind: roads.RoadLost, Peer: peer, Road: road, Why: roads.AsDrop(why)})
}

// suspectAge is the youngest check a suspicion probes again: an exchange
// that broke off, or went quiet, a moment after the road answered a probe
// does not ask for another.
const suspectAge = 2 * time.Second

// Suspect implements roads.Suspecter: peer's road is probed at once
// unless it was checked within suspectAge; the probe's failure, not the
// suspicion, drops it.
func (r *Router) Suspect(peer string, road roads.Road, why string) {
	if r.book.Recheck(peer, road, suspectAge) {
		r.log.Debug("road suspect: probing it now", "peer", peer, "road", road, "why", why)
		r.Kick()
	}
}

// LostRace implements roads.RaceLoser.
func (r *Router) LostRace(c roads.Candidate) {
	r.book.LostRace(c)
	r.Kick()
}

// Peers implements roads.Router.
func (r *Router) Peers() []localapi.PeerStatus { return r.book.Peers() }

// Changed implements roads.Watchable: it closes at the next change to a
// road's state or round trips, a peer's roads or a hold-down.
func (r *Router) Changed() <-chan struct{} { return r.book.Changed() }

// StateChanged implements roads.StateWatchable (Book.StateChanged).
func (r *Router) StateChanged() <-chan struct{} { return r.book.StateChanged() }

// Won implements roads.RaceCounter.
func (r *Router) Won(road roads.Road) { r.book.Won(road) }

// RouteCounters implements roads.Counted.
func (r *Router) RouteCounters() localapi.RouteCounters { return r.book.Counters() }

// Events implements roads.EventSource.
func (r *Router) Events() <-chan roads.Event { return r.events }

// Tell passes a road event to the gateway without waiting for it.
func (r *Router) Tell(e roads.Event) {
	select {
	case r.events <- e:
	default:
		r.log.Warn("road events are not being taken; one is dropped", "kind", e.Kind, "interface", e.Interface, "peer", e.Peer)
	}
}

// InterfaceLost drops at once every road over a local interface that went
// down, lost its address or vanished, and tells the gateway, which closes
// their connections, busy ones too.
func (r *Router) InterfaceLost(iface string) {
	e := roads.Event{Kind: roads.InterfaceLost, Interface: iface}
	for _, c := range r.book.InterfaceLost(iface) {
		e.Peers = append(e.Peers, c.Peer)
	}
	r.Tell(e)
}

// InterfacesGained starts a burst of probes of the roads over each
// interface that came up, or of every road after the computer woke.
func (r *Router) InterfacesGained(ifaces []string, woke bool) {
	for _, iface := range ifaces {
		r.book.InterfaceGained(iface)
	}
	if woke {
		r.book.InterfaceGained("")
	}
	r.Kick()
}

// Kick makes the prober look at what is due now.
func (r *Router) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// probeSlack is how long a probe may wait for the ping's answer once
// connected.
const probeSlack = 2 * time.Second

// Probe implements roads.Prober: until ctx ends, it pings the roads the
// route book says are due (every road once, roads believed up after their
// road's belief lifetime, failed ones after their hold-down, every
// BurstEvery during a burst, the tailnet at once when a better road is
// dropped), one probe per road at a time. A road that answers ends
// its burst; when that changes the road a peer's requests take, the
// gateway is told (roads.RoadUp), so that reads leave the road they were
// on. It returns once its probes have.
//
// It looks again when the book says the next road falls due
// (Book.Schedule), when kicked, and when the book changes (a use or a
// probe reported, roads came or went), at most once a second for those.
// An idle Delta's prober wakes about three times a road each belief
// lifetime (the road due, its probe's report, the look a second later),
// not every second.
func (r *Router) Probe(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	inflight := map[string]bool{}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		// Taken before the book is read: a change made after Schedule
		// read it (a road learned, a report) wakes this loop, never lost
		// between the two.
		changed := r.book.Changed()
		due, bursting, quiet := r.book.Schedule(BeliefLifetime)
		looked := time.Now()
		for _, c := range due {
			k := fmt.Sprint(c.Road, "|", c.Peer, "|", c.Address, "|", c.Interface)
			mu.Lock()
			busy := inflight[k]
			inflight[k] = true
			mu.Unlock()
			if busy {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.probe(ctx, c)
				mu.Lock()
				delete(inflight, k)
				mu.Unlock()
			}()
		}
		wait := quiet
		if bursting {
			wait = BurstEvery
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		case <-t.C:
		case <-changed:
			// A change may bring a probe forward (a road that failed is
			// due after its hold-down): looked at, but no more than once
			// a second, as a busy Delta's uses report all the time.
			if d := time.Second - time.Since(looked); d > 0 {
				t.Reset(min(d, wait))
				select {
				case <-ctx.Done():
					return
				case <-r.kick:
				case <-t.C:
				}
			}
		}
	}
}

// probe pings one road and reports the result to the route book.
func (r *Router) probe(ctx context.Context, c roads.Candidate) {
	pctx, cancel := context.WithTimeout(ctx, c.Road.ConnectTimeout()+probeSlack)
	defer cancel()
	start := time.Now()
	err := r.ping(pctx, c)
	if ctx.Err() != nil {
		return // stopping: not a verdict on the road
	}
	if err != nil {
		err = &roads.DropError{Evidence: roads.EvidenceProbe, Err: err}
	}
	was := r.best(c.Peer) // as the book had it when the answer came
	r.Report(c, time.Since(start), err)
	if err != nil {
		return
	}
	r.book.EndBurst(c)
	if now := r.best(c.Peer); now != was {
		r.Tell(roads.Event{Kind: roads.RoadUp, Peer: c.Peer})
	}
}

// best is the road the book would choose for peer now.
func (r *Router) best(peer string) roads.Road {
	ch, err := r.book.Choose(peer, "")
	if err != nil {
		return ""
	}
	return ch.First.Road
}

var (
	_ roads.Router      = (*Router)(nil)
	_ roads.Watchable   = (*Router)(nil)
	_ roads.EventSource = (*Router)(nil)
	_ roads.Prober      = (*Router)(nil)
	_ roads.Counted     = (*Router)(nil)
	_ roads.RaceCounter = (*Router)(nil)
	_ roads.Answerer    = (*Router)(nil)
	_ roads.Suspecter   = (*Router)(nil)
	_ roads.RaceLoser   = (*Router)(nil)
)
