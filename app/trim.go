package main

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/delta-roads/delta/tools/procmem"
)

// trimEvery is how often a quiet Delta looks at its memory.
const trimEvery = 2 * time.Minute

// trimAbove is the resident memory above which a quiet Delta trims; at
// or below it, a look does nothing. It is under the idle goal (35 MB,
// docs/benchmarks.md) by what a Delta's minute work maps again between
// looks.
const trimAbove = 32 << 20

// trimWhenQuiet, every trimEvery while Delta is quiet and its resident
// memory is above trimAbove, gives the memory the heap has freed back to
// the system (debug.FreeOSMemory), and unmaps the pages of its program it
// no longer uses (dropProgramPages; the first time, dropped from the page
// cache too), until ctx ends.
//
// Why: on Linux, wireguard-go keeps batches of 64 KiB buffers (tsnet's
// magicsock reads 128 datagrams at a time there) that count as live heap
// but are mostly never touched. They put the garbage collector's heap goal
// near 70 MB, and the runtime's scavenger keeps freed pages below that
// goal, so an idle Delta kept about 5 MB of freed pages it never gave
// back. Measured alternately (docs/benchmarks.md, the idle Delta): its own
// memory 15.1–15.5 MB against 21.1–24.9 MB, its CPU within noise. Busy,
// the collector runs often and this does nothing.
//
// The program's pages go at the same looks, not more often: dropped every
// minute, the pages that Delta's minute work uses came back within 15 s
// each time, and the faults that map them again cost 0.03 % of a core
// more than the code before (216.8 against 182.2 ms of CPU in 120 s,
// `perf stat`, side by side; a page fault is dear in this VM), while what
// else they kept mapped (the tailnet's upkeep round, every 5 minutes)
// went a minute sooner (docs/benchmarks.md, "The idle Delta's program").
//
// Only above trimAbove (VmRSS, from /proc/PID/status): each trim cost
// about 35 ms of CPU with the faults that followed it, and a drop every 2
// minutes was a quarter of an idle Delta's CPU, while what the minute
// work maps again between drops keeps it near 30 MB; what takes it above
// is the tailnet's round, every 5 minutes, whose pages the next look
// drops (docs/benchmarks.md, "Sleep told by the kernel, and trims only
// above 32 MB"). Where the resident memory cannot be read, every quiet
// look trims, as before.
func trimWhenQuiet(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(trimEvery)
	defer t.Stop()
	pages, first := true, true
	tr := &trimmer{cycles: gcCycles, over: func() bool {
		n := procmem.RSS(os.Getpid()) // 0: cannot be read
		return n == 0 || n > trimAbove
	}, free: func() {
		debug.FreeOSMemory()
		if !pages {
			return
		}
		if _, err := dropProgramPages(first); err != nil {
			pages = false // said once; the rest still trims
			log.Warn("the program's unused pages stay mapped", "err", err)
		}
		first = false
	}}
	tr.run(ctx, t.C)
}

// trimmer is trimWhenQuiet's loop, its runtime calls given.
type trimmer struct {
	cycles func() uint64 // the collections finished so far
	over   func() bool   // whether memory is above the line; nil: always
	free   func()        // collect and give freed memory back
	last   uint64        // cycles at the last look
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

// look frees when the heap was quiet since the last look (at most one
// collection ran; the runtime forces one every 2 minutes) and memory is
// above the line. It says whether it freed.
func (tr *trimmer) look() bool {
	n := tr.cycles()
	freed := n-tr.last <= 1 && (tr.over == nil || tr.over())
	if freed {
		tr.free()
		n = tr.cycles()
	}
	tr.last = n
	return freed
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
