// Package transfer keeps the transfers under way through this Delta (a
// read's answer, a call's body or answer, a session's bytes), so that a
// long one can be shown with its road, bytes and rate (DESIGN §2a,
// "Transfers are visible"), and open sessions counted.
package transfer

import (
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delta-roads/delta/api/localapi"
)

// Transfer is one transfer under way. Its counts are safe for concurrent
// use.
type Transfer struct {
	Kind    localapi.TransferKind
	Peer    string
	App     string
	Path    string
	Started time.Time

	road  atomic.Value // string
	up    atomic.Int64 // bytes sent towards the peer
	down  atomic.Int64 // bytes received from it
	set   *Set
	began time.Time // on the monotonic clock, for the set's timer
	long  bool      // the set has said it became long (under set.mu)
}

// SetRoad names the road the transfer is on now (a resumed read may move).
func (t *Transfer) SetRoad(road string) { t.road.Store(road) }

// Sent counts n bytes sent towards the peer.
func (t *Transfer) Sent(n int64) { t.up.Add(n) }

// Received counts n bytes received from the peer.
func (t *Transfer) Received(n int64) { t.down.Add(n) }

// Write counts p as received: a Transfer is the io.Writer of what
// arrives.
func (t *Transfer) Write(p []byte) (int, error) { t.down.Add(int64(len(p))); return len(p), nil }

// Done ends the transfer.
func (t *Transfer) Done() { t.set.done(t) }

// Reader counts what is read through r as received (sent, if up).
func (t *Transfer) Reader(r io.Reader, up bool) io.Reader { return &counted{r: r, t: t, up: up} }

type counted struct {
	r  io.Reader
	t  *Transfer
	up bool
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.up {
		c.t.up.Add(int64(n))
	} else {
		c.t.down.Add(int64(n))
	}
	return n, err
}

// Set is the transfers under way. The zero value is not usable: New.
type Set struct {
	now func() time.Time

	mu       sync.Mutex
	running  map[*Transfer]struct{}
	sessions int
	admitted int           // sessions admitted (AdmitSession), opening or open
	changed  chan struct{} // closed when what Long lists changes

	// One timer for the set, not one a transfer: set when a transfer
	// starts and none is set, it fires when the oldest transfer not yet
	// long becomes so (tick). A timer set wakes another thread of the Go
	// runtime when it is the earliest of its processor's, and a timer a
	// transfer was one on every read.
	timer   *time.Timer
	ticking bool // timer is set
}

// MaxSessions bounds the sessions one Delta has at once, those its apps
// opened and those it received together (docs/protocol.md): each holds a
// connection at each end. One more is refused, nothing sent (or nothing
// carried out, at the owner).
var MaxSessions = 512

// AdmitSession admits one more session if fewer than MaxSessions are
// admitted, and returns the release to call when it has ended (once).
func (s *Set) AdmitSession() (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admitted >= MaxSessions {
		return nil, false
	}
	s.admitted++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.admitted--
			s.mu.Unlock()
		})
	}, true
}

// New returns an empty set on clock now (time.Now if nil).
func New(now func() time.Time) *Set {
	if now == nil {
		now = time.Now
	}
	return &Set{now: now, running: map[*Transfer]struct{}{}, changed: make(chan struct{})}
}

// Changed returns a channel that closes at the next change to what Long
// lists or Sessions counts: a transfer that has run for Shown, one of
// those that ended, a session opened or closed. Take a new one after each
// wake-up.
func (s *Set) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Set) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// ShownPath is a path as transfers show it (status, the menu, the page):
// without its query, which may carry a secret (?token=…), marked "?…".
func ShownPath(pathQuery string) string {
	if p, _, ok := strings.Cut(pathQuery, "?"); ok {
		return p + "?…"
	}
	return pathQuery
}

// Start begins a transfer of kind to app on peer, on road.
func (s *Set) Start(kind localapi.TransferKind, peer, app, path, road string) *Transfer {
	t := &Transfer{Kind: kind, Peer: peer, App: app, Path: ShownPath(path), Started: s.now(), began: time.Now(), set: s}
	t.road.Store(road)
	s.mu.Lock()
	s.running[t] = struct{}{}
	if kind == localapi.TransferSession {
		s.sessions++
		s.notifyLocked()
	}
	if !s.ticking {
		s.ticking = true
		if s.timer == nil {
			s.timer = time.AfterFunc(Shown, s.tick)
		} else {
			s.timer.Reset(Shown)
		}
	}
	s.mu.Unlock()
	return t
}

// tick marks the transfers that have run for Shown as long, says so
// (Changed) if any did, and sets the timer for the next one to become
// long, if one runs.
func (s *Set) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Duration
	grew := false
	for t := range s.running {
		if t.long {
			continue
		}
		if rest := Shown - time.Since(t.began); rest > 0 {
			if next == 0 || rest < next {
				next = rest
			}
			continue
		}
		t.long, grew = true, true
	}
	if grew {
		s.notifyLocked()
	}
	if next > 0 {
		s.timer.Reset(next)
	} else {
		s.ticking = false
	}
}

func (s *Set) done(t *Transfer) {
	s.mu.Lock()
	long := t.long
	if _, ok := s.running[t]; ok {
		delete(s.running, t)
		if t.Kind == localapi.TransferSession {
			s.sessions--
		}
		if long || t.Kind == localapi.TransferSession {
			s.notifyLocked()
		}
	}
	s.mu.Unlock()
}

// Sessions counts the open sessions.
func (s *Set) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions
}

// Shown is how long a transfer runs before it is listed.
const Shown = time.Second

// Long lists the transfers that have run for Shown or longer, oldest
// first.
func (s *Set) Long() []localapi.Transfer {
	now := s.now()
	s.mu.Lock()
	ts := make([]*Transfer, 0, len(s.running))
	for t := range s.running {
		if now.Sub(t.Started) >= Shown {
			ts = append(ts, t)
		}
	}
	s.mu.Unlock()
	sort.Slice(ts, func(i, j int) bool { return ts[i].Started.Before(ts[j].Started) })
	out := make([]localapi.Transfer, 0, len(ts))
	for _, t := range ts {
		v := localapi.Transfer{Kind: t.Kind, Peer: t.Peer, App: t.App, Path: t.Path, Road: t.road.Load().(string), Since: t.Started,
			Sent: t.up.Load(), Received: t.down.Load()}
		if secs := now.Sub(t.Started).Seconds(); secs > 0 {
			v.Rate = float64(v.Sent+v.Received) / secs
		}
		out = append(out, v)
	}
	return slices.Clip(out)
}
