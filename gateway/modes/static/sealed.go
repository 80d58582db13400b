package static

import (
	"context"
	"crypto"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/api/roadfacts"
	"github.com/delta-roads/delta/gateway"
	"github.com/delta-roads/delta/gateway/carry/owner"
	"github.com/delta-roads/delta/gateway/net/identity"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/net/rawsock"
	"github.com/delta-roads/delta/gateway/net/ticket"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/statedir"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// Seal is static mode with IDs: this computer's certificate (its
// identity, pintls.LoadOrCreate) and each peer's pin, the same 32 bytes as
// its ID. Every road is TLS 1.3 pinned both ways: the caller accepts only
// the certificate of the peer's ID, and the owner's door admits only a
// paired peer's certificate (a computer that is not paired may ask to
// pair, PathPair, and nothing else). Peers are paired and unpaired while
// Delta runs (pairing.go): the pins are a set replaced whole, so that the
// door and the dialer read them without a lock.
type Seal struct {
	Cert tls.Certificate
	ID   identity.ID

	mu  sync.Mutex // writers: set, remove
	now atomic.Pointer[pinSet]
}

// pinSet is the peers paired at one moment; never changed once made.
type pinSet struct {
	pins  map[string]string      // a peer's name → its pin
	names map[string]string      // a pin → the peer's name
	ids   map[string]identity.ID // a peer's name → its ID
}

// Pin is the pin of peer name, "" when it is not paired.
func (s *Seal) Pin(name string) string { return s.now.Load().pins[name] }

// Name is the name of the paired peer whose pin is pin.
func (s *Seal) Name(pin string) (string, bool) {
	n, ok := s.now.Load().names[pin]
	return n, ok
}

// IDs are the paired peers' IDs by name, as they are now: not to be
// changed (a pairing makes a new map).
func (s *Seal) IDs() map[string]identity.ID { return s.now.Load().ids }

// change replaces the pin set with edit's change of a copy of it.
func (s *Seal) change(edit func(ids map[string]identity.ID)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := map[string]identity.ID{}
	if cur := s.now.Load(); cur != nil {
		maps.Copy(ids, cur.ids)
	}
	edit(ids)
	next := &pinSet{pins: map[string]string{}, names: map[string]string{}, ids: ids}
	for n, id := range ids {
		next.pins[n] = id.Pin()
		next.names[id.Pin()] = n
	}
	s.now.Store(next)
}

// set pairs name with id (replacing what name had).
func (s *Seal) set(name string, id identity.ID) {
	s.change(func(ids map[string]identity.ID) { ids[name] = id })
}

// remove unpairs name.
func (s *Seal) remove(name string) {
	s.change(func(ids map[string]identity.ID) { delete(ids, name) })
}

// PeerIDs reads the peers' IDs from the config: nil when no peer has one
// (a config of the network-key kind), an error naming the peer when some
// have one and some do not, or when one is not an ID, or two peers share
// one.
func PeerIDs(peers []roads.StaticPeer) (map[string]identity.ID, error) {
	out := map[string]identity.ID{}
	var without []string
	seen := map[identity.ID]string{}
	for _, p := range peers {
		if p.ID == "" {
			without = append(without, p.Name)
			continue
		}
		id, err := identity.Parse(p.ID)
		if err != nil {
			return nil, fmt.Errorf("peer %q: id: %w", p.Name, err)
		}
		if other, dup := seen[id]; dup {
			return nil, fmt.Errorf("peers %q and %q have the same id: each computer has its own", other, p.Name)
		}
		seen[id] = p.Name
		out[p.Name] = id
	}
	switch {
	case len(out) == 0:
		return nil, nil
	case len(without) > 0:
		return nil, fmt.Errorf("peer %q has no id yet, while others have one: on %s run `delta id`, then here `delta pair %s=ID`", without[0], without[0], without[0])
	}
	return out, nil
}

// OwnID is the ID of the computer whose state folder is dir (its
// certificate, made now under name if there is none), and the certificate.
func OwnID(dir, name string) (identity.ID, tls.Certificate, error) {
	cert, pin, err := pintls.LoadOrCreate(dir, name)
	if err != nil {
		return identity.ID{}, cert, err
	}
	id, err := identity.FromPin(pin)
	return id, cert, err
}

// NewSeal loads (or makes, on first use) this computer's certificate in
// dir and pairs it with the peers' IDs.
func NewSeal(dir, name string, ids map[string]identity.ID) (*Seal, error) {
	own, cert, err := OwnID(dir, name)
	if err != nil {
		return nil, err
	}
	for n, id := range ids {
		if id == own {
			return nil, fmt.Errorf("peer %q has this computer's own id (%s): a computer is not its own peer", n, own)
		}
	}
	s := &Seal{Cert: cert, ID: own}
	s.change(func(m map[string]identity.ID) { maps.Copy(m, ids) })
	return s, nil
}

// ServerConfig is the TLS of the peer listener: this computer's
// certificate, TLS 1.3, and a client certificate required, whose key the
// handshake proves the client holds (a computer that holds a paired
// peer's config but not its key is refused before it can send anything).
// Which IDs are admitted is the door's (IDDoor): a computer that is not
// paired may ask to pair, and nothing else.
func (s *Seal) ServerConfig() *tls.Config {
	cfg := pintls.ServerConfig(s.Cert)
	cfg.ClientAuth = tls.RequireAnyClientCert
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if _, err := identity.FromPin(pintls.ClientPin(&cs)); err != nil {
			return fmt.Errorf("static: the client's certificate is not a Delta's: %w", err)
		}
		return nil
	}
	return cfg
}

