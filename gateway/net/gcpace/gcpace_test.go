package gcpace

import (
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
)

// TestPacer: the first request raises the percent once; a Settle after a
// request keeps it and says so; the next Settle with nothing served
// lowers it; off, nothing is set.
func TestPacer(t *testing.T) {
	var set []int
	live := uint64(4 << 20)
	p := &Pacer{set: func(n int) int { set = append(set, n); return 0 }, live: func() uint64 { return live }}
	p.Busy()
	if len(set) != 0 || !p.Settle() {
		t.Fatalf("pacing off: set %v, want nothing; Settle must still say a request was served", set)
	}
	p.on.Store(true)
	for range 3 {
		p.Busy()
	}
	if !slices.Equal(set, []int{BusyPercent}) {
		t.Fatalf("three requests: set %v, want [%d]", set, BusyPercent)
	}
	if !p.Settle() || !slices.Equal(set, []int{BusyPercent}) {
		t.Fatalf("the Settle after requests: served false or set %v, want true and [%d]", set, BusyPercent)
	}
	if p.Settle() || !slices.Equal(set, []int{BusyPercent, QuietPercent}) {
		t.Fatalf("a Settle with nothing served: served true or set %v, want false and [%d %d]", set, BusyPercent, QuietPercent)
	}
	if p.Settle() || !slices.Equal(set, []int{BusyPercent, QuietPercent}) {
		t.Fatalf("quiet again: set %v, want it lowered only once", set)
	}
	p.Busy()
	if !slices.Equal(set, []int{BusyPercent, QuietPercent, BusyPercent}) {
		t.Fatalf("a request after the quiet: set %v, want it raised again", set)
	}
	live = 32 << 20 // the load grew the heap: paced again at the next Settle
	p.Busy()
	if !p.Settle() || !slices.Equal(set, []int{BusyPercent, QuietPercent, BusyPercent, 150}) {
		t.Fatalf("32 MB live: set %v, want the pace at 150", set)
	}
	p.Busy()
	if !p.Settle() || len(set) != 4 {
		t.Fatalf("the same live heap: set %v, want nothing set again", set)
	}
}

// TestBusyPercent: the heap may grow by Headroom more than at the default,
// and to at most four times what is live.
func TestBusyPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{{0, 300}, {1, 300}, {4 << 20, 300}, {8 << 20, 300}, {16 << 20, 200}, {32 << 20, 150}, {64 << 20, 125}, {1 << 30, 101}} {
		if got := busyPercent(c.live); got != c.want {
			t.Errorf("live %d bytes: %d, want %d", c.live, got, c.want)
		}
		if c.live > 0 {
			if grow, quiet := c.live*uint64(busyPercent(c.live))/100, c.live; grow > quiet+Headroom || grow > 3*c.live {
				t.Errorf("live %d bytes: the heap may grow by %d, past the default's %d and Headroom", c.live, grow, quiet)
			}
		}
	}
}

// TestPacerConcurrent: requests and settles at once leave the percent
// where the last state says, and raise it once per quiet spell (-race).
func TestPacerConcurrent(t *testing.T) {
	var mu sync.Mutex
	last := 0
	p := &Pacer{set: func(n int) int { mu.Lock(); last = n; mu.Unlock(); return 0 }, live: func() uint64 { return 0 }}
	p.on.Store(true)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				p.Busy()
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			p.Settle()
		}
	})
	wg.Wait()
	want := QuietPercent
	if p.pct.Load() != 0 {
		want = BusyPercent // live 0: not known, so the most
	}
	if last != want {
		t.Fatalf("the pace %d, and the percent last set %d", p.pct.Load(), last)
	}
}

// TestEnable: on unless GOGC is set; Busy marks a request served and the
// process's percent follows.
func TestEnable(t *testing.T) {
	t.Setenv("GOGC", "50")
	if Enable() || std.on.Load() {
		t.Fatal("GOGC set: Enable turned pacing on")
	}
	os.Unsetenv("GOGC") // t.Setenv puts it back as it was
	t.Cleanup(func() { std.on.Store(false); std.Settle(); std.Settle(); debug.SetGCPercent(QuietPercent) })
	if !Enable() {
		t.Fatal("GOGC not set: Enable left pacing off")
	}
	Busy()
	if got := debug.SetGCPercent(BusyPercent); got <= QuietPercent || got > BusyPercent {
		t.Fatalf("after a request the percent is %d, want above %d, at most %d", got, QuietPercent, BusyPercent)
	}
	if !Settle() || Settle() {
		t.Fatal("Settle: want served, then not")
	}
	if got := debug.SetGCPercent(QuietPercent); got != QuietPercent {
		t.Fatalf("settled quiet, the percent is %d, want %d", got, QuietPercent)
	}
}
