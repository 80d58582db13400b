// Package localroads keeps this computer's listeners on its own lan and
// thunderbolt addresses: one per address, on one port, opened at the start
// and following the addresses as interfaces come and go (netwatch). A mode
// wraps each (the tailnet node: TLS with its pinned certificate) and hands
// those opened later to the gateway.
package localroads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/delta-roads/delta/api/roadfacts"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/netwatch"
)

// Config configures Listeners.
type Config struct {
	// Port is the port on every address.
	Port int
	// PortFallback takes a free port (one, for every address) when Port
	// is in use: the default port, which another user's Delta may hold
	// (ports are per computer). Notice says so.
	PortFallback bool
	// Addrs, if not nil, are the addresses to listen on, each "ip",
	// "road=ip" or with a zone "ip%iface"; they are not followed. If nil,
	// every lan and thunderbolt address of the running interfaces.
	Addrs []string
	// Wrap wraps each listener (TLS). If nil, none.
	Wrap func(net.Listener) net.Listener
	// Notice receives what a person should know (a port taken). If nil,
	// it is only logged.
	Notice func(string)
	// Log receives the log. If nil, nothing is logged.
	Log *slog.Logger
}

// Listener is one listener on one local address.
type Listener struct {
	net.Listener
	Road      roads.Road
	Interface string // from the address's zone, "" for none
	Spec      string // the "road=ip" it was opened for
}

// Listeners are the listeners on this computer's lan and thunderbolt
// addresses. Safe for concurrent use.
type Listeners struct {
	cfg Config
	log *slog.Logger

	mu  sync.Mutex
	lns []Listener
}

// New returns Listeners, none open yet.
func New(cfg Config) *Listeners {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Listeners{cfg: cfg, log: log}
}

// Specs are the addresses to listen on for st: every address of a
// running lan or thunderbolt interface, as "road=ip", sorted.
func Specs(st netwatch.State) []string {
	var specs []string
	for _, ifc := range st {
		if !ifc.Road.Local() || !ifc.Running {
			continue
		}
		for _, a := range ifc.Addrs {
			specs = append(specs, string(ifc.Road)+"="+a)
		}
	}
	slices.Sort(specs)
	return specs
}

func (ls *Listeners) specs(st netwatch.State) []string {
	if ls.cfg.Addrs != nil {
		return ls.cfg.Addrs
	}
	return Specs(st)
}

// Open opens a listener on each address for st; on an error none stays
// open.
func (ls *Listeners) Open(st netwatch.State) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, spec := range ls.specs(st) {
		l, err := ls.openLocked(spec)
		if err != nil {
			ls.closeLocked()
			return err
		}
		ls.lns = append(ls.lns, l)
	}
	return nil
}

// Follow closes the listeners whose address went away and opens one on
// each new address of st, returning those it opened (for the gateway to
// serve). Configured addresses are not followed.
func (ls *Listeners) Follow(st netwatch.State) []Listener {
	if ls.cfg.Addrs != nil {
		return nil
	}
	want := Specs(st)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var keep []Listener
	have := map[string]bool{}
	for _, l := range ls.lns {
		if slices.Contains(want, l.Spec) {
			keep = append(keep, l)
			have[l.Spec] = true
			continue
		}
		ls.log.Info("listener closed: its address went away", "address", l.Addr())
		// Its server stops accepting; its connections over the lost
		// address end with it. An error means it was closed already.
		_ = l.Close()
	}
	ls.lns = keep
	var opened []Listener
	for _, spec := range want {
		if have[spec] {
			continue
		}
		l, err := ls.openLocked(spec)
		if err != nil {
			ls.log.Warn("could not follow a new address", "err", err)
			continue
		}
		ls.log.Info("listener opened on a new address", "address", l.Addr())
		ls.lns = append(ls.lns, l)
		opened = append(opened, l)
	}
	return opened
}

// Drop closes l and forgets it (a listener nobody serves).
func (ls *Listeners) Drop(l Listener) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.lns = slices.DeleteFunc(ls.lns, func(x Listener) bool { return x.Spec == l.Spec })
	_ = l.Close() // closing is the point
}

// All are the listeners open now.
func (ls *Listeners) All() []Listener {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return slices.Clone(ls.lns)
}

// Port is the port the listeners take (after a fall-back, the one taken
// instead).
func (ls *Listeners) Port() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.cfg.Port
}

// Close closes every listener.
func (ls *Listeners) Close() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.closeLocked()
}

func (ls *Listeners) closeLocked() {
	for _, l := range ls.lns {
		_ = l.Close() // an error means it was closed already
	}
	ls.lns = nil
}

// localRoadsOr names the local roads, the default (lan) first: "lan or
// thunderbolt".
func localRoadsOr() string {
	names := []string{string(roads.LAN)}
	for _, r := range roads.LocalRoads {
		if r != roads.LAN {
			names = append(names, string(r))
		}
	}
	return strings.Join(names, " or ")
}

// ParseSpec reads "road=ip[%zone]" or "ip[%zone]" (the lan road).
func ParseSpec(spec string) (road roads.Road, addr, iface string, err error) {
	road, addr = roads.LAN, spec
	if r, rest, ok := strings.Cut(spec, "="); ok {
		if road, err = roads.Parse(r); err != nil || !road.Local() {
			return "", "", "", fmt.Errorf("lan address %q: the road must be %s", spec, localRoadsOr())
		}
		addr = rest
	}
	ip, iface, _ := strings.Cut(addr, "%")
	if net.ParseIP(ip) == nil {
		return "", "", "", fmt.Errorf("lan address %q is not an IP address", spec)
	}
	return road, addr, iface, nil
}

// openLocked opens the listener for one spec.
func (ls *Listeners) openLocked(spec string) (Listener, error) {
	road, addr, iface, err := ParseSpec(spec)
	if err != nil {
		return Listener{}, err
	}
	hostport := net.JoinHostPort(addr, strconv.Itoa(ls.cfg.Port))
	// A caller whose road died is found by its keepalive.
	lc := net.ListenConfig{KeepAliveConfig: roadfacts.KeepAlive}
	ln, err := lc.Listen(context.Background(), "tcp", hostport)
	if errors.Is(err, syscall.EADDRINUSE) && ls.cfg.PortFallback {
		// Another user's Delta has the default port (ports are per
		// computer): a free one, kept for every address, and hello
		// tells the peers.
		if ln, err = lc.Listen(context.Background(), "tcp", net.JoinHostPort(addr, "0")); err == nil {
			taken := ls.cfg.Port
			ls.cfg.Port = ln.Addr().(*net.TCPAddr).Port
			ls.cfg.PortFallback = false // chosen: the same one on every address from now on
			note := fmt.Sprintf("The lan port %d is taken on this computer (another user's Delta?): this Delta's TLS listeners take port %d, and its hello tells its peers.", taken, ls.cfg.Port)
			ls.log.Warn("notice", "notice", note)
			if ls.cfg.Notice != nil {
				ls.cfg.Notice(note)
			}
		}
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return Listener{}, fmt.Errorf("the TLS listener of the %s road cannot take port %d on %s: it is in use "+
			"(another Delta on this computer? give each its own with --lan-port or DELTA_LAN_PORT): %w", road, ls.cfg.Port, addr, err)
	}
	if err != nil {
		return Listener{}, fmt.Errorf("TLS listener on %s: %w", hostport, err)
	}
	if ls.cfg.Wrap != nil {
		ln = ls.cfg.Wrap(ln)
	}
	return Listener{Listener: ln, Road: road, Interface: iface, Spec: spec}, nil
}
