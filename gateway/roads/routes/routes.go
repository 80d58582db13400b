// Package routes is Delta's route book: for each peer, a candidate per road
// (address, interface, when it was learned) with what is believed of it
// (last probe or use, RTT, last error, a hold-down), and the choice of road
// that follows from those beliefs (DESIGN §5).
//
// Beliefs expire: a road believed up is probed again after its belief
// lifetime (30 s for a cable or the lan; 5 min for the tailnet, whose own
// map says meanwhile whether the peer is online, and which is probed at
// once when a better road to the same peer is dropped); one that failed is
// not chosen again until its road's hold-down has passed. Only a
// connect timeout arms a hold-down that fails later callers at once (with
// the original cause and the time left): a refusal fails fast by itself.
// Unpinned choices come with the next roads to race after a stagger
// (Race), so that a silent road costs the stagger, not its timeout.
package routes

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/api/roadfacts"
	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/roads"
)

// Timing (DESIGN §8).
const (
	// BeliefLifetime is the shortest road's belief lifetime (a cable's
	// and the lan's; roadfacts.Facts.BeliefLifetime): the prober looks at
	// the book at least this often.
	BeliefLifetime = 30 * time.Second
	BurstEvery     = 100 * time.Millisecond // probes after an interface comes up …
	BurstFor       = 3 * time.Second        // … for this long
	// Stagger is how long the best road may take to connect before the
	// next one is started as well (roads.Stagger).
	Stagger = roads.Stagger
)

// HeldDownError refuses a road during its hold-down, naming the connect
// timeout that armed it. Nothing was sent.
type HeldDownError struct {
	Cand  roads.Candidate
	Cause string        // the failure that armed the hold-down
	At    time.Time     // when it happened
	Ago   time.Duration // how long before the refusal, by the book's clock
	Left  time.Duration // time left
}

// Is makes errors.Is(err, roads.ErrHeldDown) true.
func (e *HeldDownError) Is(target error) bool { return target == roads.ErrHeldDown }

// OfflineError refuses the tailnet road to a peer that the tailnet's map
// says is offline. Nothing was sent.
type OfflineError struct {
	Peer  string
	Since time.Time // when the tailnet last saw it; zero if it never said
}

// Is makes errors.Is(err, roads.ErrOffline) true.
func (e *OfflineError) Is(target error) bool { return target == roads.ErrOffline }

func (e *OfflineError) Error() string {
	if e.Since.IsZero() {
		return e.Peer + " is offline on the tailnet (asleep or off)"
	}
	return fmt.Sprintf("%s has been offline on the tailnet since %s (asleep or off)", e.Peer, OfflineStamp(e.Since, time.Now()))
}

// OfflineStamp says when, for people: "10:02" today, else "Mon 30 Nov 10:02".
func OfflineStamp(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if t.Format(time.DateOnly) == now.Format(time.DateOnly) {
		return t.Format("15:04")
	}
	return t.Format("Mon 2 Jan 15:04")
}

func (e *HeldDownError) Error() string {
	return fmt.Sprintf("%s did not answer %.0f s ago (%s); not dialing it again for another %.0f s",
		e.Cand.Peer, e.Ago.Seconds(), e.Cause, max(e.Left.Seconds(), 1))
}

type entry struct {
	cand      roads.Candidate
	learnedAt time.Time
	// movedAt: the road's address changed then (Set replaced an entry of
	// the same road at another address); zero for a road's first address.
	movedAt    time.Time
	upAt       time.Time // last success (probe or use)
	downAt     time.Time // last failure
	lastErr    string
	hint       localapi.RoadHint // a known cause of lastErr
	rtt        time.Duration
	rtts       []float64 // recent RTTs in ms, oldest first
	checkedAt  time.Time
	heldUntil  time.Time
	heldCause  string
	heldAt     time.Time
	burstUntil time.Time
	// recheck: probe it now, though it is believed up (a better road to
	// the same peer was dropped, Invalidate; an exchange on it is
	// suspect, Recheck).
	recheck bool
	// lostRaceAt: a worse road won a race while this one's connect was
	// still under way (LostRace). Until it answers again it is not chosen
	// first (lostRace).
	lostRaceAt time.Time
	// droppedAt is when the road was last dropped on evidence, and
	// dropped why (a *roads.DropError): what a person is shown.
	droppedAt time.Time
	dropped   error
	// offline: the tailnet's map says the peer is offline, last seen at
	// offlineSince; offlineAt is when the book last learned it went
	// offline, kept once it is back: an answer from before it is not
	// believed.
	offline      bool
	offlineSince time.Time
	offlineAt    time.Time
}

