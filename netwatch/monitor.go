package netwatch

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/roads"
)

// State is every interface, by name, at one moment.
type State map[string]Interface

// Read reads the current state. roadsOverride, if not nil, fixes the road
// of the named interfaces (tests and odd hardware).
func Read(roadsOverride map[string]roads.Road) State {
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

// Options configure a Monitor.
type Options struct {
	// OnChange is called, from one goroutine, with the new state and what
	// changed, after each change. Required.
	OnChange func(State, Change)
	// Roads fixes the road of named interfaces (tests; odd hardware).
	Roads map[string]roads.Road
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
	opt  Options
	log  *slog.Logger
	os   osMon
	done chan struct{}
	wg   sync.WaitGroup

	mu  sync.Mutex
	cur State
}

// wakeCheck is how often the wall clock is compared with the monotonic one
// to notice sleep.
const wakeCheck = 5 * time.Second

// Start reads the interfaces and starts watching them.
func Start(opt Options) (*Monitor, error) {
	if opt.OnChange == nil {
		return nil, errors.New("netwatch: no OnChange")
	}
	if opt.Debounce == 0 {
		opt.Debounce = 10 * time.Millisecond
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Monitor{opt: opt, log: opt.Logger, done: make(chan struct{}), cur: Read(opt.Roads)}
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
	events := make(chan struct{}, 1)
	m.wg.Add(2)
	go m.receive(events)
	go m.loop(events)
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

func (m *Monitor) loop(events <-chan struct{}) {
	defer m.wg.Done()
	wake := time.NewTicker(wakeCheck)
	defer wake.Stop()
	lastWall, lastMono := time.Now().Round(0), time.Now()
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
		case <-wake.C:
			wall, mono := time.Now().Round(0), time.Now()
			woke = wall.Sub(lastWall)-mono.Sub(lastMono) > 10*time.Second
			lastWall, lastMono = wall, mono
			if !woke {
				continue
			}
			m.log.Info("netwatch: the computer slept (the wall clock jumped); probing every road again")
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
