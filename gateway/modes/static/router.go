package static

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/api/roadfacts"
	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/net/rawsock"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/roads/routes"
	"github.com/delta-roads/delta/netwatch"
)

// Router is static mode's road keeper: the shared routes.Router (hold-downs,
// races, expiring beliefs, probes) fed with the roads config.json names,
// each dialled over plain TCP. While it runs (Probe), it follows netwatch:
// a lan or thunderbolt road is bound to the local interface that reaches
// its address, dropped at once when that interface goes, and probed in a
// burst when it comes back.
type Router struct {
	*routes.Router
	peers   []roads.StaticPeer
	seal    *Seal // nil: plain TCP
	tickets peerclient.Tickets
	// kept holds the probes' connections between probes
	// (peerclient.KeptPings); closed when Probe returns.
	kept *peerclient.KeptPings
	log  *slog.Logger
	// watch starts netwatch (Probe); tests may replace it.
	watch func(netwatch.Options) (*netwatch.Monitor, error)

	disc    *Discovery // nil: no local discovery
	pairing *Pairing   // nil: a config of the network-key kind

	mu     sync.Mutex
	ifaces netwatch.State
	// trying are the moves heard (peer road → address) whose pinned
	// handshake is under way (Learn); learnCtx ends them when Probe
	// returns, and learning is waited for then.
	trying   map[string]string
	learnCtx context.Context
	learning sync.WaitGroup
}

// NewRouter checks the configured peers and returns a router for them,
// whose probes carry tickets from tickets. now and log may be nil.
func NewRouter(peers []roads.StaticPeer, tickets peerclient.Tickets, now func() time.Time, log *slog.Logger) (*Router, error) {
	return NewSealedRouter(peers, nil, tickets, now, log)
}

// NewSealedRouter is NewRouter whose roads are TLS 1.3 pinned to each
// peer's ID (seal), or plain TCP when seal is nil.
func NewSealedRouter(peers []roads.StaticPeer, seal *Seal, tickets peerclient.Tickets, now func() time.Time, log *slog.Logger) (*Router, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := CheckPeers(peers); err != nil {
		return nil, err
	}
	s := &Router{peers: peers, seal: seal, tickets: tickets, kept: peerclient.NewKeptPings(), log: log, watch: netwatch.Start}
	s.Router = routes.NewRouter(routes.New(now, log), s.ping, log)
	s.rebind(netwatch.State{})
	return s, nil
}

// CheckPeers checks config.json's peers: each named once, with at least
// one road, each a known road with a host:port address.
func CheckPeers(peers []roads.StaticPeer) error {
	seen := map[string]bool{}
	for _, p := range peers {
		if seen[p.Name] {
			return fmt.Errorf("peer %q is named twice in the config", p.Name)
		}
		seen[p.Name] = true
		if len(p.Roads) == 0 {
			return fmt.Errorf("peer %q has no roads in the config", p.Name)
		}
		for road, addr := range p.Roads {
			if !road.Known() {
				return fmt.Errorf("peer %q: road %q is not one of %s", p.Name, road, roadfacts.Names())
			}
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return fmt.Errorf("peer %q: %s address %q is not host:port: %w", p.Name, road, addr, err)
			}
			if err := CheckPort(addr); err != nil {
				return fmt.Errorf("peer %q: %s %w", p.Name, road, err)
			}
		}
	}
	return nil
}

// CheckPort says why addr's port is not one a peer can listen on (1 to
// 65535, in digits), or nil (issue 63, D10: delta pair wrote 99999).
func CheckPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return fmt.Errorf("address %q has port %q, not one of 1-65535", addr, port)
	}
	return nil
}

// rebind gives the book each peer's roads, bound to the interfaces of st.
func (s *Router) rebind(st netwatch.State) {
	s.mu.Lock()
	s.ifaces = st
	peers := slices.Clone(s.peers)
	s.mu.Unlock()
	for _, p := range peers {
		s.Book().Set(p.Name, Candidates(p, st, s.seal))
	}
}