func (e *entry) same(c roads.Candidate) bool {
	return e.cand.Road == c.Road && e.cand.Address == c.Address && e.cand.Interface == c.Interface
}

// answeredLast: its last check or use answered, after its last failure
// (which also sets any error and hold-down an answer clears) and after
// the map last said the peer went offline.
func (e *entry) answeredLast() bool {
	return !e.upAt.IsZero() && e.upAt.After(e.downAt) && e.upAt.After(e.offlineAt)
}

// believedUp: it answered last, within its road's belief lifetime.
func (e *entry) believedUp(now time.Time) bool {
	return e.answeredLast() && now.Sub(e.upAt) < e.cand.Road.BeliefLifetime()
}

// believedDown: it failed, and its road's hold-down time has not passed.
func (e *entry) believedDown(now time.Time) bool {
	return !e.downAt.IsZero() && e.downAt.After(e.upAt) && now.Sub(e.downAt) < e.cand.Road.HoldDown()
}

func (e *entry) held(now time.Time) bool { return now.Before(e.heldUntil) }

// down: its last verdict was a failure (it has not answered since; a
// failure at the same instant as an answer is the later).
func (e *entry) down() bool { return !e.downAt.IsZero() && !e.downAt.Before(e.upAt) }

// lostRace: a worse road won a race while this one was connecting, and it
// has not answered since.
func (e *entry) lostRace() bool { return !e.lostRaceAt.IsZero() && !e.upAt.After(e.lostRaceAt) }

// drop records that the road was dropped on why at now; it reports
// whether it was a drop (the road was not down already), which is logged
// and followed by the gateway (roads.RoadLost).
func (e *entry) drop(now time.Time, why error) bool {
	was := e.down()
	e.downAt, e.lastErr, e.hint = now, why.Error(), roads.HintOf(why)
	if was {
		return false
	}
	e.droppedAt, e.dropped = now, why
	return true
}

// measuredAgain: an answer now only measures the road again. It answered
// last, recently enough (within twice its belief lifetime: the next probe
// answers just after the belief ends) that a follower still shows it up.
func (e *entry) measuredAgain(now time.Time) bool {
	return e.answeredLast() && now.Sub(e.upAt) < 2*e.cand.Road.BeliefLifetime()
}

// Book is safe for concurrent use.
type Book struct {
	now func() time.Time
	log *slog.Logger

	mu      sync.Mutex
	peers   map[string][]*entry // by peer, in road order
	c       localapi.RouteCounters
	changed roads.Signal
	// state is changed without an up road's new round trips
	// (roads.StateWatchable).
	state roads.Signal
}

// Changed implements roads.Watchable: it closes at the next change to a
// road's state or round trips, a peer's roads or a hold-down.
func (b *Book) Changed() <-chan struct{} { return b.changed.C() }

// StateChanged implements roads.StateWatchable: Changed, less the reports
// that only measured an up road again.
func (b *Book) StateChanged() <-chan struct{} { return b.state.C() }

// notify wakes both kinds of followers.
func (b *Book) notify() {
	b.changed.Notify()
	b.state.Notify()
}

// Touch wakes the book's followers for a change next to it that they show
// with it (the tailnet's login state).
func (b *Book) Touch() { b.notify() }

// New returns an empty book. now and log may be nil.
func New(now func() time.Time, log *slog.Logger) *Book {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Book{now: now, log: log, peers: map[string][]*entry{},
		c: localapi.RouteCounters{RacesWon: map[string]uint64{}, Invalidations: map[string]uint64{}, Drops: map[string]uint64{}}}
}

