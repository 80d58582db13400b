// Package gcpace paces the garbage collector by whether Delta is serving
// apps: at Go's default (GOGC=100) while it is quiet, and slower from an
// app's first read or call until the app's trim glance finds it quiet
// again. The heap may then grow by up to Headroom more than the default
// lets it, and to at most four times what was live (GOGC=300).
//
// Why: a read or a call allocates a few hundred small objects on each
// Delta (net/http's heads, header maps, contexts), and a static-mode
// Delta's live heap is a few MB, so at the default the collector runs
// every few MB allocated: under load, marking, sweeping and the
// allocator were about a sixth of each Delta's CPU. Collecting about a
// third as often cut the CPU a read costs on the static pair to 0.82–0.98
// of what it was (docs/benchmarks.md, "The collector paced by load").
// The pace is set from the live heap, not as one percent: a tailnet
// Delta's live heap is larger (wireguard-go's buffers), so its collector
// already runs seldom, and GOGC=300 there grew it to 180 MB under load.
// While quiet the default stays: an idle Delta's memory is held by what
// the collector frees and the app's trim gives back, and the idle goal
// is in MB.
//
// Pacing is off until the app turns it on (Enable), and stays off where
// the environment sets GOGC: a person's or a test's choice is kept. Busy
// is called on every read or call of an app: at the local API, at the
// owner's door and at a forward; not on Delta's own traffic (a road's
// check every 30 s, a hello), which would keep an idle Delta at the busy
// pace. The app calls Settle every 30 s, which lowers the pace when
// nothing was served since, and sets it again from the live heap when
// something was. The collector's percent is process-wide, and so is this
// package's state.
package gcpace

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// While Delta serves, the collector's percent (GOGC) is at most
// BusyPercent (collect when the heap has grown by three times what was
// live after the last collection), and lets the heap grow by at most
// Headroom more than QuietPercent, Go's default, would.
const (
	BusyPercent  = 300
	QuietPercent = 100
	Headroom     = 16 << 20
)

// busyPercent is the pace for a live heap of live bytes (0: not known yet).
func busyPercent(live uint64) int {
	if live == 0 {
		return BusyPercent
	}
	return int(min(BusyPercent, QuietPercent+100*Headroom/live))
}

// Pacer raises and lowers the collector's percent; the package's
// functions use one for the process.
type Pacer struct {
	set  func(int) int // debug.SetGCPercent, or a test's
	live func() uint64 // the live heap's bytes, or a test's

	on     atomic.Bool  // pacing is on
	served atomic.Bool  // Busy was called since the last Settle
	pct    atomic.Int64 // the busy percent set; 0 while at the quiet pace

	mu sync.Mutex // orders the set calls, so that the percent follows pct
}

var std = &Pacer{set: debug.SetGCPercent, live: func() uint64 { return metric("/gc/heap/live:bytes") }}

// Collections is the runtime's count of finished collections.
func Collections() uint64 { return metric("/gc/cycles/total:gc-cycles") }

// metric reads one of the runtime's uint64 metrics (0 if it has none of
// that name).
func metric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// Enable turns pacing on for the process, unless the environment sets
// GOGC. It reports whether pacing is on.
func Enable() bool {
	if _, set := os.LookupEnv("GOGC"); set {
		return false
	}
	std.on.Store(true)
	return true
}

// Busy says an app's read or call is being served. Cheap when pacing is
// off or the percent is already raised: three atomic loads.
func Busy() { std.Busy() }

// Settle says whether an app's read or call was served since the last
// Settle; when none was, the collector goes back to its quiet pace.
func Settle() (served bool) { return std.Settle() }

// Busy raises the percent, the first time since it was last lowered.
func (p *Pacer) Busy() {
	if !p.served.Load() {
		p.served.Store(true)
	}
	if p.pct.Load() != 0 || !p.on.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pct.Load() == 0 {
		pct := busyPercent(p.live())
		p.set(pct)
		p.pct.Store(int64(pct))
	}
}

// Settle reports whether Busy was called since the last Settle. When it
// was, the pace is set again from the live heap (which a load may have
// grown); when it was not, the percent goes back to QuietPercent.
func (p *Pacer) Settle() bool {
	served := p.served.Swap(false)
	if p.pct.Load() == 0 {
		return served
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch cur := p.pct.Load(); {
	case cur == 0:
	case !served:
		p.set(QuietPercent)
		p.pct.Store(0)
	default:
		if pct := busyPercent(p.live()); int64(pct) != cur {
			p.set(pct)
			p.pct.Store(int64(pct))
		}
	}
	return served
}