// state is the interfaces as netwatch last said.
func (s *Router) state() netwatch.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ifaces
}

// Learn moves peer's road to addr (a paired peer's announcement) once the
// pinned handshake has succeeded there, in the background (one try at a
// time for each of a peer's roads): the book then gets its candidates
// again and the new road is probed at once. Until then, and when it
// fails, the road stays where it was.
func (s *Router) Learn(peer string, road roads.Road, addr string) {
	s.mu.Lock()
	var p *roads.StaticPeer
	for i := range s.peers {
		if s.peers[i].Name == peer {
			p = &s.peers[i]
		}
	}
	key := peer + " " + string(road)
	ctx := s.learnCtx
	if p == nil || p.Roads[road] == addr || s.trying[key] == addr || ctx == nil {
		s.mu.Unlock()
		return
	}
	if s.trying == nil {
		s.trying = map[string]string{}
	}
	s.trying[key] = addr
	try := roads.StaticPeer{Name: peer, ID: p.ID, Roads: map[roads.Road]string{road: addr}}
	st, seal := s.ifaces, s.seal
	s.learning.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.learning.Done()
		// Tried before it is believed (issue 63, D2): the address is an
		// announcement's source, which anyone can send from; only the
		// pinned handshake proves the peer is there.
		err := fmt.Errorf("%s is not a road this Delta dials", road)
		if cs := Candidates(try, st, seal); len(cs) == 1 {
			var conn net.Conn
			if conn, err = cs[0].Dial(ctx); err == nil {
				conn.Close()
			}
		}
		s.mu.Lock()
		if s.trying[key] == addr {
			delete(s.trying, key)
		}
		s.mu.Unlock()
		if err != nil {
			s.log.Warn("local discovery: an announcement named an address where the peer did not prove itself; its road stays where it was",
				"peer", peer, "road", road, "address", addr, "err", err)
			return
		}
		s.move(peer, road, addr)
	}()
}

// move sets peer's road to addr, proved there (Learn).
func (s *Router) move(peer string, road roads.Road, addr string) {
	s.mu.Lock()
	changed := false
	for i := range s.peers {
		p := &s.peers[i]
		if p.Name != peer || p.Roads[road] == addr {
			continue
		}
		from := p.Roads[road]
		p.Roads = maps.Clone(p.Roads)
		p.Roads[road] = addr
		changed = true
		s.log.Info("local discovery: a peer's road moved", "peer", peer, "road", road, "from", from, "to", addr)
	}
	st := s.ifaces
	s.mu.Unlock()
	if changed {
		s.rebind(st)
		s.Kick()
	}
}

// setPeer pairs p here, or gives a paired peer its roads (Pairing): the
// book gets its candidates and its roads are probed at once.
func (s *Router) setPeer(p roads.StaticPeer) {
	s.mu.Lock()
	if i := slices.IndexFunc(s.peers, func(q roads.StaticPeer) bool { return q.Name == p.Name }); i >= 0 {
		s.peers[i] = p
	} else {
		s.peers = append(s.peers, p)
	}
	st := s.ifaces
	s.mu.Unlock()
	s.Book().Set(p.Name, Candidates(p, st, s.seal))
	s.Kick()
}

// removePeer forgets peer name (Pairing's Unpair), and tells the gateway
// to close every connection to it: a pooled one must not carry a request
// to a computer that is no longer paired (nor, once the name is paired
// again, to the one it was).
func (s *Router) removePeer(name string) {
	s.mu.Lock()
	var gone []roads.Road
	for _, q := range s.peers {
		if q.Name == name {
			for r := range q.Roads {
				gone = append(gone, r)
			}
		}
	}
	s.peers = slices.DeleteFunc(s.peers, func(q roads.StaticPeer) bool { return q.Name == name })
	s.mu.Unlock()
	s.Book().Remove(name)
	for _, r := range gone {
		s.Tell(roads.Event{Kind: roads.RoadLost, Peer: name, Road: r, Why: roads.AsDrop(errors.New(name + " was unpaired here"))})
	}
}