// IDDoor admits requests over a connection whose client certificate is a
// paired peer's, carrying a ticket that peer signed with the same key. The
// caller's name is the one this computer paired the ID with, never the
// ticket's word.
type IDDoor struct {
	Seal    *Seal
	Now     func() time.Time
	Checked *ticket.Checked
}

// Identify implements Door.
func (d IDDoor) Identify(r *http.Request) (owner.Visitor, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return owner.Visitor{}, fmt.Errorf("%w: the connection has no client certificate (static mode with ids is TLS only)", owner.ErrDoorUnauthorized)
	}
	pin := pintls.ClientPin(r.TLS)
	id, _ := identity.FromPin(pin)
	name, ok := d.Seal.Name(pin)
	stranger := !ok && r.Method == http.MethodPost && r.URL.Path == proto.PathPair
	if !ok && !stranger {
		return owner.Visitor{}, fmt.Errorf("the connection's certificate (ID %s) is not a paired peer's", id)
	}
	t, err := requestTicket(r)
	if err != nil {
		return owner.Visitor{}, err
	}
	c, err := d.Checked.CheckSigned(pin, r.TLS.PeerCertificates[0].PublicKey, t, d.Now())
	if err != nil {
		return owner.Visitor{}, fmt.Errorf("%w: %w", owner.ErrDoorUnauthorized, err)
	}
	if c.Node != id.String() {
		return owner.Visitor{}, fmt.Errorf("%w: the ticket names node %q, not the id %s its connection proved", owner.ErrDoorUnauthorized, c.Node, id)
	}
	return owner.Visitor{Node: id.String(), Name: name, ReadOnly: c.ReadOnly()}, nil
}

// SignedTickets mints this computer's tickets with its own key (no key is
// shared), renewing them ahead of expiry.
type SignedTickets struct {
	Seal *Seal
	Self localapi.Self
	Now  func() time.Time
	// Peers are the peers as the router knows them now (a road local
	// discovery moved included).
	Peers func() []roads.StaticPeer

	mu      sync.Mutex
	held    string
	expires time.Time
}

func (m *SignedTickets) mint(c ticket.Claims) (string, error) {
	k, ok := m.Seal.Cert.PrivateKey.(crypto.Signer)
	if !ok {
		return "", errors.New("this computer's certificate key cannot sign")
	}
	return ticket.MintSigned(k, c)
}

// Ticket implements Tickets: one ticket, sent until half its life has
// passed (or the door refused it: renew).
func (m *SignedTickets) Ticket(_ context.Context, _ string, renew bool) (string, error) {
	now := m.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if renew || m.held == "" || now.After(m.expires.Add(-ticket.Lifetime/2)) {
		exp := now.Add(ticket.Lifetime)
		t, err := m.mint(ticket.Claims{Node: m.Self.Node, Name: m.Self.Name, Expires: exp})
		if err != nil {
			return "", err
		}
		m.held, m.expires = t, exp
	}
	return m.held, nil
}

// ReadTicket mints a read ticket (gateway.DirectReads), good only with this
// computer's certificate, which direct.json names for the kit.
func (m *SignedTickets) ReadTicket(_ context.Context, _ string) (string, time.Time, error) {
	exp := m.Now().Add(ticket.Lifetime)
	t, err := m.mint(ticket.Claims{Node: m.Self.Node, Name: m.Self.Name, Expires: exp, Scope: ticket.ScopeRead})
	return t, exp, err
}

// DirectRoads are the peers' thunderbolt and lan roads, each pinned to the
// peer's ID, and this computer's certificate (gateway.DirectReads).
func (m *SignedTickets) DirectRoads() ([]localapi.DirectPeer, string, string) {
	var out []localapi.DirectPeer
	for _, p := range m.Peers() {
		dp := localapi.DirectPeer{Name: p.Name}
		for _, r := range roads.LocalRoads {
			if addr, ok := p.Roads[r]; ok {
				dp.Roads = append(dp.Roads, localapi.DirectRoad{Road: string(r), Address: addr, Pin: m.Seal.Pin(p.Name)})
			}
		}
		out = append(out, dp)
	}
	return out, pintls.CertFile, pintls.KeyFile
}

