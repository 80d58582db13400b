package main

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/delta-roads/delta/gateway/net/gcpace"
	"github.com/delta-roads/delta/tools/procmem"
)

// glanceEvery is how often a Delta glances at its memory; every
// trimEvery, a glance is a look.
const (
	glanceEvery = 30 * time.Second
	trimEvery   = 2 * time.Minute
)

// afterRound is how long after the tailnet's round (tailnet.Config's
// AfterRound) Delta glances at its memory: the round's own work (a probe,
// hello, tickets, the status re-read it asks for) is over by then.
const afterRound = 10 * time.Second

// trimAbove is the resident memory above which a quiet Delta trims; at
// or below it, a look or a glance does nothing. It is under the idle goal
// (35 MB, docs/benchmarks.md) by what a Delta's minute work maps again
// between glances, and above what it reaches between the tailnet's
// rounds, so that a trim follows a round and almost nothing else.
const trimAbove = 34 << 20

// trimWhenQuiet, every trimEvery while Delta is quiet and its resident
// memory is above trimAbove, and at any glance (every glanceEvery) when
// it served no app's read or call since the last one and is above
// trimAbove too, gives the memory the heap has freed back to the system
// (debug.FreeOSMemory), and unmaps the pages of its program it no longer
// uses (dropProgramPages; the first time, dropped from the page cache
// too), until ctx ends. Each glance also paces the collector
// (gcpace.Settle): back to its quiet pace once a glance finds nothing
// served since the one before.
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
// The program's pages go at the same trims, not more often: dropped every
// minute, the pages that Delta's minute work uses came back within 15 s
// each time, and the faults that map them again cost 0.03 % of a core
// more than the code before (216.8 against 182.2 ms of CPU in 120 s,
// `perf stat`, side by side; a page fault is dear in this VM), while what
// else they kept mapped (the tailnet's upkeep round, every 5 minutes)
// went a minute sooner (docs/benchmarks.md, "The idle Delta's program").
//
// Only above a line (VmRSS, from /proc/PID/status): each trim cost
// about 35 ms of CPU with the faults that followed it, and a drop every 2
// minutes was a quarter of an idle Delta's CPU, while what the minute
// work maps again between drops keeps it near 30 MB; what takes it above
// is the tailnet's round, every 5 minutes (docs/benchmarks.md, "Sleep
// told by the kernel, and trims only above 32 MB"). Looks alone, every 2
// minutes at 32 MB, left a round's pages mapped for up to 2 minutes,
// above the idle goal, and trimmed between rounds too; a glance every
// 30 s trims a round's pages within a minute, and the line can be
// higher, as it waits for less of the minute work (docs/benchmarks.md,
// "The collector paced by load, and a glance after a round"). A glance
// waits for one with no app's read or call served since the one before
// (gcpace.Settle), so it does not trim under a light load. Where the
// resident memory cannot be read, every quiet look trims, as before, and
// a glance never does.
//
// A round of the tailnet's upkeep (a value on rounds) brings a glance
// afterRound later, which trims above the line when nothing was served
// since the glance before, however many collections the round made:
// without it, a round's pages stayed mapped until the second glance
// after it, above the idle goal for half a minute every 5 minutes; with
// it, for under 15 s, two samples 5 s apart (docs/benchmarks.md, "A
// glance after each round, and each Delta its own program").
func trimWhenQuiet(ctx context.Context, log *slog.Logger, rounds <-chan struct{}) {
	t := time.NewTicker(glanceEvery)
	defer t.Stop()
	pages, first := true, true
	tr := &trimmer{cycles: gcpace.Collections, rss: func() int64 { return procmem.RSS(os.Getpid()) }, served: gcpace.Settle, free: func() {
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
	tr.run(ctx, t.C, rounds)
}

// trimmer is trimWhenQuiet's loop, its runtime calls given.
type trimmer struct {
	cycles func() uint64                        // the collections finished so far
	rss    func() int64                         // the resident memory in bytes (0: cannot be read); nil: never read
	served func() bool                          // whether an app's request was served since it was last asked; nil: none
	free   func()                               // collect and give freed memory back
	wait   func(time.Duration) <-chan time.Time // a timer (nil: time.After)
	last   uint64                               // cycles at the last look
	seen   uint64                               // cycles at the last glance or look
	ticks  int                                  // glances and looks so far
}

// run glances at every tick, and looks at every trimEvery/glanceEvery-th,
// and glances afterRound after the last of a run of rounds (each value
// on rounds), until ctx ends.
func (tr *trimmer) run(ctx context.Context, tick <-chan time.Time, rounds <-chan struct{}) {
	tr.last = tr.cycles()
	tr.seen = tr.last
	wait := tr.wait
	if wait == nil {
		wait = time.After
	}
	var after <-chan time.Time // the glance after a round, when one is due
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			tr.tick()
		case <-rounds:
			after = wait(afterRound)
		case <-after:
			after = nil
			tr.glance(true)
		}
	}
}

// tick is one glance, or a look when one is due. It says whether it freed.
func (tr *trimmer) tick() bool {
	tr.ticks++
	if tr.ticks%int(trimEvery/glanceEvery) == 0 {
		return tr.look()
	}
	return tr.glance(false)
}

// look frees when the heap was quiet since the last look (at most one
// collection ran; the runtime forces one every 2 minutes) and memory is
// above trimAbove (or cannot be read). It says whether it freed.
func (tr *trimmer) look() bool {
	tr.isServed() // paces the collector; a look does not ask for a quiet door
	n := tr.cycles()
	freed := n-tr.last <= 1 && tr.above(trimAbove, true)
	if freed {
		tr.free()
		n = tr.cycles()
	}
	tr.last, tr.seen = n, n
	return freed
}

// glance frees when nothing was served since the last glance, memory is
// above trimAbove, and the heap was quiet since then too, unless this is
// the glance after a round (round: the round's own collections do not
// count). It says whether it freed.
func (tr *trimmer) glance(round bool) bool {
	served := tr.isServed()
	n := tr.cycles()
	freed := !served && (round || n-tr.seen <= 1) && tr.above(trimAbove, false)
	if freed {
		tr.free()
		n = tr.cycles()
		tr.last = n // what the look would have freed is freed
	}
	tr.seen = n
	return freed
}

func (tr *trimmer) isServed() bool { return tr.served != nil && tr.served() }

// above reports whether the resident memory is above line; unread says
// what to answer when it cannot be read.
func (tr *trimmer) above(line int64, unread bool) bool {
	if tr.rss == nil {
		return unread
	}
	n := tr.rss()
	if n == 0 {
		return unread
	}
	return n > line
}
