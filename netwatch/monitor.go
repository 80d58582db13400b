package netwatch

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/delta-roads/delta/api/roadfacts"
)

// State is every interface, by name, at one moment.
type State map[string]Interface

// Read reads the current state. roadsOverride, if not nil, fixes the road
// of the named interfaces (tests and odd hardware).
func Read(roadsOverride map[string]roadfacts.Road) State {
	ifs, err := net.Interfaces()
	if err != nil {
		return State{}
	}
	st := State{}
	names := make([]string, len(ifs))
	for i, ifc := range ifs {
		names[i] = ifc.Name
	}
	ports, members := hardwarePorts(names)
	for _, ifc := range ifs {
		var addrs []netip.Prefix
		if as, err := ifc.Addrs(); err == nil {
			for _, a := range as {
				if p, err := netip.ParsePrefix(a.String()); err == nil {
					addrs = append(addrs, p)
				}
			}
		}
		media := linkMedia(ifc.Name)
		c := Classify(ifc.Name, ifc.Flags, driver(ifc.Name), addrs, media)
		c.Index, c.MediaWord = ifc.Index, media.Word
		if wireless(ifc.Name) {
			c.Wireless = true
		}
		if r, ok := PortsRoad(ifc.Name, ports, members); ok && c.Road.Local() {
			c.Road = r
		}
		if r, ok := roadsOverride[ifc.Name]; ok && c.Road != "" {
			c.Road = r
		}
		st[ifc.Name] = c
	}
	return st
}

// Change is what happened between two states, by interface name.
type Change struct {
	// Lost are interfaces that vanished, went down, lost their carrier, or
	// lost (or changed) an address: roads over them are dead now.
	Lost []string
	// Gained are interfaces that appeared, came up, regained their carrier,
	// or gained an address: roads over them may carry again.
	Gained []string
	// Woke reports that the computer slept (the wall clock jumped): every
	// road should be probed again.
	Woke bool
}

// Empty reports whether nothing changed.
func (c Change) Empty() bool { return len(c.Lost) == 0 && len(c.Gained) == 0 && !c.Woke }

// Diff computes the change from old to new. Only roads matter: an
// interface that is no road in either state is ignored. It is pure, for
// table tests.
func Diff(old, new State) Change {
	var c Change
	names := map[string]bool{}
	for n := range old {
		names[n] = true
	}
	for n := range new {
		names[n] = true
	}
	for n := range names {
		o, hadO := old[n]
		w, hasW := new[n]
		wasRoad, isRoad := hadO && o.Road != "" && o.Running, hasW && w.Road != "" && w.Running
		switch {
		case wasRoad && !isRoad:
			c.Lost = append(c.Lost, n)
		case !wasRoad && isRoad:
			c.Gained = append(c.Gained, n)
		case wasRoad && isRoad:
			lost := false
			for _, a := range o.Addrs {
				if !slices.Contains(w.Addrs, a) {
					lost = true
				}
			}
			gained := false
			for _, a := range w.Addrs {
				if !slices.Contains(o.Addrs, a) {
					gained = true
				}
			}
			if lost || o.Road != w.Road {
				c.Lost = append(c.Lost, n)
			}
			if gained || o.Road != w.Road {
				c.Gained = append(c.Gained, n)
			}
		}
	}
	sort.Strings(c.Lost)
	sort.Strings(c.Gained)
	return c
}

// osMon is what each OS implements: Receive blocks until the interfaces
// may have changed (it may wake spuriously; an error other than errClosed
// is logged and the state re-read).
type osMon interface {
	Receive() error
	Close() error
}

var errClosed = errors.New("netwatch: closed")

// clockSets tells each set of the wall clock, a resume from sleep
// included, as it happens (newClockSets; Linux only).
type clockSets interface {
	// Sets receives one value per set (sets in a burst may come as
	// one); it is closed when the source ends, for Close or Err.
	Sets() <-chan struct{}
	// Err, once Sets is closed, is why it ended; nil after Close.
	Err() error
	Close() error
}