// Set replaces a peer's candidates; what is known of an unchanged
// candidate (same road, address and interface) is kept.
func (b *Book) Set(peer string, cands []roads.Candidate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.notify()
	old := b.peers[peer]
	var es []*entry
	for _, c := range cands {
		var e *entry
		for _, o := range old {
			if o.same(c) {
				e = o
				e.cand = c
			}
		}
		if e == nil {
			e = &entry{cand: c, learnedAt: b.now()}
			for _, o := range old {
				if o.cand.Road == c.Road && o.cand.Address != c.Address {
					e.movedAt = e.learnedAt
				}
				if o.cand.Road == c.Road && o.dropped != nil {
					// The road's last drop stays shown when it moves to
					// another address or interface (netwatch rebinding it).
					e.droppedAt, e.dropped = o.droppedAt, o.dropped
				}
			}
		}
		es = append(es, e)
	}
	slices.SortStableFunc(es, func(x, y *entry) int { return x.cand.Road.Rank() - y.cand.Road.Rank() })
	b.peers[peer] = es
}

// SetOffline records what the tailnet's map says of peer on road: offline
// (last seen at since), or online again. An offline road is not chosen
// and not probed; the map says when it is back. It reports whether
// anything changed.
func (b *Book) SetOffline(peer string, road roads.Road, offline bool, since time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	changed := false
	for _, e := range b.peers[peer] {
		if e.cand.Road != road || e.offline == offline && (!offline || e.offlineSince.Equal(since)) {
			continue
		}
		changed = true
		e.offline, e.offlineSince = offline, since
		if offline {
			e.offlineAt = b.now()
		} else {
			// Back: check it now rather than wait for a belief to expire.
			e.checkedAt, e.burstUntil = time.Time{}, time.Time{}
		}
	}
	if changed {
		b.notify()
	}
	return changed
}

// Remove forgets a peer.
func (b *Book) Remove(peer string) {
	defer b.notify()
	b.mu.Lock()
	delete(b.peers, peer)
	b.mu.Unlock()
}

// Known reports whether the book has the peer.
func (b *Book) Known(peer string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.peers[peer]
	return ok
}

// AnyUp reports whether a road to peer is believed up.
func (b *Book) AnyUp(peer string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	for _, e := range b.peers[peer] {
		if e.believedUp(now) {
			return true
		}
	}
	return false
}

// Choice is the road to try first and, unpinned, the roads to race after
// the stagger, best first (roads.Choice).
type Choice = roads.Choice

// Choose picks roads for peer: a pinned road as it is (unless held down);
// otherwise the usable roads in order of preference, skipping excluded
// ones, held-down ones and ones that failed within their hold-down time.
func (b *Book) Choose(peer string, pin roads.Road, exclude ...roads.Road) (Choice, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	es, ok := b.peers[peer]
	if !ok {
		return Choice{}, fmt.Errorf("%w %q", roads.ErrUnknownPeer, peer)
	}
	now := b.now()
	if pin != "" {
		for _, e := range es {
			if e.cand.Road != pin {
				continue
			}
			if slices.Contains(exclude, pin) {
				break
			}
			if e.offline {
				return Choice{}, &OfflineError{Peer: peer, Since: e.offlineSince}
			}
			if e.held(now) {
				b.c.HoldDownRefusals++
				return Choice{}, heldError(e, now)
			}
			return Choice{First: e.cand}, nil
		}
		return Choice{}, fmt.Errorf("%w: %s has no %s road", roads.ErrNoRoad, peer, pin)
	}
	var usable []roads.Candidate
	var passed []roads.Road
	// refusal is the most recent reason a road is refused: a hold-down or
	// the tailnet's offline, whichever the book learned last.
	var refusal error
	var refusedAt time.Time
	refuse := func(err error, at time.Time) {
		if refusal == nil || at.After(refusedAt) {
			refusal, refusedAt = err, at
		}
	}
	var behind []roads.Candidate // usable roads that lost a race: after the others
	for _, e := range es {
		switch {
		case slices.Contains(exclude, e.cand.Road):
		case e.offline:
			refuse(&OfflineError{Peer: peer, Since: e.offlineSince}, e.offlineAt)
			passed = append(passed, e.cand.Road)
		case e.held(now):
			refuse(heldError(e, now), e.heldAt)
			passed = append(passed, e.cand.Road)
		case e.believedDown(now):
			passed = append(passed, e.cand.Road)
		case e.lostRace():
			behind = append(behind, e.cand)
		default:
			usable = append(usable, e.cand)
		}
	}
	usable = append(usable, behind...)
	if len(usable) == 0 {
		if refusal != nil {
			if errors.Is(refusal, roads.ErrHeldDown) {
				b.c.HoldDownRefusals++
			}
			return Choice{}, refusal
		}
		return Choice{}, fmt.Errorf("%w: no road to %s is usable now", roads.ErrNoRoad, peer)
	}
	return Choice{First: usable[0], Next: usable[1:], Passed: passed, At: now}, nil
}

