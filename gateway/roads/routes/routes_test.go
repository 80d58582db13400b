package routes

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/roads"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func cands() []roads.Candidate {
	return []roads.Candidate{
		{Peer: "studio", Road: roads.Tailnet, Address: "100.64.0.2:7421"},
		{Peer: "studio", Road: roads.LAN, Address: "192.168.1.20:7422", Interface: "en0"},
		{Peer: "studio", Road: roads.Thunderbolt, Address: "169.254.3.2:7422", Interface: "bridge0"},
	}
}

var errTimeout = fmt.Errorf("dial tcp: %w", os.ErrDeadlineExceeded)

func TestChoose(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := New(clk.now, nil)
	b.Set("studio", cands())
	tb, lan := cands()[2], cands()[1]

	ch, err := b.Choose("studio", "")
	if err != nil || ch.First.Road != roads.Thunderbolt || len(ch.Next) != 2 || ch.Next[0].Road != roads.LAN {
		t.Fatalf("fresh book: %+v %v; want thunderbolt, then lan and tailnet", ch, err)
	}
	// Refused: skipped (unpinned) until its hold-down time passes; no
	// hold-down, so pinned it is tried.
	b.Report(tb, 0, syscall.ECONNREFUSED)
	if ch, _ := b.Choose("studio", ""); ch.First.Road != roads.LAN {
		t.Errorf("after a refusal: first %s, want lan", ch.First.Road)
	}
	if ch, err := b.Choose("studio", roads.Thunderbolt); err != nil || ch.First.Road != roads.Thunderbolt || len(ch.Next) != 0 {
		t.Errorf("pinned after a refusal: %+v %v", ch, err)
	}
	clk.add(roads.Thunderbolt.HoldDown())
	if ch, _ := b.Choose("studio", ""); ch.First.Road != roads.Thunderbolt {
		t.Errorf("after the hold-down time: first %s, want thunderbolt again", ch.First.Road)
	}
	// A connect timeout arms a hold-down: pinned callers fail at once.
	b.Report(lan, 0, errTimeout)
	_, err = b.Choose("studio", roads.LAN)
	var hd *HeldDownError
	if !errors.As(err, &hd) || hd.Left != roads.LAN.HoldDown() || !strings.Contains(err.Error(), "connect to studio via lan (192.168.1.20:7422 on en0) timed out after 3.0 s") ||
		!strings.Contains(err.Error(), "not dialing it again for another 5 s") {
		t.Fatalf("pinned during a hold-down: %v", err)
	}
	if b.Counters().HoldDownRefusals != 1 {
		t.Errorf("hold-down refusals %d", b.Counters().HoldDownRefusals)
	}
	clk.add(roads.LAN.HoldDown())
	if _, err := b.Choose("studio", roads.LAN); err != nil {
		t.Errorf("after the hold-down: %v", err)
	}
	// Excluded roads are skipped; when nothing is left: ErrNoRoad.
	if _, err := b.Choose("studio", "", roads.Thunderbolt, roads.LAN, roads.Tailnet); !errors.Is(err, roads.ErrNoRoad) {
		t.Errorf("all excluded: %v", err)
	}
	if _, err := b.Choose("nobody", ""); !errors.Is(err, roads.ErrUnknownPeer) {
		t.Errorf("unknown peer: %v", err)
	}
}

