package roads

import "sync"

// Signal wakes everyone waiting for the next change. Waiters take C, wait
// for it to close, and take C again; a burst of changes while nobody looks
// wakes them once. The zero Signal is ready to use.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// C returns a channel that is closed at the next Notify.
func (s *Signal) C() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Notify wakes every waiter.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// Watchable is a Router whose Peers can be followed: Changed's channel
// closes at the next change to what Peers returns.
type Watchable interface {
	Changed() <-chan struct{}
}

// StateWatchable is a Watchable that can be followed for its roads'
// states alone: StateChanged's channel closes at the next change to what
// Peers returns other than an up road measured again (a probe or a use
// that found a road up that was up at its last check: only its round
// trips are new). The menu and direct.json follow it; the prober and the
// status page's chart follow Changed.
type StateWatchable interface {
	Watchable
	StateChanged() <-chan struct{}
}

// RecentRTTs is how many round-trip times a road keeps for its chart.
const RecentRTTs = 30

// AppendRTT adds ms to a road's recent round-trip times, keeping the last
// RecentRTTs.
func AppendRTT(rtts []float64, ms float64) []float64 {
	if len(rtts) >= RecentRTTs {
		rtts = append(rtts[:0:0], rtts[len(rtts)-RecentRTTs+1:]...)
	}
	return append(rtts, ms)
}
