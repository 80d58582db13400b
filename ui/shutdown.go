package ui

import (
	"sync"
	"time"
)

// Shutdown orders how Delta stops, whichever way it is asked to: "Quit
// Delta" in the menu, a signal, or the system's terminate (logout,
// restart, shutdown, Activity Monitor's Quit, `osascript -e 'quit app'`).
// The last goes through [NSApp terminate:], which runs the tray's exit
// callback and then exit()s the process: the gateway must be closed inside
// that callback, within a bounded time, without touching the tray (the
// main thread is busy terminating, and every tray call waits for it).
//
// Begin marks the quit: from then on the tray's updates return at once
// (Quitting). Finish closes the gateway once, however many ask, and
// returns its error; FinishWithin waits for it at most a while.
type Shutdown struct {
	// Close closes the gateway and whatever runs beside it. Required.
	Close func() error

	// trayMu is held by a tray update from its check of the quit to its
	// last call into the tray (InTray), and by BeginAfterTray around the
	// mark: no update is ever between the two when the main loop stops.
	trayMu sync.Mutex

	mu       sync.Mutex
	quitting bool
	started  bool
	done     chan struct{}
	err      error
}

// Begin marks the quit; Quitting reports it.
func (s *Shutdown) Begin() {
	s.mu.Lock()
	s.quitting = true
	s.mu.Unlock()
}

// BeginAfterTray marks the quit once no tray update is running (QuitSystray,
// before it stops the main loop). A tray call waits for the main thread,
// so an update that had checked Quitting just before the loop stopped
// would hang for ever; with this, none can (MACOS.md #6). It must not run
// on the main thread while an update waits for it: the system's terminate
// path marks the quit with Begin.
func (s *Shutdown) BeginAfterTray() {
	s.trayMu.Lock()
	defer s.trayMu.Unlock()
	s.Begin()
}

// InTray runs update, a change to the tray, unless the quit has begun; it
// reports whether it ran. BeginAfterTray waits for it.
func (s *Shutdown) InTray(update func()) bool {
	s.trayMu.Lock()
	defer s.trayMu.Unlock()
	if s.Quitting() {
		return false
	}
	update()
	return true
}

// Quitting reports whether a quit has begun: tray updates return at once.
func (s *Shutdown) Quitting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quitting
}

// start begins Close once and returns the channel that closes when it
// returns.
func (s *Shutdown) start() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quitting = true
	if !s.started {
		s.started, s.done = true, make(chan struct{})
		go func() {
			err := s.Close()
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			close(s.done)
		}()
	}
	return s.done
}

// Finish closes the gateway (once) and waits for it.
func (s *Shutdown) Finish() error {
	<-s.start()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// FinishWithin closes the gateway (once) and waits for it at most d; done
// is false if it was still closing then (the process is about to exit
// anyway: what was not recorded is recovered at the next start).
func (s *Shutdown) FinishWithin(d time.Duration) (err error, done bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.start():
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.err, true
	case <-t.C:
		return nil, false
	}
}