// TestStandbyTailnet: the tailnet's belief lives 5 min, the map's online
// state standing in between probes; when a better road to the peer is
// dropped, the tailnet road is probed at once if its last check is older
// than a local road's belief lifetime, since it now takes the requests.
func TestStandbyTailnet(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := New(clk.now, nil)
	b.Set("studio", cands())
	tailnet, lan, tb := cands()[0], cands()[1], cands()[2]
	// dueRoads are the roads due now, by name, in the book's order.
	dueRoads := func(due []roads.Candidate) string {
		var s []string
		for _, c := range due {
			s = append(s, string(c.Road))
		}
		slices.Sort(s)
		return strings.Join(s, " ")
	}
	for _, c := range cands() {
		b.Report(c, time.Millisecond, nil)
	}
	state := func(road roads.Road) localapi.RoadState {
		for _, r := range b.Peers()[0].Roads {
			if r.Road == string(road) {
				return r.State
			}
		}
		return ""
	}
	// The local roads are probed every 30 s; the tailnet's is not due,
	// and still shown up, for 5 min.
	for i := 1; i <= 9; i++ {
		clk.add(BeliefLifetime)
		if due, _ := b.Due(); dueRoads(due) != "lan thunderbolt" {
			t.Fatalf("after %s: due %q, want the two local roads", BeliefLifetime*time.Duration(i), dueRoads(due))
		}
		b.Report(lan, time.Millisecond, nil)
		b.Report(tb, time.Millisecond, nil)
		if _, _, quiet := b.Schedule(time.Hour); quiet != BeliefLifetime {
			t.Fatalf("after %s: quiet %s, want %s", BeliefLifetime*time.Duration(i), quiet, BeliefLifetime)
		}
		if s := state(roads.Tailnet); s != localapi.RoadUp {
			t.Fatalf("the tailnet road after %s: %s, want up", BeliefLifetime*time.Duration(i), s)
		}
	}
	clk.add(BeliefLifetime)
	if due, _ := b.Due(); dueRoads(due) != "lan tailnet thunderbolt" {
		t.Fatalf("after 5 min: due %q, want every road", dueRoads(due))
	}
	b.Report(tailnet, time.Millisecond, nil)
	b.Report(lan, time.Millisecond, nil)
	b.Report(tb, time.Millisecond, nil)

	// The cable dropped moments after the tailnet's check: nothing more
	// to probe (the thunderbolt road waits for its hold-down).
	clk.add(10 * time.Second)
	b.InterfaceLost("bridge0")
	if due, _ := b.Due(); len(due) != 0 {
		t.Errorf("the cable dropped 10 s after the tailnet's check: due %q, want none", dueRoads(due))
	}
	// The lan dropped a minute after the tailnet's check: the tailnet
	// road is probed now.
	clk.add(time.Minute)
	b.Report(lan, time.Millisecond, nil)
	b.Invalidate("studio", roads.LAN, errTimeout)
	if due, _ := b.Due(); dueRoads(due) != "tailnet thunderbolt" {
		t.Errorf("the lan dropped a minute after the tailnet's check: due %q, want the tailnet road (and the thunderbolt road, its hold-down over)", dueRoads(due))
	}
	b.Report(tailnet, time.Millisecond, nil)
	b.Report(tb, 0, syscall.ECONNREFUSED)
	if due, _ := b.Due(); len(due) != 0 {
		t.Errorf("after the tailnet's probe: due %q, want none", dueRoads(due))
	}
	// Dropping the tailnet road itself asks for nothing more.
	b.Invalidate("studio", roads.Tailnet, errTimeout)
	if due, _ := b.Due(); len(due) != 0 {
		t.Errorf("the tailnet dropped: due %q, want none", dueRoads(due))
	}

	// The map says the peer went offline and came back a minute later:
	// the tailnet road's answer from before is not believed any more; it
	// is probed at once.
	clk.add(time.Second)
	b.Report(tailnet, time.Millisecond, nil)
	if s := state(roads.Tailnet); s != localapi.RoadUp {
		t.Fatalf("the tailnet road answered: %s", s)
	}
	b.SetOffline("studio", roads.Tailnet, true, clk.now())
	if s := state(roads.Tailnet); s != localapi.RoadOffline {
		t.Errorf("the tailnet road while the map says offline: %s", s)
	}
	clk.add(time.Minute)
	b.Report(lan, time.Millisecond, nil)
	b.Report(tb, time.Millisecond, nil)
	b.SetOffline("studio", roads.Tailnet, false, time.Time{})
	if s := state(roads.Tailnet); s != localapi.RoadUnknown {
		t.Errorf("the tailnet road back online: %s, want unknown until it answers", s)
	}
	if due, _ := b.Due(); dueRoads(due) != "tailnet" {
		t.Errorf("back online: due %q, want the tailnet road", dueRoads(due))
	}
}