// SetPairing gives the router its pairing (static mode with IDs).
func (s *Router) SetPairing(p *Pairing) { s.pairing = p }

// errNoPairing refuses pairing in a static config of the network-key kind.
var errNoPairing = &roads.PairError{Outcome: localapi.Conflict,
	Msg: "this static config pairs its peers by a shared network_key, not by ID: pairing by ID needs every peer paired by ID (docs/protocol.md §5)"}

// Pairing implements roads.Pairer.
func (s *Router) Pairing() localapi.Pairing {
	if s.pairing == nil {
		return localapi.Pairing{Requests: []localapi.PairRequest{}, Peers: []localapi.PairedPeer{}}
	}
	return s.pairing.Status()
}

// PairRequests implements roads.Pairer.
func (s *Router) PairRequests() []localapi.PairRequest {
	if s.pairing == nil {
		return nil
	}
	return s.pairing.PairRequests()
}

// Pair implements roads.Pairer.
func (s *Router) Pair(ctx context.Context, name string, w localapi.PairWith) (localapi.PairedPeer, error) {
	if s.pairing == nil {
		return localapi.PairedPeer{}, errNoPairing
	}
	return s.pairing.Pair(ctx, name, w)
}

// Unpair implements roads.Pairer.
func (s *Router) Unpair(name string) error {
	if s.pairing == nil {
		return errNoPairing
	}
	return s.pairing.Unpair(name)
}

// Rename implements roads.Pairer.
func (s *Router) Rename(name string) (localapi.Self, error) {
	if s.pairing == nil {
		return localapi.Self{}, errNoPairing
	}
	return s.pairing.Rename(name)
}

// AnswerPairRequest implements roads.Pairer.
func (s *Router) AnswerPairRequest(ctx context.Context, id, action string, a localapi.AcceptPair) (localapi.PairedPeer, error) {
	if s.pairing == nil {
		return localapi.PairedPeer{}, errNoPairing
	}
	return s.pairing.Answer(ctx, id, action, a)
}

// SetDiscovery gives the router its local discovery, started by Probe.
func (s *Router) SetDiscovery(d *Discovery) { s.disc = d }

// Discovery is the router's local discovery, nil when off.
func (s *Router) Discovery() *Discovery { return s.disc }

// Nearby implements roads.NearbyReporter.
func (s *Router) Nearby() []localapi.Nearby { return s.disc.Nearby() }

// StaticPeers are the peers with their roads as the router knows them now
// (learned addresses included), for direct.json.
func (s *Router) StaticPeers() []roads.StaticPeer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.peers)
}

// Candidates are a configured peer's roads, in road order, dialled over
// TLS pinned to the peer's ID when seal is not nil, else plain TCP: a lan
// or thunderbolt address is bound to the local interface
// of that road whose network holds it (netwatch.State.InterfaceFor), and
// unbound when none does (a routed address, loopback in tests, or before
// netwatch has looked).
func Candidates(p roads.StaticPeer, st netwatch.State, seal *Seal) []roads.Candidate {
	var out []roads.Candidate
	for _, road := range roads.All {
		addr, ok := p.Roads[road]
		if !ok {
			continue
		}
		iface := ""
		if ap, err := netip.ParseAddrPort(addr); err == nil && road.Local() && !ap.Addr().IsLoopback() {
			iface = st.InterfaceFor(road, ap.Addr())
		}
		c := roads.Candidate{Peer: p.Name, Road: road, Address: addr, Interface: iface, NeedsTicket: true}
		c.Dial = dialer(c, seal)
		out = append(out, c)
	}
	return out
}

// dialer connects to c's address within its road's connect timeout, bound
// to its interface if it has one, and, with a seal, completes a TLS 1.3
// handshake that accepts only the certificate of c's peer's ID (and shows
// this computer's own) before it hands the connection back: nothing is
// written to a road whose far end did not prove the ID.
func dialer(c roads.Candidate, seal *Seal) func(context.Context) (net.Conn, error) {
	road, addr, iface := c.Road, c.Address, c.Interface
	peer := c.Peer
	return func(ctx context.Context) (net.Conn, error) {
		pin := ""
		if seal != nil {
			if pin = seal.Pin(peer); pin == "" {
				return nil, fmt.Errorf("%s is not paired with this computer any more", peer)
			}
		}
		conn, err := dialRaw(ctx, road, addr, iface)
		if err != nil || seal == nil {
			return conn, err
		}
		return pintls.Handshake(ctx, conn, pin, &seal.Cert)
	}
}