// AnsweredSince reports whether peer's road has answered (a probe or a
// use) at or after t.
func (b *Book) AnsweredSince(peer string, road roads.Road, t time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.peers[peer] {
		if e.cand.Road == road && !e.upAt.IsZero() && !e.upAt.Before(t) {
			return true
		}
	}
	return false
}

func heldError(e *entry, now time.Time) *HeldDownError {
	return &HeldDownError{Cand: e.cand, Cause: e.heldCause, At: e.heldAt, Ago: now.Sub(e.heldAt), Left: e.heldUntil.Sub(now)}
}

func (b *Book) find(c roads.Candidate) *entry {
	for _, e := range b.peers[c.Peer] {
		if e.same(c) {
			return e
		}
	}
	return nil
}

// Report records how a connect or a probe on c went. A failure is
// evidence against the road (roads.EvidenceOf: a failed connect unless it
// says otherwise); a timeout arms the road's hold-down. It reports
// whether a failure dropped the road (it was not down already): the drop
// is logged, and the road's exchanges are to be cut.
func (b *Book) Report(c roads.Candidate, rtt time.Duration, err error) (dropped bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.find(c)
	if e == nil {
		b.notify()
		return false
	}
	now := b.now()
	if err == nil && e.measuredAgain(now) {
		defer b.changed.Notify() // a new round trip: the chart's, not the state's
	} else {
		defer b.notify()
	}
	e.checkedAt, e.recheck = now, false
	if err == nil {
		e.upAt, e.lastErr, e.hint, e.heldUntil = now, "", "", time.Time{}
		if rtt >= 0 { // a use that measured nothing (roads.Unmeasured) leaves the round trips as they were
			e.rtt = rtt
			e.rtts = roads.AppendRTT(e.rtts, float64(rtt.Microseconds())/1000)
		}
		return false
	}
	why := roads.AsDrop(err)
	dropped = e.drop(now, why)
	if h1.IsTimeout(err) {
		e.heldUntil, e.heldCause, e.heldAt = now.Add(c.Road.HoldDown()), fmt.Sprintf("connect to %s timed out after %.1f s", c, c.Road.ConnectTimeout().Seconds()), now
	}
	if dropped {
		b.c.Drops[string(roads.EvidenceOf(why))]++
		b.log.Info("route dropped", "peer", c.Peer, "road", c.Road, "evidence", roads.EvidenceOf(why), "cause", Cause(err), "err", err)
	}
	return dropped
}

// LostRace records that a worse road won a race while c's connect was
// still under way: c is not chosen first until it answers (a late
// connect, a probe), and it is probed at once.
func (b *Book) LostRace(c roads.Candidate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.find(c); e != nil && !e.lostRace() {
		e.lostRaceAt = b.now()
		e.recheck = true
		b.notify()
	}
}

// Cause names the kind of a road failure, for the log and the counters.
func Cause(err error) string {
	var hd *HeldDownError
	var lost *roads.InterfaceLostError
	var pin *roadfacts.MismatchError
	switch {
	case err == nil:
		return "none"
	case errors.As(err, &hd):
		return "HeldDown"
	case h1.IsTimeout(err):
		return "Timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "Refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "Reset"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "Unreachable"
	case errors.As(err, &lost):
		return "InterfaceDown"
	case errors.As(err, &pin):
		return "Forbidden" // the road leads to a computer that is not the peer
	}
	return "Other"
}