func TestBeliefsAndProbes(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := New(clk.now, nil)
	b.Set("studio", cands())
	due, _ := b.Due()
	if len(due) != 3 {
		t.Fatalf("never-checked roads due: %d", len(due))
	}
	for _, c := range cands() {
		b.Report(c, time.Millisecond, nil)
	}
	if due, _ := b.Due(); len(due) != 0 {
		t.Errorf("fresh beliefs due: %v", due)
	}
	clk.add(BeliefLifetime)
	if due, _ := b.Due(); len(due) != 2 || slices.ContainsFunc(due, func(c roads.Candidate) bool { return c.Road == roads.Tailnet }) {
		t.Errorf("after 30 s, due %v, want the thunderbolt and lan roads (the tailnet's belief lives 5 min)", due)
	}
	clk.add(roads.Tailnet.BeliefLifetime() - BeliefLifetime)
	if due, _ := b.Due(); len(due) != 3 {
		t.Errorf("after 5 min, %d roads due, want 3", len(due))
	}
	for _, c := range cands() {
		b.Report(c, time.Millisecond, nil)
	}
	lost := b.InterfaceLost("bridge0")
	if len(lost) != 1 || lost[0].Road != roads.Thunderbolt {
		t.Fatalf("roads over bridge0: %v", lost)
	}
	if ch, _ := b.Choose("studio", ""); ch.First.Road != roads.LAN {
		t.Errorf("after bridge0 went down: %s", ch.First.Road)
	}
	if b.Counters().Invalidations["InterfaceDown"] != 1 {
		t.Errorf("invalidations %v", b.Counters().Invalidations)
	}
	b.InterfaceGained("bridge0")
	due, bursting := b.Due()
	if !bursting || len(due) != 1 || due[0].Road != roads.Thunderbolt {
		t.Errorf("after bridge0 came up: due %v bursting %v", due, bursting)
	}
	clk.add(BurstEvery)
	b.Report(cands()[2], time.Millisecond, nil)
	b.EndBurst(cands()[2])
	if _, bursting := b.Due(); bursting {
		t.Errorf("still bursting after the road answered")
	}
	if ch, _ := b.Choose("studio", ""); ch.First.Road != roads.Thunderbolt {
		t.Errorf("after bridge0 answered: %s", ch.First.Road)
	}
	// Set keeps what is known of unchanged candidates.
	b.Set("studio", cands()[1:])
	if ps := b.Peers(); len(ps[0].Roads) != 2 || ps[0].Roads[0].State != localapi.RoadUp || ps[0].Roads[1].State != localapi.RoadUp || ps[0].Road != string(roads.Thunderbolt) {
		t.Errorf("after Set: %+v", ps)
	}
}

