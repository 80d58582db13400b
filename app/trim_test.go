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

	tick := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tr.run(ctx, tick) }()
	tick <- time.Time{}
	tick <- time.Time{} // taken once the first look is done
	cancel()
	<-done
	if frees.Load() != 6 {
		t.Errorf("after two quiet ticks: %d trims, want 6", frees.Load())
	}
}

// TestTrimmerAboveTheLine: a quiet heap is trimmed only while memory is
// above the line; a busy one is left alone even above it.
func TestTrimmerAboveTheLine(t *testing.T) {
	var gcs, frees atomic.Uint64
	var over atomic.Bool
	tr := &trimmer{cycles: gcs.Load, over: over.Load, free: func() { gcs.Add(1); frees.Add(1) }}
	tr.last = gcs.Load()
	for i, c := range []struct {
		collections uint64
		over        bool
		trimmed     bool
	}{{0, false, false}, {1, false, false}, {0, true, true}, {3, true, false}, {1, true, true}, {0, false, false}} {
		gcs.Add(c.collections)
		over.Store(c.over)
		if got := tr.look(); got != c.trimmed {
			t.Errorf("look %d (%d collections, above the line %v): trimmed %v, want %v", i+1, c.collections, c.over, got, c.trimmed)
		}
	}
	if frees.Load() != 2 {
		t.Errorf("%d trims, want 2", frees.Load())
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
