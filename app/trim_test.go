package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

// TestTrimmer: at a quiet look (no collection, or only the runtime's
// forced one, since the last look) the program's pages are dropped, and
// the heap is freed at every other one, counted again after a busy look
// (several collections), which trims nothing; the loop looks at each tick
// and ends with its context.
func TestTrimmer(t *testing.T) {
	var gcs, frees, drops atomic.Uint64
	tr := &trimmer{cycles: gcs.Load, free: func() { gcs.Add(1); frees.Add(1) }, drop: func() { drops.Add(1) }} // a trim is a collection too
	for i, c := range []struct {
		collections  uint64
		quiet, freed bool
	}{{0, true, true}, {1, true, false}, {0, true, true}, {2, false, false}, {40, false, false}, {1, true, true}, {0, true, false}, {3, false, false}, {0, true, true}} {
		gcs.Add(c.collections)
		f, d := frees.Load(), drops.Load()
		if got := tr.look(); got != c.quiet {
			t.Errorf("look %d, %d collections since the last: quiet %v, want %v", i, c.collections, got, c.quiet)
		}
		if freed := frees.Load() > f; freed != c.freed {
			t.Errorf("look %d, %d collections since the last: freed %v, want %v", i, c.collections, freed, c.freed)
		}
		if dropped := drops.Load() > d; dropped != c.quiet {
			t.Errorf("look %d, %d collections since the last: pages dropped %v, want %v", i, c.collections, dropped, c.quiet)
		}
	}

	tick := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tr.run(ctx, tick) }()
	d := drops.Load()
	tick <- time.Time{}
	tick <- time.Time{} // taken once the first look is done
	cancel()
	<-done
	if got := drops.Load() - d; got != 2 {
		t.Errorf("after two quiet ticks: %d drops, want 2", got)
	}
}

// TestGCCycles: the runtime's count of collections, which the trimmer
// reads, moves with a collection; and a trim gives freed memory back.
func TestGCCycles(t *testing.T) {
	before := gcCycles()
	runtime.GC()
	if after := gcCycles(); after <= before {
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
