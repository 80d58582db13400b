package owner

import (
	"sync"
	"time"
)

// FencesPerMinute caps the fences one caller may have written per minute:
// each question about an id the owner never saw writes one (a 90-day
// record), and a ticket holder asking about random ids would otherwise
// write 2,000 a second. A real caller asks about the calls it could not
// settle, a few at a time; over the cap it is answered 429 and asks again
// later, and nothing is written.
const FencesPerMinute = 600

// FencesPerMinuteInAll caps the fences all callers together may have
// written per minute: fences are 90-day records, and a flood from several
// names would otherwise fill the disk.
const FencesPerMinuteInAll = 3 * FencesPerMinute

// fenceCap counts the fences of the current minute: each caller's, keyed
// by what its holder cannot choose (the caller's name, which the door
// checks: a configured peer in static mode, the tailnet's own name in
// tailnet mode; never the node id a static ticket merely claims), and all
// of them.
type fenceCap struct {
	mu     sync.Mutex
	minute time.Time
	all    int
	seen   map[string]int // by caller name, this minute
}

// allow reports whether caller may have one more fence written at now, and
// counts it if so.
func (f *fenceCap) allow(caller string, now time.Time) bool {
	minute := now.Truncate(time.Minute)
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.minute.Equal(minute) || f.seen == nil {
		// A new minute: every count starts again, so the map holds this
		// minute's callers only.
		f.minute, f.all, f.seen = minute, 0, map[string]int{}
	}
	if f.all >= FencesPerMinuteInAll || f.seen[caller] >= FencesPerMinute {
		return false
	}
	f.all++
	f.seen[caller]++
	return true
}
