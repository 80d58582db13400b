package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/net/gcpace"
)

// TestTrimmer: a quiet heap (no collection, or only the runtime's forced
// one, since the last look) is trimmed; a busy one (several collections)
// is left alone; the loop looks at each tick and ends with its context.
func TestTrimmer(t *testing.T) {
	var gcs, frees atomic.Uint64
	tr := &trimmer{cycles: gcs.Load, free: func() { gcs.Add(1); frees.Add(1) }} // a trim is a collection too
	for _, c := range []struct {
		collections uint64
		quiet       bool
	}{{0, true}, {1, true}, {0, true}, {2, false}, {40, false}, {1, true}} {
		gcs.Add(c.collections)
		if got := tr.look(); got != c.quiet {
			t.Errorf("%d collections since the last look: trimmed %v, want %v", c.collections, got, c.quiet)
		}
	}
	if frees.Load() != 4 {
		t.Errorf("%d trims, want 4", frees.Load())
	}

	// The loop: three glances (memory unread: none trims), then a look.
	tick := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tr.run(ctx, tick, nil) }()
	for range trimEvery/glanceEvery + 1 {
		tick <- time.Time{} // each taken once the tick before is done
	}
	cancel()
	<-done
	if frees.Load() != 5 {
		t.Errorf("after three glances and a look, all quiet: %d trims, want 5", frees.Load())
	}
}

// TestTrimmerAboveTheLine: a quiet heap is trimmed at a look only while
// memory is above the line; a busy one is left alone even above it.
func TestTrimmerAboveTheLine(t *testing.T) {
	var gcs, frees atomic.Uint64
	var rss atomic.Int64
	tr := &trimmer{cycles: gcs.Load, rss: rss.Load, free: func() { gcs.Add(1); frees.Add(1) }}
	tr.last = gcs.Load()
	for i, c := range []struct {
		collections uint64
		rss         int64
		trimmed     bool
	}{{0, 30 << 20, false}, {1, trimAbove, false}, {0, trimAbove + 1, true}, {3, 40 << 20, false}, {1, 40 << 20, true}, {0, 20 << 20, false}, {0, 0, true}} {
		gcs.Add(c.collections)
		rss.Store(c.rss)
		if got := tr.look(); got != c.trimmed {
			t.Errorf("look %d (%d collections, %d bytes resident): trimmed %v, want %v", i+1, c.collections, c.rss, got, c.trimmed)
		}
	}
	if frees.Load() != 3 {
		t.Errorf("%d trims, want 3", frees.Load())
	}
}

// TestTrimmerGlances: a glance trims only above the line, with the heap
// quiet and nothing served since the glance before, and never when
// memory cannot be read; every glance and look settles the collector's
// pace (asks whether anything was served); a look trims whether or not
// something was served.
func TestTrimmerGlances(t *testing.T) {
	var gcs, frees, asked atomic.Uint64
	var rss atomic.Int64
	var served atomic.Bool
	tr := &trimmer{cycles: gcs.Load, rss: rss.Load, free: func() { gcs.Add(1); frees.Add(1) },
		served: func() bool { asked.Add(1); return served.Load() }}
	for i, c := range []struct {
		collections uint64
		rss         int64
		served      bool
		trimmed     bool
	}{
		{0, trimAbove + 1, false, true},
		{0, trimAbove, false, false},
		{1, 40 << 20, true, false},  // served: a light load
		{1, 40 << 20, false, true},  // the glance after
		{2, 40 << 20, false, false}, // the heap busy
		{0, 0, false, false},        // unread
	} {
		gcs.Add(c.collections)
		rss.Store(c.rss)
		served.Store(c.served)
		if got := tr.glance(false); got != c.trimmed {
			t.Errorf("glance %d (%d collections, %d bytes resident, served %v): trimmed %v, want %v", i+1, c.collections, c.rss, c.served, got, c.trimmed)
		}
	}
	if frees.Load() != 2 || asked.Load() != 6 {
		t.Errorf("%d trims and %d asks, want 2 and 6", frees.Load(), asked.Load())
	}
	tr.last = gcs.Load() // a look whose window saw no collection
	served.Store(true)   // a look does not wait for a quiet door
	rss.Store(40 << 20)
	if !tr.look() || asked.Load() != 7 {
		t.Errorf("a look at 40 MB, the heap quiet: did not trim, or did not settle the pace (%d asks)", asked.Load())
	}
}

