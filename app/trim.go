package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// lookEvery is how often Delta looks whether it is quiet: then it unmaps
// the pages of its program it no longer uses, and at every other such
// look (at most every 2 minutes) gives its heap's freed memory back.
const lookEvery = time.Minute

// trimWhenQuiet gives the memory the heap has freed back to the system
// while Delta is quiet (debug.FreeOSMemory), and unmaps the pages of its
// program it no longer uses (dropProgramPages; the first time, dropped
// from the page cache too), until ctx ends.
//
// Why the heap: on Linux, wireguard-go keeps batches of 64 KiB buffers
// (tsnet's magicsock reads 128 datagrams at a time there) that count as
// live heap but are mostly never touched. They put the garbage collector's
// heap goal near 70 MB, and the runtime's scavenger keeps freed pages below
// that goal, so an idle Delta kept about 5 MB of freed pages it never gave
// back. Measured alternately (docs/benchmarks.md, the idle Delta): its own
// memory 15.1–15.5 MB against 21.1–24.9 MB, its CPU within noise. Busy,
// the collector runs often and this does nothing. It is a collection
// (about 11 ms of CPU), hence every 2 minutes only.
//
// Why the program's pages every minute: the tailnet's upkeep round (every
// 5 minutes) uses parts of the program nothing else does, and they stay
// mapped until the next drop (docs/benchmarks.md, "The idle Delta's
// program"); a drop costs a few milliseconds.
func trimWhenQuiet(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(lookEvery)
	defer t.Stop()
	pages, first := true, true
	tr := &trimmer{cycles: gcCycles, free: debug.FreeOSMemory, drop: func() {
		if !pages {
			return
		}
		if _, err := dropProgramPages(first); err != nil {
			pages = false // said once; the heap is still trimmed
			log.Warn("the program's unused pages stay mapped", "err", err)
		}
		first = false
	}}
	tr.run(ctx, t.C)
}

// trimmer is trimWhenQuiet's loop, its runtime calls given.
type trimmer struct {
	cycles func() uint64 // the collections finished so far
	free   func()        // collect and give freed memory back
	drop   func()        // unmap the program's unused pages
	last   uint64        // cycles at the last look
	freed  bool          // the last quiet look freed
}

// run looks at every tick until ctx ends.
func (tr *trimmer) run(ctx context.Context, tick <-chan time.Time) {
	tr.last = tr.cycles()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			tr.look()
		}
	}
}

// look trims when the heap was quiet since the last look: at most one
// collection ran (the runtime forces one every 2 minutes). It drops the
// program's unused pages at each quiet look, and frees the heap at every
// other one (a busy look in between starts the count again). It says
// whether the look was quiet.
func (tr *trimmer) look() bool {
	n := tr.cycles()
	quiet := n-tr.last <= 1
	switch {
	case !quiet:
		tr.freed = false
	case tr.freed:
		tr.freed = false
		tr.drop()
	default:
		tr.freed = true
		tr.free()
		tr.drop()
		n = tr.cycles()
	}
	tr.last = n
	return quiet
}

// gcCycles is the runtime's count of finished collections.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