// Options configure a Monitor.
type Options struct {
	// OnChange is called, from one goroutine, with the new state and what
	// changed, after each change. Required.
	OnChange func(State, Change)
	// Roads fixes the road of named interfaces (tests; odd hardware).
	Roads map[string]roadfacts.Road
	// Debounce gathers a burst of events into one change. If 0, 10 ms.
	Debounce time.Duration
	// Logger receives the log. If nil, nothing is logged.
	Logger *slog.Logger
	// Poll forces polling every this often instead of the OS's events
	// (and is the fallback where there are none). If 0, events; 2 s when
	// polling.
	Poll time.Duration
}

// Monitor watches the interfaces and reports changes.
type Monitor struct {
	opt Options
	log *slog.Logger
	os  osMon
	// clock tells the wall clock's sets (nil: the clocks are looked at
	// every wakeCheck); now reads the clocks (a test's may jump).
	clock clockSets
	now   func() (wall, mono time.Time)
	done  chan struct{}
	wg    sync.WaitGroup

	mu  sync.Mutex
	cur State
}

// wakeCheck is how often the wall clock is compared with the monotonic one
// to notice sleep, where the OS does not tell a set of the clock
// (newClockSets). A resume is a set of the clock on Linux, told at once;
// there, a 5 s look was about an eighth of an idle Delta's CPU (each look
// wakes the Go runtime), docs/benchmarks.md.
const wakeCheck = 5 * time.Second

// sleptOver is the least jump of the wall clock, against the monotonic
// one, that counts as sleep.
const sleptOver = 10 * time.Second

// slept reports whether the computer slept between two readings of the
// clocks, each a wall clock reading (no monotonic part) and a monotonic
// one: the wall clock moved sleptOver more than the monotonic clock, which
// pauses in sleep (Linux's CLOCK_MONOTONIC, macOS's mach_absolute_time).
// A person or NTP setting the clock by as much reads as sleep too, and
// every road is probed again, which is harmless.
func slept(lastWall, lastMono, wall, mono time.Time) bool {
	return wall.Sub(lastWall)-mono.Sub(lastMono) > sleptOver
}

// Start reads the interfaces and starts watching them.
func Start(opt Options) (*Monitor, error) { return start(opt, newClockSets, readClocks) }

// start is Start with the clock's sets and readings given (a test's).
func start(opt Options, newSets func() (clockSets, error), now func() (wall, mono time.Time)) (*Monitor, error) {
	if opt.OnChange == nil {
		return nil, errors.New("netwatch: no OnChange")
	}
	if opt.Debounce == 0 {
		opt.Debounce = 10 * time.Millisecond
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Monitor{opt: opt, log: opt.Logger, done: make(chan struct{}), cur: Read(opt.Roads), now: now}
	// What the OS says of each road's link, once, so that a Mac's log
	// shows what its hardware reports (the Wi-Fi tie-break rests on it).
	for _, n := range slices.Sorted(maps.Keys(m.cur)) {
		if c := m.cur[n]; c.MediaWord != "" && c.Road != "" {
			m.log.Info("netwatch: an interface's link", "interface", n, "road", c.Road, "wireless", c.Wireless, "media", c.MediaWord)
		}
	}
	var err error
	if opt.Poll == 0 {
		m.os, err = newOSMon()
	}
	if opt.Poll != 0 || err != nil {
		if err != nil {
			m.log.Warn("netwatch: no interface events; polling every 2 s", "err", err)
		}
		poll := opt.Poll
		if poll == 0 {
			poll = 2 * time.Second
		}
		m.os = newPollMon(poll)
	}
	if cs, err := newSets(); err == nil {
		m.clock = cs
	} else if runtime.GOOS == "linux" {
		m.log.Info("netwatch: looking at the clocks every 5 s for sleep", "why", err)
	}
	events := make(chan struct{}, 1)
	m.wg.Add(2)
	wall, mono := m.now() // sleep is counted from here
	go m.receive(events)
	go m.loop(events, wall, mono)
	return m, nil
}

// Current is the latest state.
func (m *Monitor) Current() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur
}