// Cause names a failure by its type, never by its words; a failure macOS's
// Local Network privacy likely caused is shown with its hint.
func TestCauseAndHint(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, "none"},
		{&roads.InterfaceLostError{Interface: "en0"}, "InterfaceDown"},
		{fmt.Errorf("dial: %w", &pintls.MismatchError{Addr: "10.0.0.2:7422", Want: "aa", Got: "bb"}), "Forbidden"},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), "Refused"},
		{fmt.Errorf("dial: %w", syscall.EHOSTUNREACH), "Unreachable"},
		{errors.New("an interface of words, a certificate of prose, a door"), "Other"},
	} {
		if got := Cause(tc.err); got != tc.want {
			t.Errorf("Cause(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
	b := New(nil, nil)
	lan := roads.Candidate{Peer: "studio", Road: roads.LAN, Address: "10.0.0.2:7422", Interface: "en0"}
	b.Set("studio", []roads.Candidate{lan})
	b.Report(lan, 0, fmt.Errorf("connect: %w (%w)", syscall.EHOSTUNREACH, roads.ErrLocalNetwork))
	if r := b.Peers()[0].Roads[0]; r.Hint != localapi.HintLocalNetwork || r.State != localapi.RoadDown {
		t.Errorf("after a connect Local Network blocked: %+v", r)
	}
	b.Report(lan, time.Millisecond, nil)
	if r := b.Peers()[0].Roads[0]; r.Hint != "" || r.State != localapi.RoadUp {
		t.Errorf("after it answered: %+v", r)
	}
}

// TestInvalidateAfterAMove: a road whose address just changed (Set with a
// new address, as local discovery moves it) is not dropped by a failure
// named by road alone within its connect timeout: that failure is of a use
// begun at the old address. After the timeout, or for a road that did not
// move, Invalidate drops it as ever; a failure of the new address itself
// (Report) always counts.
func TestInvalidateAfterAMove(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := New(clk.now, nil)
	b.Set("studio", cands())
	moved := cands()
	moved[1].Address = "192.168.1.30:7422"
	b.Set("studio", moved)
	state := func(road roads.Road) localapi.RoadState {
		for _, r := range b.Peers()[0].Roads {
			if r.Road == string(road) {
				return r.State
			}
		}
		return ""
	}
	b.Invalidate("studio", roads.LAN, errors.New("a read broke off at the old address"))
	if s := state(roads.LAN); s == localapi.RoadDown {
		t.Fatal("the moved road was dropped for its old address's failure")
	}
	b.Invalidate("studio", roads.Thunderbolt, errors.New("cable pulled"))
	if s := state(roads.Thunderbolt); s != localapi.RoadDown {
		t.Fatalf("a road that did not move, invalidated: %s", s)
	}
	b.Report(moved[1], 0, syscall.ECONNREFUSED)
	if s := state(roads.LAN); s != localapi.RoadDown {
		t.Fatalf("the new address's own failure: %s", s)
	}
	b.Report(moved[1], time.Millisecond, nil)
	clk.add(roads.LAN.ConnectTimeout())
	b.Invalidate("studio", roads.LAN, errors.New("a read broke off"))
	if s := state(roads.LAN); s != localapi.RoadDown {
		t.Fatalf("after the connect timeout, invalidated: %s", s)
	}
}

// TestScheduleQuiet: Schedule says how long Due stays as it is: until the
// next belief expires, or a failed road's hold-down has passed.
func TestScheduleQuiet(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := New(clk.now, nil)
	if _, _, quiet := b.Schedule(time.Minute); quiet != time.Minute {
		t.Errorf("an empty book: quiet %s, want the limit", quiet)
	}
	b.Set("studio", cands())
	if due, _, quiet := b.Schedule(BeliefLifetime); len(due) != 3 || quiet != BeliefLifetime {
		t.Errorf("never checked: due %v, quiet %s", due, quiet)
	}
	for _, c := range cands() {
		b.Report(c, time.Millisecond, nil)
	}
	clk.add(10 * time.Second)
	if due, _, quiet := b.Schedule(time.Minute); len(due) != 0 || quiet != BeliefLifetime-10*time.Second {
		t.Errorf("believed up 10 s ago: due %v, quiet %s, want %s", due, quiet, BeliefLifetime-10*time.Second)
	}
	b.Report(cands()[1], 0, syscall.ECONNREFUSED)
	if due, _, quiet := b.Schedule(time.Minute); len(due) != 0 || quiet != roads.LAN.HoldDown() {
		t.Errorf("the lan road refused just now: due %v, quiet %s, want its hold-down %s", due, quiet, roads.LAN.HoldDown())
	}
	clk.add(roads.LAN.HoldDown())
	if due, _, _ := b.Schedule(time.Minute); len(due) != 1 || due[0].Road != roads.LAN {
		t.Errorf("the lan road's hold-down passed: due %v", due)
	}
}

// TestScheduleHolds: in many books of roads in every state, Due gives the
// same roads at every instant of the quiet span Schedule named (so the
// prober misses nothing by sleeping through it), and many spans end with
// a change of what is due (so they are not shorter than they need be).
func TestScheduleHolds(t *testing.T) {
	key := func(cs []roads.Candidate) string {
		var ks []string
		for _, c := range cs {
			ks = append(ks, c.Peer+"/"+string(c.Road))
		}
		slices.Sort(ks)
		return strings.Join(ks, " ")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	steps := []time.Duration{0, time.Millisecond, time.Second, 3 * time.Second, 5 * time.Second, 17 * time.Second, BeliefLifetime}
	turned := 0
	for book := range 300 {
		clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		b := New(clk.now, nil)
		peers := []string{"studio", "mini"}
		for _, p := range peers {
			var cs []roads.Candidate
			for _, c := range cands() {
				c.Peer = p
				cs = append(cs, c)
			}
			b.Set(p, cs)
		}
		for range 12 {
			clk.add(steps[rng.IntN(len(steps))])
			c := cands()[rng.IntN(3)]
			c.Peer = peers[rng.IntN(2)]
			switch rng.IntN(6) {
			case 0, 1:
				b.Report(c, time.Millisecond, nil)
			case 2:
				b.Report(c, 0, syscall.ECONNREFUSED)
			case 3:
				b.Report(c, 0, errTimeout)
			case 4:
				b.Invalidate(c.Peer, c.Road, errors.New("a use failed"))
			case 5:
				b.InterfaceGained(c.Interface)
			}
		}
		t0 := clk.now()
		due, bursting, quiet := b.Schedule(BeliefLifetime)
		if bursting {
			continue // probed every BurstEvery meanwhile
		}
		want := key(due)
		for _, off := range []time.Duration{0, time.Nanosecond, quiet / 3, quiet / 2, quiet - time.Nanosecond} {
			clk.t = t0.Add(off)
			if got, _ := b.Due(); key(got) != want {
				t.Fatalf("book %d: %s into a quiet span of %s, due %q; at its start %q", book, off, quiet, key(got), want)
			}
		}
		clk.t = t0.Add(quiet)
		if got, _ := b.Due(); key(got) != want {
			turned++
		}
	}
	if turned < 50 {
		t.Errorf("%d quiet spans of 300 ended with a change of what is due: the spans are shorter than they need be", turned)
	}
}

// TestStateChangedLeavesOutRoundTrips: a report that only measures an up
// road again (the periodic probe, a use) wakes Changed's followers (the
// prober, the chart) but not StateChanged's (the menu, direct.json);
// every report that changes what a road shows wakes both.
func TestStateChangedLeavesOutRoundTrips(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := New(clk.now, nil)
	b.Set("studio", cands())
	lan := cands()[1]
	life := lan.Road.BeliefLifetime()
	woke := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	for _, step := range []struct {
		what      string
		after     time.Duration
		err       error
		wantState bool
	}{
		{"first answer", 0, nil, true},
		{"answered again at once", time.Second, nil, false},
		{"answered again as its belief ends (the periodic probe)", life + 2*time.Second, nil, false},
		{"failed", time.Second, errTimeout, true},
		{"held down, answered", 100 * time.Millisecond, nil, true},
		{"answered again", time.Second, nil, false},
		{"answered after two lifetimes unchecked", 2*life + time.Second, nil, true},
		{"refused", time.Second, syscall.ECONNREFUSED, true},
		{"refused again", time.Second, syscall.ECONNREFUSED, true},
		{"answered after a refusal", time.Second, nil, true},
	} {
		clk.add(step.after)
		changed, state := b.Changed(), b.StateChanged()
		b.Report(lan, time.Millisecond, step.err)
		if !woke(changed) {
			t.Errorf("%s: Changed did not wake", step.what)
		}
		if got := woke(state); got != step.wantState {
			t.Errorf("%s: StateChanged woke %t, want %t", step.what, got, step.wantState)
		}
	}
	state := b.StateChanged()
	b.Invalidate("studio", roads.LAN, errors.New("interface en0 went down"))
	if !woke(state) {
		t.Error("an invalidated road did not wake StateChanged")
	}
}

// TestLostRace: a road that lost a race while connecting goes behind the
// roads that did not, and is probed at once, until it answers (a late
// connect, a probe); then it is first again.
func TestLostRace(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := New(clk.now, nil)
	b.Set("studio", cands())
	tb := cands()[2]
	b.LostRace(tb)
	ch, err := b.Choose("studio", "")
	if err != nil || ch.First.Road != roads.LAN || len(ch.Next) != 2 || ch.Next[1].Road != roads.Thunderbolt {
		t.Fatalf("after thunderbolt lost a race: %+v %v; want lan, then tailnet, then thunderbolt", ch, err)
	}
	if due, _ := b.Due(); !slices.ContainsFunc(due, func(c roads.Candidate) bool { return c.Road == roads.Thunderbolt }) {
		t.Errorf("a road that lost a race is not probed at once: due %v", due)
	}
	if ch, _ := b.Choose("studio", roads.Thunderbolt); ch.First.Road != roads.Thunderbolt {
		t.Errorf("pinned to a road that lost a race: %+v", ch)
	}
	clk.add(time.Second)
	b.Report(tb, 3*time.Millisecond, nil) // its connect came in late
	if ch, _ := b.Choose("studio", ""); ch.First.Road != roads.Thunderbolt {
		t.Errorf("after it answered: first %s, want thunderbolt", ch.First.Road)
	}
}

// TestDropsAreNewsOnce: a failure drops a road (logged, counted and told)
// only when it was not down already; what dropped it stays shown when the
// road is up again, and when it moves to another address; an answer that
// measured nothing (roads.Unmeasured) keeps the round trips.
func TestDropsAreNewsOnce(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := New(clk.now, nil)
	b.Set("studio", cands())
	lan := cands()[1]
	b.Report(lan, 2*time.Millisecond, nil)
	clk.add(time.Second)
	if !b.Report(lan, 0, &roads.DropError{Evidence: roads.EvidenceProbe, Err: syscall.ECONNREFUSED}) {
		t.Fatal("a road up, then its probe failed: not dropped")
	}
	clk.add(time.Second)
	if b.Report(lan, 0, syscall.ECONNREFUSED) || b.Invalidate("studio", roads.LAN, &roads.DropError{Evidence: roads.EvidenceKeepalive, Err: syscall.ETIMEDOUT}) {
		t.Error("a road down already was dropped again")
	}
	if got := b.Counters().Drops; got["probe"] != 1 || len(got) != 1 {
		t.Errorf("drops %v, want one on a probe's evidence", got)
	}
	clk.add(time.Minute)
	b.Report(lan, time.Millisecond, nil)
	moved := lan
	moved.Address = "192.168.1.21:7422"
	b.Set("studio", []roads.Candidate{cands()[0], moved, cands()[2]})
	for _, p := range b.Peers() {
		for _, r := range p.Roads {
			if r.Road != string(roads.LAN) {
				continue
			}
			if r.DropEvidence != "probe" || !strings.Contains(r.DroppedWhy, "its probe failed") || r.DroppedAt.IsZero() {
				t.Errorf("the lan road, up again and moved: dropped %q %q at %v; want its last drop still shown", r.DropEvidence, r.DroppedWhy, r.DroppedAt)
			}
		}
	}
	b2 := New(clk.now, nil)
	b2.Set("studio", cands())
	b2.Report(lan, 2*time.Millisecond, nil)
	b2.Report(lan, roads.Unmeasured, nil)
	if st := b2.Peers()[0].Roads; !slices.ContainsFunc(st, func(r localapi.RoadStatus) bool { return r.Road == "lan" && r.RTTMillis == 2 && len(r.RecentRTTs) == 1 }) {
		t.Errorf("an unmeasured answer changed the round trips: %+v", st)
	}
}
