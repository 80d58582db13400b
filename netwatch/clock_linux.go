package netwatch

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// tfdClock tells each time the wall clock is set: by a person, by NTP
// stepping it, and at every resume from suspend or hibernation, which
// Linux treats as a set of the clock (kernel/time/timekeeping.c,
// timekeeping_resume: "Notify timerfd as resume is equivalent to
// clock_was_set()"). It is a timerfd on CLOCK_REALTIME armed a century
// ahead with TFD_TIMER_CANCEL_ON_SET, whose read fails with ECANCELED
// after each set; the kernel wakes its reader, so nothing runs between
// sets. timerfd_create(2).
type tfdClock struct {
	f    *os.File
	c    chan struct{}
	done chan struct{}
	once sync.Once
	err  error // why run ended, when not closed; read after done
}

// newClockSets returns the wall clock's sets, or an error when this
// kernel cannot tell them (then the monitor looks at the clocks every
// wakeCheck).
func newClockSets() (clockSets, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_REALTIME, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	if err := armClockSets(fd); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// Non-blocking, so os.File reads it through the runtime's poller: a
	// read parks its goroutine, and Close wakes it.
	w := &tfdClock{f: os.NewFile(uintptr(fd), "timerfd (clock sets)"), c: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w, nil
}

// armClockSets arms fd to expire a century from now, and to be cancelled
// by every set of the wall clock before that.
func armClockSets(fd int) error {
	spec := unix.ItimerSpec{Value: unix.Timespec{Sec: time.Now().AddDate(100, 0, 0).Unix()}}
	if err := unix.TimerfdSettime(fd, unix.TFD_TIMER_ABSTIME|unix.TFD_TIMER_CANCEL_ON_SET, &spec, nil); err != nil {
		return fmt.Errorf("timerfd_settime (cancel on a set of the clock): %w", err)
	}
	return nil
}

func (w *tfdClock) Sets() <-chan struct{} { return w.c }

func (w *tfdClock) Err() error {
	<-w.done
	return w.err
}

func (w *tfdClock) Close() error {
	var err error
	w.once.Do(func() { err = w.f.Close() })
	<-w.done
	return err
}

// run reads the timerfd until it is closed. A read that fails with
// ECANCELED is a set of the clock, and leaves the timer armed for the
// next (the kernel takes the clock's new offset on that read:
// fs/timerfd.c, timerfd_canceled). One that succeeds is the century
// passed: armed again.
func (w *tfdClock) run() {
	defer close(w.done)
	defer close(w.c)
	var b [8]byte
	for {
		_, err := w.f.Read(b[:])
		switch {
		case errors.Is(err, os.ErrClosed):
			return
		case errors.Is(err, unix.ECANCELED):
			select {
			case w.c <- struct{}{}:
			default: // one is waiting already
			}
		case err != nil:
			w.err = fmt.Errorf("reading the timerfd: %w", err)
			return
		default:
			rc, cerr := w.f.SyscallConn()
			if cerr == nil {
				if err := rc.Control(func(fd uintptr) { cerr = armClockSets(int(fd)) }); err != nil {
					cerr = err
				}
			}
			if cerr != nil {
				w.err = cerr
				return
			}
		}
	}
}