// TestTrimmerAfterRound: a round of the tailnet's upkeep brings a glance
// afterRound later (the last round's, when several come before it),
// which trims above the line, nothing served, however many collections
// the round made; not when something was served, nor at or below the
// line, nor when memory cannot be read.
func TestTrimmerAfterRound(t *testing.T) {
	var gcs, frees atomic.Uint64
	var rss atomic.Int64
	var served atomic.Bool
	asked := make(chan bool, 16) // each glance's question
	waits := make(chan chan time.Time, 16)
	tr := &trimmer{cycles: gcs.Load, rss: rss.Load, free: func() { gcs.Add(1); frees.Add(1) },
		served: func() bool { asked <- true; return served.Load() },
		wait: func(d time.Duration) <-chan time.Time {
			if d != afterRound {
				t.Errorf("a glance %s after a round, want %s", d, afterRound)
			}
			c := make(chan time.Time, 1)
			waits <- c
			return c
		}}
	rounds := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tr.run(ctx, nil, rounds) }()
	defer func() { cancel(); <-done }()
	// Each step of the loop is waited on for at most 10 s: a loop that
	// does not take it fails the test rather than hanging it.
	within := func() <-chan time.Time { return time.After(10 * time.Second) }
	give := func(what string) {
		select {
		case rounds <- struct{}{}:
		case <-within():
			t.Fatalf("the loop did not take %s", what)
		}
	}
	timer := func(what string) chan time.Time {
		select {
		case c := <-waits:
			return c
		case <-within():
			t.Fatalf("no glance was set after %s", what)
			return nil
		}
	}
	glanced := func(what string) {
		select {
		case <-asked:
		case <-within():
			t.Fatalf("no glance %s", what)
		}
	}

	for i, c := range []struct {
		rss     int64
		served  bool
		trimmed bool
	}{
		{40 << 20, false, true},
		{trimAbove + 1, false, true},
		{40 << 20, true, false}, // an app's read or call since the glance before
		{trimAbove, false, false},
		{0, false, false}, // unread
	} {
		gcs.Add(5) // the round's own collections
		rss.Store(c.rss)
		served.Store(c.served)
		before := frees.Load()
		give("a round")
		first := timer("a round")
		give("a second round") // before the glance: the glance waits for it
		second := timer("a second round")
		first <- time.Time{} // no longer waited on
		second <- time.Time{}
		glanced("after the second round")
		give("a round after the glance") // taken once the glance is done
		served.Store(true)               // the next glance frees nothing
		timer("a round after the glance") <- time.Time{}
		glanced("after the round after the glance")
		if got := frees.Load() - before; got != map[bool]uint64{true: 1, false: 0}[c.trimmed] {
			t.Errorf("round %d (%d bytes resident, served %v): %d trims, want trimmed %v", i+1, c.rss, c.served, got, c.trimmed)
		}
	}
}

// TestGCCycles: the runtime's count of collections, which the trimmer
// reads, moves with a collection; and a trim gives freed memory back.
func TestGCCycles(t *testing.T) {
	before := gcpace.Collections()
	runtime.GC()
	if after := gcpace.Collections(); after <= before {
		t.Fatalf("collections %d, then %d after runtime.GC", before, after)
	}
	released := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	func() { // 16 MiB of garbage, touched
		garbage := make([][]byte, 0, 256)
		for range 256 {
			b := make([]byte, 64<<10)
			b[0] = 1
			garbage = append(garbage, b)
		}
		runtime.KeepAlive(garbage)
	}()
	r0 := released()
	debug.FreeOSMemory()
	if r1 := released(); r1 <= r0 {
		t.Errorf("released heap %d bytes before a trim, %d after", r0, r1)
	}
}