// Invalidate drops a road on evidence (reason: a *roads.DropError or a
// roads.InterfaceLostError): it is not chosen again until its hold-down
// time has passed or a probe finds it up. The peer's worse roads believed
// up on a check older than BeliefLifetime (the tailnet's, which lives
// longer) are probed at once: they take the requests now. It reports
// whether the road was dropped now (it was not down already).
func (b *Book) Invalidate(peer string, road roads.Road, reason error) (dropped bool) {
	cause, ev := Cause(reason), roads.EvidenceOf(reason)
	reason = roads.AsDrop(reason)
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.notify()
	now := b.now()
	for _, e := range b.peers[peer] {
		if e.cand.Road != road {
			continue
		}
		if !e.movedAt.IsZero() && now.Sub(e.movedAt) < road.ConnectTimeout() {
			// The road moved to this address moments ago: a failure
			// named by road alone is one of a use begun at the old
			// address (a use of this one reports itself, by address:
			// Report).
			continue
		}
		if e.drop(now, reason) {
			dropped = true
		}
		e.upAt = time.Time{}
	}
	if dropped {
		b.c.Invalidations[cause]++
		b.c.Drops[string(ev)]++
		b.log.Info("route dropped", "peer", peer, "road", road, "evidence", ev, "cause", cause, "err", reason)
	}
	for _, e := range b.peers[peer] {
		if e.cand.Road.Rank() > road.Rank() && e.believedUp(now) && now.Sub(e.checkedAt) >= BeliefLifetime {
			e.recheck = true
		}
	}
	return dropped
}

// Recheck asks for peer's road to be probed at once if it is believed up
// on a check older than age (a peer's own upkeep arrived: this Delta's
// rides along with it). It reports whether it asked.
func (b *Book) Recheck(peer string, road roads.Road, age time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	asked := false
	for _, e := range b.peers[peer] {
		if e.cand.Road == road && !e.offline && !e.recheck && e.believedUp(now) && now.Sub(e.checkedAt) >= age {
			e.recheck, asked = true, true
		}
	}
	if asked {
		b.notify()
	}
	return asked
}

// InterfaceLost drops at once every road over a local interface that went
// down, lost its address or vanished, and returns them (their pooled
// connections are to be closed).
func (b *Book) InterfaceLost(iface string) []roads.Candidate {
	b.mu.Lock()
	var lost []roads.Candidate
	for _, es := range b.peers {
		for _, e := range es {
			if e.cand.Interface == iface && e.cand.Road.Local() {
				lost = append(lost, e.cand)
			}
		}
	}
	b.mu.Unlock()
	for _, c := range lost {
		b.Invalidate(c.Peer, c.Road, &roads.InterfaceLostError{Interface: iface})
	}
	return lost
}

// InterfaceGained starts a burst of probes of every road over iface (or,
// if iface is "", every road): every 100 ms for 3 s, until one answers.
func (b *Book) InterfaceGained(iface string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	until := b.now().Add(BurstFor)
	for _, es := range b.peers {
		for _, e := range es {
			if iface == "" || e.cand.Interface == iface {
				e.burstUntil, e.heldUntil = until, time.Time{}
			}
		}
	}
}

// Due returns the candidates to probe now: never checked, believed up for
// longer than their road's belief lifetime, failed longer than their
// hold-down ago, in a burst, or to be checked again at once (Invalidate,
// Recheck). bursting reports whether a burst is under way (probe again in
// 100 ms).
func (b *Book) Due() (due []roads.Candidate, bursting bool) {
	due, bursting, _ = b.Schedule(BeliefLifetime)
	return due, bursting
}

