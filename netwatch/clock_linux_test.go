package netwatch

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// setClockToNow sets the wall clock to what it reads (it goes back by the
// microseconds between the two calls): a set of the clock, as a resume
// from sleep is to the kernel, that moves nothing else. It skips the test
// where the clock cannot be set.
func setClockToNow(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("setting the clock needs root (CI runs as root)")
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &ts); err != nil {
		t.Fatal(err)
	}
	if err := unix.ClockSettime(unix.CLOCK_REALTIME, &ts); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skipf("cannot set the clock here (no CAP_SYS_TIME): %v", err)
		}
		t.Fatal(err)
	}
}

// TestClockSetsTold: the timerfd tells each set of the wall clock, stays
// armed after one, and ends without error at Close.
func TestClockSetsTold(t *testing.T) {
	cs, err := newClockSets()
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i := range 2 {
		setClockToNow(t)
		select {
		case _, ok := <-cs.Sets():
			if !ok {
				t.Fatalf("set %d: the sets ended: %v", i+1, cs.Err())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("set %d of the clock not told within 10 s", i+1)
		}
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-cs.Sets(); ok {
		t.Fatal("a set told after Close")
	}
	if err := cs.Err(); err != nil {
		t.Fatalf("Err after Close: %v", err)
	}
}

// TestMonitorWokeByClockSet: a real monitor, its wall clock reading 2
// minutes ahead (as after a sleep), says Woke at the next set of the
// clock, with no look on a timer.
func TestMonitorWokeByClockSet(t *testing.T) {
	clk := &jumpClock{}
	changes := make(chan Change, 10)
	m, err := start(Options{OnChange: func(_ State, c Change) { changes <- c }, Poll: time.Hour}, newClockSets, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.clock == nil {
		t.Fatal("no clock sets on Linux")
	}
	clk.sleep(2 * time.Minute)
	setClockToNow(t)
	select {
	case c := <-changes:
		if !c.Woke {
			t.Fatalf("a change without Woke: %+v", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no Woke within 10 s of the clock's set")
	}
}
