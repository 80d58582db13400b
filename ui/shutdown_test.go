package ui

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestShutdownOrder: however a quit comes (the menu, a signal, the
// system's terminate through the exit callback), the gateway is closed
// once; the exit callback waits a bounded time for it; the tray's updates
// stop at once.
func TestShutdownOrder(t *testing.T) {
	t.Run("closed once, whoever asks", func(t *testing.T) {
		var closes atomic.Int32
		want := errors.New("closing failed")
		s := &Shutdown{Close: func() error { closes.Add(1); return want }}
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				if err := s.Finish(); err != want {
					t.Errorf("Finish = %v, want %v", err, want)
				}
			})
		}
		wg.Go(func() {
			if err, done := s.FinishWithin(time.Minute); !done || err != want {
				t.Errorf("FinishWithin = %v, %v", err, done)
			}
		})
		wg.Wait()
		if n := closes.Load(); n != 1 {
			t.Errorf("the gateway was closed %d times, want once", n)
		}
	})
	t.Run("the exit callback's wait is bounded", func(t *testing.T) {
		release := make(chan struct{})
		s := &Shutdown{Close: func() error { <-release; return nil }}
		if _, done := s.FinishWithin(20 * time.Millisecond); done {
			t.Fatal("FinishWithin reported done while Close still ran")
		}
		close(release) // Close ends later; the main path still gets its result
		if err := s.Finish(); err != nil {
			t.Errorf("Finish after a bounded wait: %v", err)
		}
	})
	t.Run("tray updates stop at the quit", func(t *testing.T) {
		s := &Shutdown{Close: func() error { return nil }}
		tray := &blockingTray{shown: make(chan Menu, 1)}
		a := &App{Tray: tray, Quitting: s.Quitting}
		a.show(Menu{Tooltip: "before"})
		if got := <-tray.shown; got.Tooltip != "before" {
			t.Fatalf("shown %q", got.Tooltip)
		}
		s.Begin()
		tray.block = true // a tray call now would never return (the main thread is terminating)
		returned := make(chan struct{})
		go func() { a.show(Menu{Tooltip: "after"}); close(returned) }()
		select {
		case <-returned:
		case <-time.After(10 * time.Second): // a failure, not a wait
			t.Fatal("a menu update during a quit called the tray (and would hang)")
		}
	})
}

// blockingTray is a Tray whose Show blocks for ever once block is set, as
// fyne's calls do on macOS after [NSApp stop:].
type blockingTray struct {
	shown chan Menu
	block bool
}

func (b *blockingTray) Show(m Menu) {
	if b.block {
		select {}
	}
	b.shown <- m
}

func (b *blockingTray) Clicks() <-chan Action { return nil }

// TestQuitWaitsForTrayUpdate: a quit that comes while a tray update runs
// is marked only after it ends (the main loop still serves it then), and
// no update runs after the mark (review A10: the update that checked just
// before the loop stopped hung for ever).
func TestQuitWaitsForTrayUpdate(t *testing.T) {
	sd := &Shutdown{Close: func() error { return nil }}
	inside, release := make(chan struct{}), make(chan struct{})
	updated := make(chan bool)
	go func() {
		updated <- sd.InTray(func() {
			close(inside)
			<-release // a fyne call waiting for the main thread
		})
	}()
	<-inside
	marked := make(chan struct{})
	go func() {
		sd.BeginAfterTray()
		close(marked)
	}()
	select {
	case <-marked:
		t.Fatal("the quit was marked while a tray update was between its check and its call")
	case <-time.After(50 * time.Millisecond):
		// Not marked yet: it waits (a lower bound only, never a timing assertion on success).
	}
	close(release)
	if !<-updated {
		t.Fatal("the update that began before the quit did not run")
	}
	<-marked
	if sd.InTray(func() { t.Error("a tray update ran after the quit was marked") }) {
		t.Fatal("InTray reported an update after the quit")
	}
}