// Schedule is Due, and how long from now Due stays as it is unless the
// book changes (Changed) or a burst starts (InterfaceGained): until the
// first instant at which a road's belief or failure expires, its
// hold-down or burst ends, or its last check grows old enough to be due;
// at most limit. Both are read at one instant, so that no such instant
// falls between them.
func (b *Book) Schedule(limit time.Duration) (due []roads.Candidate, bursting bool, quiet time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	quiet = limit
	at := func(t time.Time) {
		if d := t.Sub(now); d > 0 && d < quiet {
			quiet = d
		}
	}
	for _, es := range b.peers {
		for _, e := range es {
			if e.offline {
				continue // the tailnet's map says when it is back
			}
			inBurst := now.Before(e.burstUntil)
			bursting = bursting || inBurst
			life := e.cand.Road.BeliefLifetime()
			switch {
			case inBurst,
				e.recheck,
				e.checkedAt.IsZero(),
				e.believedUp(now) && now.Sub(e.checkedAt) >= life,
				!e.believedUp(now) && !e.believedDown(now) && !e.held(now) && now.Sub(e.checkedAt) >= e.cand.Road.HoldDown():
				due = append(due, e.cand)
			}
			// Every instant at which one of the terms above turns. The
			// age of the last check counts only while the rest of its
			// term holds: each other part turns at an instant of its own.
			hd := e.cand.Road.HoldDown()
			at(e.burstUntil)
			if e.believedUp(now) {
				at(e.checkedAt.Add(life))
			}
			if !e.believedUp(now) && !e.believedDown(now) && !e.held(now) {
				at(e.checkedAt.Add(hd))
			}
			at(e.heldUntil)
			if !e.upAt.IsZero() {
				at(e.upAt.Add(life))
			}
			if !e.downAt.IsZero() {
				at(e.downAt.Add(hd))
			}
		}
	}
	return due, bursting, quiet
}

// EndBurst ends the burst of c's road once it answered.
func (b *Book) EndBurst(c roads.Candidate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.find(c); e != nil {
		e.burstUntil = time.Time{}
	}
}

// Won counts a race won by road.
func (b *Book) Won(road roads.Road) {
	b.mu.Lock()
	b.c.RacesWon[string(road)]++
	b.mu.Unlock()
}

// Counters returns a copy of the counts.
func (b *Book) Counters() localapi.RouteCounters {
	b.mu.Lock()
	defer b.mu.Unlock()
	return localapi.RouteCounters{HoldDownRefusals: b.c.HoldDownRefusals, RacesWon: maps.Clone(b.c.RacesWon),
		Invalidations: maps.Clone(b.c.Invalidations), Drops: maps.Clone(b.c.Drops)}
}

// Peers describes every peer's roads, for status.
func (b *Book) Peers() []localapi.PeerStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	names := make([]string, 0, len(b.peers))
	for n := range b.peers {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []localapi.PeerStatus
	for _, n := range names {
		ps := localapi.PeerStatus{Name: n}
		// The current road: the best believed up; while none is, the
		// one Choose takes first.
		usable := ""
		for _, e := range b.peers[n] {
			if e.offline || e.held(now) || e.believedDown(now) {
				continue
			}
			if e.believedUp(now) {
				ps.Road = string(e.cand.Road)
				break
			}
			if usable == "" {
				usable = string(e.cand.Road)
			}
		}
		if ps.Road == "" {
			ps.Road = usable
		}
		for _, e := range b.peers[n] {
			st := localapi.RoadStatus{Road: string(e.cand.Road), Address: e.cand.Address, Interface: e.cand.Interface, State: localapi.RoadUnknown,
				RTTMillis: float64(e.rtt.Microseconds()) / 1000, RecentRTTs: slices.Clone(e.rtts), LastError: e.lastErr, Hint: e.hint, CheckedAt: e.checkedAt}
			if e.lastErr != "" {
				st.LastErrorAt = e.downAt
			}
			if e.dropped != nil {
				st.DroppedAt, st.DroppedWhy, st.DropEvidence = e.droppedAt, e.dropped.Error(), string(roads.EvidenceOf(e.dropped))
			}
			switch {
			case e.believedUp(now):
				st.State = localapi.RoadUp
			case !e.downAt.IsZero() && e.downAt.After(e.upAt):
				st.State = localapi.RoadDown
			}
			if e.held(now) {
				st.HeldDownUntil = e.heldUntil
			}
			if e.offline {
				st.State, st.OfflineSince = localapi.RoadOffline, e.offlineSince
			}
			ps.Roads = append(ps.Roads, st)
		}
		out = append(out, ps)
	}
	return out
}
