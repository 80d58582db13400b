package netwatch

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestSlept(t *testing.T) {
	t0 := time.Now()
	w0, m0 := t0.Round(0), t0
	for _, tc := range []struct {
		name       string
		wall, mono time.Duration // each clock's move since the last reading
		want       bool
	}{
		{"awake a minute", time.Minute, time.Minute, false},
		{"a clock stepped 3 s by NTP", 3*time.Second + time.Minute, time.Minute, false},
		{"10 s exactly", 10*time.Second + time.Minute, time.Minute, false},
		{"asleep 11 s", 11 * time.Second, 0, true},
		{"asleep an hour, then 5 s awake", time.Hour + 5*time.Second, 5 * time.Second, true},
		{"the clock set back an hour", -time.Hour, time.Second, false},
	} {
		if got := slept(w0, m0, w0.Add(tc.wall), m0.Add(tc.mono)); got != tc.want {
			t.Errorf("%s: slept %v, want %v", tc.name, got, tc.want)
		}
	}
}

// fakeSets is a clockSets a test sends on.
type fakeSets struct {
	c      chan struct{}
	err    error
	closed chan struct{}
	once   sync.Once
}

func (f *fakeSets) Sets() <-chan struct{} { return f.c }
func (f *fakeSets) Err() error            { return f.err }
func (f *fakeSets) Close() error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

// jumpClock reads the real clocks, its wall clock moved by jump.
type jumpClock struct {
	mu   sync.Mutex
	jump time.Duration
}

func (j *jumpClock) now() (time.Time, time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := time.Now()
	return n.Round(0).Add(j.jump), n
}

func (j *jumpClock) sleep(d time.Duration) {
	j.mu.Lock()
	j.jump += d
	j.mu.Unlock()
}

// TestMonitorClockSets: the monitor looks at the clocks at each set of
// the wall clock, says Woke only for a jump of sleep's size, and looks
// every wakeCheck once the sets stop being told.
func TestMonitorClockSets(t *testing.T) {
	fs := &fakeSets{c: make(chan struct{}), closed: make(chan struct{})}
	clk := &jumpClock{}
	changes := make(chan Change, 10)
	m, err := start(Options{OnChange: func(_ State, c Change) { changes <- c }, Poll: time.Hour},
		func() (clockSets, error) { return fs, nil }, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	woke := func(within time.Duration) {
		t.Helper()
		select {
		case c := <-changes:
			if !c.Woke {
				t.Fatalf("a change without Woke: %+v", c)
			}
		case <-time.After(within):
			t.Fatalf("no Woke within %s", within)
		}
	}
	fs.c <- struct{}{} // NTP steps the clock by nothing much: no change
	clk.sleep(11 * time.Second)
	fs.c <- struct{}{}
	woke(10 * time.Second)
	fs.c <- struct{}{} // no jump since the last look
	clk.sleep(time.Hour)
	fs.c <- struct{}{}
	woke(10 * time.Second)
	if len(changes) != 0 {
		t.Fatalf("%d changes more than the sleeps", len(changes))
	}

	// The source ends (its timerfd failed): the clocks are looked at
	// every wakeCheck from then on.
	fs.err = errors.New("reading the timerfd: a test's failure")
	close(fs.c)
	clk.sleep(time.Minute)
	woke(3 * wakeCheck)

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fs.closed:
	default:
		t.Fatal("Close left the clock's sets open")
	}
}
