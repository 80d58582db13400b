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

// fenceCap counts each caller's fences in the current minute.
type fenceCap struct {
	mu   sync.Mutex
	seen map[string]*fenceCount // by caller node
}

type fenceCount struct {
	minute time.Time
	n      int
}

// allow reports whether caller may have one more fence written at now, and
// counts it if so.
func (f *fenceCap) allow(caller string, now time.Time) bool {
	minute := now.Truncate(time.Minute)
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.seen[caller]
	if c == nil || !c.minute.Equal(minute) {
		if len(f.seen) > 1024 { // callers are one person's computers: forget old minutes
			for k, v := range f.seen {
				if !v.minute.Equal(minute) {
					delete(f.seen, k)
				}
			}
		}
		c = &fenceCount{minute: minute}
		f.seen[caller] = c
	}
	if c.n >= FencesPerMinute {
		return false
	}
	c.n++
	return true
}
