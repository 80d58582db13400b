package routes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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
	if due, _ := b.Due(); len(due) != 3 {
		t.Errorf("after 30 s, %d roads due, want 3", len(due))
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
	if ps := b.Peers(); len(ps[0].Roads) != 2 || ps[0].Roads[0].State != "up" || ps[0].Roads[1].State != "up" || ps[0].Road != roads.Thunderbolt {
		t.Errorf("after Set: %+v", ps)
	}
}

// dialer is a candidate whose connect takes d, then succeeds or fails.
// closed receives its road when its connection is closed.
func dialer(road roads.Road, d time.Duration, fail error, closed chan<- roads.Road) roads.Candidate {
	return roads.Candidate{Peer: "studio", Road: road, Address: string(road), Dial: func(ctx context.Context) (net.Conn, error) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if fail != nil {
			return nil, fail
		}
		a, b := net.Pipe()
		go func() {
			buf := make([]byte, 1)
			b.Read(buf) // returns when a is closed
			closed <- road
		}()
		return a, nil
	}}
}

func TestRace(t *testing.T) {
	closed := make(chan roads.Road, 8)
	lates := make(chan Failure, 8)
	late := func(f Failure, _ net.Conn) { lates <- f }
	// The best road connects within the stagger: nothing else starts.
	rc, _, fails, err := Race(context.Background(), Choice{First: dialer(roads.Thunderbolt, 0, nil, closed), Next: []roads.Candidate{dialer(roads.LAN, 0, nil, closed)}}, 50*time.Millisecond, late)
	if err != nil || rc.Cand.Road != roads.Thunderbolt || len(fails) != 0 {
		t.Fatalf("fast first: %v %v %v", rc, fails, err)
	}
	rc.Close()
	<-closed
	// A silent best road: the next one starts after the stagger and wins;
	// the loser is closed when it connects.
	start := time.Now()
	rc, took, _, err := Race(context.Background(), Choice{First: dialer(roads.Thunderbolt, 300*time.Millisecond, nil, closed), Next: []roads.Candidate{dialer(roads.LAN, 0, nil, closed)}}, 50*time.Millisecond, late)
	if err != nil || rc.Cand.Road != roads.LAN || took >= 300*time.Millisecond {
		t.Fatalf("silent first: %v after %v: %v", rc, took, err)
	}
	_ = start
	if r := <-closed; r != roads.Thunderbolt {
		t.Errorf("closed %s, want the losing thunderbolt connection, closed when it connected", r)
	}
	if l := <-lates; l.Cand.Road != roads.Thunderbolt || l.Err != nil {
		t.Errorf("late: %+v, want thunderbolt connecting late", l)
	}
	rc.Close()
	<-closed
	// A refusal starts the next road at once.
	rc, _, fails, err = Race(context.Background(), Choice{First: dialer(roads.Thunderbolt, 0, syscall.ECONNREFUSED, closed), Next: []roads.Candidate{dialer(roads.Tailnet, 0, nil, closed)}}, time.Hour, late)
	if err != nil || rc.Cand.Road != roads.Tailnet || len(fails) != 1 || !errors.Is(fails[0].Err, syscall.ECONNREFUSED) {
		t.Fatalf("refused first: %v %v %v", rc, fails, err)
	}
	rc.Close()
	<-closed
	// Everything fails: the errors, joined.
	_, _, fails, err = Race(context.Background(), Choice{First: dialer(roads.LAN, 0, syscall.ECONNREFUSED, closed), Next: []roads.Candidate{dialer(roads.Tailnet, 0, errTimeout, closed)}}, time.Millisecond, late)
	if err == nil || len(fails) != 2 || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("all fail: %v %v", fails, err)
	}
}

// A silent loser is seen to time out: late reports it, so it can be held
// down.
func TestRaceReportsSilentLoser(t *testing.T) {
	closed := make(chan roads.Road, 8)
	lates := make(chan Failure, 8)
	rc, _, _, err := Race(context.Background(), Choice{First: dialer(roads.LAN, 200*time.Millisecond, errTimeout, closed), Next: []roads.Candidate{dialer(roads.Tailnet, 0, nil, closed)}},
		20*time.Millisecond, func(f Failure, _ net.Conn) { lates <- f })
	if err != nil || rc.Cand.Road != roads.Tailnet {
		t.Fatalf("%v %v", rc, err)
	}
	rc.Close()
	if l := <-lates; l.Cand.Road != roads.LAN || !IsConnectTimeout(l.Err) {
		t.Errorf("late: %+v, want the lan connect timing out", l)
	}
}