// dialRaw connects over TCP.
func dialRaw(ctx context.Context, road roads.Road, addr, iface string) (net.Conn, error) {
	d := net.Dialer{Timeout: road.ConnectTimeout(), KeepAliveConfig: roadfacts.KeepAlive}
	if iface != "" {
		d.Control = roadfacts.BindControl(iface, road)
	}
	began := time.Now()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil && netwatch.LocalNetworkBlocked(runtime.GOOS, err, iface != "", time.Since(began)) {
		err = fmt.Errorf("%w (%w)", err, roads.ErrLocalNetwork)
	}
	if err != nil {
		return nil, err
	}
	return rawsock.Wrap(conn), nil
}

// FirstProbe is how long after the start static mode's probes begin: the
// roads are configured, not discovered, so until then the first requests
// try them in road order (and teach the book) as they always have.
const FirstProbe = 2 * time.Second

// Probe implements roads.Prober: it follows netwatch (when it can start)
// and, from FirstProbe on, probes the roads that are due, until ctx ends.
func (s *Router) Probe(ctx context.Context) {
	defer s.kept.Close() // after the probes, which routes.Router.Probe waits for
	s.mu.Lock()
	s.learnCtx = ctx
	s.mu.Unlock()
	defer s.learning.Wait() // the moves being tried end with ctx
	mon, err := s.watch(netwatch.Options{OnChange: s.onNetChange, Logger: s.log})
	if err != nil {
		s.log.Warn("static mode cannot follow the network interfaces; roads are dropped only when they fail", "err", err)
	} else {
		defer mon.Close()
		s.rebind(mon.Current())
	}
	if s.disc != nil {
		if err := s.disc.Start(); err != nil {
			s.log.Warn("static mode: no local discovery (peers are found at their configured addresses only)", "err", err)
		} else {
			done := make(chan struct{})
			go func() { defer close(done); s.disc.Run(ctx) }()
			defer func() { <-done }()
		}
	}
	t := time.NewTimer(FirstProbe)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return
	case <-t.C:
	}
	s.Router.Probe(ctx)
}

// onNetChange drops the roads over an interface that went down at once,
// rebinds the roads to the interfaces there are now, and probes those over
// an interface that came up in a burst.
func (s *Router) onNetChange(st netwatch.State, c netwatch.Change) {
	for _, iface := range c.Lost {
		s.InterfaceLost(iface)
	}
	s.rebind(st)
	s.InterfacesGained(c.Gained, c.Woke)
	if s.disc != nil && (len(c.Gained) > 0 || c.Woke) {
		s.disc.Soon() // this computer may have a new address: say so at once
	}
}

// ping probes one road with GET /delta/v1/ping and a ticket, renewing the
// ticket once if the peer refused it, on the connection kept from the
// road's last probe when it still answers (peerclient.KeptPings).
func (s *Router) ping(ctx context.Context, c roads.Candidate) error {
	return s.kept.Probe(ctx, c, s.tickets, c.Dial)
}

var (
	_ roads.Router         = (*Router)(nil)
	_ roads.Watchable      = (*Router)(nil)
	_ roads.StateWatchable = (*Router)(nil)
	_ roads.EventSource    = (*Router)(nil)
	_ roads.Prober         = (*Router)(nil)
	_ roads.Counted        = (*Router)(nil)
	_ roads.NearbyReporter = (*Router)(nil)
	_ roads.Pairer         = (*Router)(nil)
	_ roads.Answerer       = (*Router)(nil) // a fall-back may take a passed road that answered since
	_ roads.Suspecter      = (*Router)(nil)
	_ roads.RaceLoser      = (*Router)(nil)
)
