package doors

import (
	"log/slog"
	"net"
	"sync"
	"time"
)

// refusalEvery is how often the log speaks of one source's refusals.
const refusalEvery = time.Minute

// RefusalLog writes at most one line per source per minute about the
// requests (or connections) refused at a door: the first refusal with its
// cause, and in the next line how many more came meanwhile. A flood of bad
// requests (20,000 pings without a ticket) costs the log a line a minute,
// not megabytes, in the folder that holds the journal. /metrics counts
// every refusal.
type RefusalLog struct {
	log *slog.Logger
	now func() time.Time

	mu      sync.Mutex
	sources map[string]*refusalSource
}

type refusalSource struct {
	loggedAt time.Time
	more     int // refused since loggedAt, not logged
}

// NewRefusalLog returns a RefusalLog writing to log.
func NewRefusalLog(log *slog.Logger, now func() time.Time) *RefusalLog {
	return &RefusalLog{log: log, now: now}
}

// Refused notes a refusal of remote (an address, with or without a port)
// for err.
func (l *RefusalLog) Refused(remote string, err error) {
	src := remote
	if h, _, e := net.SplitHostPort(remote); e == nil {
		src = h
	}
	now := l.now()
	l.mu.Lock()
	if l.sources == nil {
		l.sources = map[string]*refusalSource{}
	}
	s := l.sources[src]
	if s != nil && now.Sub(s.loggedAt) < refusalEvery {
		s.more++
		l.mu.Unlock()
		return
	}
	more := 0
	if s != nil {
		more = s.more
	}
	l.sources[src] = &refusalSource{loggedAt: now}
	// Forget sources quiet for a while, so the map stays small.
	for k, v := range l.sources {
		if now.Sub(v.loggedAt) > 10*refusalEvery {
			delete(l.sources, k)
		}
	}
	l.mu.Unlock()
	if more > 0 {
		l.log.Warn("refused at the door", "source", src, "err", err, "refused_since_last_line", more, "next_line_in", refusalEvery)
		return
	}
	l.log.Warn("refused at the door", "source", src, "err", err, "next_line_in", refusalEvery)
}