var _ gateway.DirectReads = (*SignedTickets)(nil)

// attachSealed is Attach for a config whose peers have IDs.
func attachSealed(cfg *gateway.Config, fc *statedir.Config, peerListen string, self localapi.Self, ids map[string]identity.ID) error {
	dir := cfg.StateDir
	seal, err := NewSeal(dir, self.Name, ids)
	if err != nil {
		return fmt.Errorf("static: %w", err)
	}
	self.ID = seal.ID.String()
	self.Node = self.ID // what the peers' doors prove this computer is
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	tickets := &SignedTickets{Seal: seal, Self: self, Now: now}
	router, err := NewSealedRouter(fc.Peers, seal, tickets, now, cfg.Logger)
	if err != nil {
		return fmt.Errorf("static: %s: %w", filepath.Join(dir, statedir.ConfigFile), err)
	}
	if err := ensurePeerListener(cfg, fc, peerListen); err != nil {
		return err
	}
	for i := range cfg.PeerListeners {
		cfg.PeerListeners[i].Listener = tls.NewListener(rawsock.Listener(cfg.PeerListeners[i].Listener), seal.ServerConfig())
	}
	port := 0
	if ta, ok := cfg.PeerListeners[0].Listener.Addr().(*net.TCPAddr); ok {
		port = ta.Port
	}
	pairing := newPairing(dir, seal, router, tickets, self, port, now, cfg.Logger)
	router.SetPairing(pairing)
	for i := range cfg.PeerListeners {
		if cfg.PeerListeners[i].Routes == nil {
			cfg.PeerListeners[i].Routes = pairing.Routes
		}
	}
	if d, err := discovery(fc, seal, self.Name, cfg.PeerListeners[0].Listener.Addr(), ids, router); err != nil {
		return fmt.Errorf("static: %w", err)
	} else if d != nil {
		d.Log = cfg.Logger
		router.SetDiscovery(d)
	}
	tickets.Peers = router.StaticPeers
	cfg.Router = router
	cfg.Door = IDDoor{Seal: seal, Now: now, Checked: &ticket.Checked{}}
	cfg.Tickets = tickets
	cfg.SelfFunc = pairing.Self // a person may rename it
	return nil
}

// ensurePeerListener gives cfg the peer API's listener unless it has one.
func ensurePeerListener(cfg *gateway.Config, fc *statedir.Config, peerListen string) error {
	if len(cfg.PeerListeners) > 0 {
		return nil
	}
	ln, err := listenPeer(fc, peerListen)
	if err != nil {
		return err
	}
	cfg.PeerListeners = []gateway.PeerListener{{Name: "peer", Listener: ln}}
	return nil
}

// listenPeer opens the peer API's listener: on peerListen, else fc's
// peer_listen, else DefaultPeerListen.
func listenPeer(fc *statedir.Config, peerListen string) (net.Listener, error) {
	addr := peerListen
	if addr == "" {
		addr = fc.PeerListen
	}
	if addr == "" {
		addr = DefaultPeerListen
	}
	lc := net.ListenConfig{KeepAliveConfig: roadfacts.KeepAlive} // a caller whose road died is found by its keepalive
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("static: the peer API cannot listen on %s (--peer-listen, or peer_listen in %s): %w", addr, statedir.ConfigFile, err)
	}
	return ln, nil
}

// CheckSelf refuses peers one of which has this computer's own ID.
func CheckSelf(own identity.ID, peers []roads.StaticPeer) error {
	for _, p := range peers {
		if id, err := identity.Parse(p.ID); err == nil && id == own {
			return fmt.Errorf("peer %q has this computer's own id (%s): a computer is not its own peer", p.Name, own)
		}
	}
	return nil
}

// discovery is the local discovery that fc asks for (nil when "off"):
// DELTA_DISCOVERY, else fc's "discovery", else on at DiscoveryPort.
func discovery(fc *statedir.Config, seal *Seal, name string, peerAddr net.Addr, ids map[string]identity.ID, router *Router) (*Discovery, error) {
	mode := fc.Discovery
	if v, ok := os.LookupEnv("DELTA_DISCOVERY"); ok {
		mode = v
	}
	listen := ""
	switch mode {
	case "", "on":
	case "off":
		return nil, nil
	default:
		if _, _, err := net.SplitHostPort(mode); err != nil {
			return nil, fmt.Errorf("\"discovery\": %q is not on, off or HOST:PORT", mode)
		}
		listen = mode
	}
	port := 0
	if ta, ok := peerAddr.(*net.TCPAddr); ok {
		port = ta.Port
	}
	return &Discovery{Self: seal.ID, Cert: &seal.Cert, Name: name, Port: port, IDs: ids, Paired: seal.IDs, Learn: router.Learn, State: router.state, ListenAddr: listen}, nil
}