// Close stops watching.
func (m *Monitor) Close() error {
	select {
	case <-m.done:
		return nil
	default:
	}
	close(m.done)
	err := m.os.Close()
	if m.clock != nil {
		m.clock.Close()
	}
	m.wg.Wait()
	return err
}

func (m *Monitor) receive(events chan<- struct{}) {
	defer m.wg.Done()
	for {
		err := m.os.Receive()
		select {
		case <-m.done:
			return
		default:
		}
		var pe *ParsePanicError
		switch {
		case errors.As(err, &pe):
			m.log.Warn("netwatch: a routing message could not be parsed; reading the interfaces again", "panic", fmt.Sprint(pe.Panic), "message", fmt.Sprintf("% 02x", pe.Msg))
		case err != nil && !errors.Is(err, errClosed):
			m.log.Debug("netwatch: receive", "err", err) // ENOBUFS: events were lost; the re-read covers them
		}
		select {
		case events <- struct{}{}:
		default:
		}
	}
}

// readClocks reads the wall clock (without its monotonic part) and the
// monotonic clock, for slept.
func readClocks() (wall, mono time.Time) {
	now := time.Now()
	return now.Round(0), now
}

func (m *Monitor) loop(events <-chan struct{}, lastWall, lastMono time.Time) {
	defer m.wg.Done()
	var sets <-chan struct{}
	var tick <-chan time.Time
	var ticker *time.Ticker
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	if m.clock != nil {
		sets = m.clock.Sets()
	} else {
		ticker = time.NewTicker(wakeCheck)
		tick = ticker.C
	}
	for {
		woke := false
		select {
		case <-m.done:
			return
		case <-events:
			// Gather the rest of a burst.
			t := time.NewTimer(m.opt.Debounce)
			select {
			case <-m.done:
				t.Stop()
				return
			case <-t.C:
			}
			select {
			case <-events:
			default:
			}
		case _, ok := <-sets:
			if !ok {
				select {
				case <-m.done:
					return
				default:
				}
				m.log.Warn("netwatch: the clock's sets are not told any more; looking at the clocks every 5 s for sleep", "err", m.clock.Err())
				sets = nil
				ticker = time.NewTicker(wakeCheck)
				tick = ticker.C
				continue
			}
			if woke = m.looked(&lastWall, &lastMono); !woke {
				continue
			}
		case <-tick:
			if woke = m.looked(&lastWall, &lastMono); !woke {
				continue
			}
		}
		next := Read(m.opt.Roads)
		m.mu.Lock()
		c := Diff(m.cur, next)
		m.cur = next
		m.mu.Unlock()
		c.Woke = woke
		if !c.Empty() {
			m.log.Info("netwatch: interfaces changed", "lost", c.Lost, "gained", c.Gained, "woke", c.Woke)
			m.opt.OnChange(next, c)
		}
	}
}

// looked reads the clocks, reports (and logs) whether the computer slept
// since the last reading, and keeps this one.
func (m *Monitor) looked(lastWall, lastMono *time.Time) bool {
	wall, mono := m.now()
	woke := slept(*lastWall, *lastMono, wall, mono)
	*lastWall, *lastMono = wall, mono
	if woke {
		m.log.Info("netwatch: the computer slept (the wall clock jumped); probing every road again")
	}
	return woke
}

// pollMon wakes every interval.
type pollMon struct {
	t    *time.Ticker
	done chan struct{}
	once sync.Once
}

func newPollMon(d time.Duration) *pollMon {
	return &pollMon{t: time.NewTicker(d), done: make(chan struct{})}
}

func (p *pollMon) Receive() error {
	select {
	case <-p.t.C:
		return nil
	case <-p.done:
		return errClosed
	}
}

func (p *pollMon) Close() error {
	p.once.Do(func() { p.t.Stop(); close(p.done) })
	return nil
}
