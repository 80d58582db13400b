// Package static is static mode as a plug: peers named in the state
// folder's config.json. Attach wires it into a gateway.Config the way the
// tailnet node's Attach does; no tailnet is joined. Paired peers whose
// addresses change are found again by local discovery (discover.go:
// signed announcements, believed only once the pinned handshake succeeds
// at the new address).
//
// Peers named with their IDs (package identity) are reached over TLS 1.3
// pinned to each ID both ways, and each computer signs its tickets with its
// own key (sealed.go): nothing crosses the network in the clear, and no
// computer can pose as another. A config of the older kind, with a network
// key every computer shares and no IDs, is plain TCP: requests and answers
// cross the network readable, and any key holder may sign as any computer.
//
// With IDs, peers are paired and unpaired while Delta runs, with a
// person's yes on each side (pairing.go): a computer that is not paired
// may ask to pair, and its door takes nothing else from it.
package static

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway"
	"github.com/delta-roads/delta/gateway/carry/owner"
	"github.com/delta-roads/delta/gateway/net/identity"
	"github.com/delta-roads/delta/gateway/net/ticket"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/statedir"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/netwatch"
)

// DefaultPeerListen is the peer API's address when neither the flag nor the
// config names one.
const DefaultPeerListen = "127.0.0.1:7421"

// Attach makes cfg a static-mode gateway for the peers in fc: its router,
// door, tickets and name, and, unless cfg.PeerListeners has one already, a
// plain-TCP peer listener on peerListen (if empty, fc's peer_listen, else
// DefaultPeerListen). cfg.StateDir must be set.
func Attach(cfg *gateway.Config, fc *statedir.Config, peerListen string) error {
	dir := cfg.StateDir
	if err := CheckPeers(fc.Peers); err != nil {
		return fmt.Errorf("static: %s: %w", filepath.Join(dir, statedir.ConfigFile), err)
	}
	self, err := fc.Self(dir, netwatch.ComputerName)
	if err != nil {
		return err
	}
	ids, err := PeerIDs(fc.Peers)
	if err != nil {
		return fmt.Errorf("static: %s: %w", filepath.Join(dir, statedir.ConfigFile), err)
	}
	if ids == nil && len(fc.Peers) == 0 {
		ids = map[string]identity.ID{} // "mode": "static" and no peer yet: waiting to be paired, by ID
	}
	if ids != nil {
		return attachSealed(cfg, fc, peerListen, self, ids)
	}
	k, err := key(dir, fc)
	if err != nil {
		return err
	}
	if err := PlaintextOnLoopback(fc.Peers, peerListenAddr(fc, peerListen, cfg.PeerListeners)); err != nil {
		return fmt.Errorf("static: %s: %w", filepath.Join(dir, statedir.ConfigFile), err)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	tickets := &MintedTickets{Key: k, Self: self, Now: now, Peers: fc.Peers}
	router, err := NewRouter(fc.Peers, tickets, now, cfg.Logger)
	if err != nil {
		return fmt.Errorf("static: %s: %w", filepath.Join(dir, statedir.ConfigFile), err)
	}
	if err := ensurePeerListener(cfg, fc, peerListen); err != nil {
		return err
	}
	cfg.Router = router
	cfg.Door = TicketDoor{Key: k, Now: now, Known: router.Known, Self: self.Name, Checked: &ticket.Checked{}}
	cfg.Tickets = tickets
	cfg.SelfFunc = func() localapi.Self { return self }
	return nil
}

// PlaintextOnLoopback refuses a config of the network-key kind (plain
// TCP) unless its peer listener and every peer's address are on this
// computer's loopback: off loopback Delta no longer carries requests and
// answers in the clear. The refusal says how to pair by ID instead.
func PlaintextOnLoopback(peers []roads.StaticPeer, listen string) error {
	off := ""
	if host, _, err := net.SplitHostPort(listen); err == nil && !proto.IsLoopbackHost(host) {
		off = "its peer API listens on " + listen
	}
	for _, p := range peers {
		for _, r := range roads.All {
			a, ok := p.Roads[r]
			if !ok || off != "" {
				continue
			}
			if host, _, err := net.SplitHostPort(a); err == nil && !proto.IsLoopbackHost(host) {
				off = fmt.Sprintf("peer %s's %s road is %s", p.Name, r, a)
			}
		}
	}
	if off == "" {
		return nil
	}
	name := "NAME"
	if len(peers) > 0 {
		name = peers[0].Name
	}
	return fmt.Errorf("the peers are named with a shared network_key and no IDs, whose roads are plain TCP, and %s, off this computer: "+
		"Delta does not carry requests across a network in the clear. Pair the computers by ID instead (every road TLS pinned): "+
		"on each one run `delta id`, then on each, for each peer, `delta pair %s=ID` (docs/protocol.md §5)", off, name)
}

// peerListenAddr is where the peer API will listen: a listener given, else
// the flag, else the config, else DefaultPeerListen.
func peerListenAddr(fc *statedir.Config, flag string, given []gateway.PeerListener) string {
	if len(given) > 0 {
		return given[0].Listener.Addr().String()
	}
	for _, a := range []string{flag, fc.PeerListen} {
		if a != "" {
			return a
		}
	}
	return DefaultPeerListen
}

// key is the network key of fc. Without one a static network cannot work
// (each computer would sign tickets only it can check), so it is refused
// at start, with a key to copy.
func key(dir string, fc *statedir.Config) (ticket.Key, error) {
	path := filepath.Join(dir, statedir.ConfigFile)
	if fc.NetworkKey == "" {
		p := fc.Peers[0].Name
		return nil, fmt.Errorf("static: %s names peers without their IDs: pair this computer with each by ID (on %s run `delta id`, then here `delta pair %s=ID`), "+
			"or, for the older kind of static network, give every computer the same \"network_key\"", path, p, p)
	}
	k, err := ParseKey(fc.NetworkKey)
	if err != nil {
		return nil, fmt.Errorf("static: %s: %w", path, err)
	}
	return k, nil
}

// ParseKey reads a network key: at least 16 bytes, hex-encoded.
func ParseKey(s string) (ticket.Key, error) {
	k, err := hex.DecodeString(s)
	if err != nil || len(k) < 16 {
		return nil, errors.New("network_key must be at least 16 bytes, hex-encoded (32 hex digits or more)")
	}
	return k, nil
}

// NewKey makes a fresh network key, hex-encoded (16 random bytes).
func NewKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// TicketDoor admits requests that carry `Authorization: Delta <ticket>`
// signed with Key, from one of this computer's configured peers. Every
// holder of a static network's key can sign what it likes, so the door
// checks what it can: the name is a configured peer's (never this
// computer's own, never one it does not know), and the ticket lives no
// longer than ticket.Lifetime (ticket.Check). The node id is the
// holder's word: within a static network every key holder is trusted
// alike, which docs/protocol.md says; tailnet mode binds a caller to its
// tailnet identity instead.
type TicketDoor struct {
	Key ticket.Key
	Now func() time.Time
	// Known reports whether a name is one of this computer's peers; Self
	// is this computer's name. If Known is nil, any name is admitted.
	Known func(name string) bool
	Self  string
	// Checked remembers tickets verified already (each is sent on every
	// request for minutes).
	Checked *ticket.Checked
}

// Identify implements Door.
func (d TicketDoor) Identify(r *http.Request) (owner.Visitor, error) {
	t, err := requestTicket(r)
	if err != nil {
		return owner.Visitor{}, err
	}
	var c ticket.Claims
	if d.Checked != nil {
		c, err = d.Checked.Check(d.Key, t, d.Now())
	} else {
		c, err = d.Key.Check(t, d.Now())
	}
	if err != nil {
		return owner.Visitor{}, fmt.Errorf("%w: %w", owner.ErrDoorUnauthorized, err)
	}
	if d.Known != nil && (c.Name == d.Self || !d.Known(c.Name)) {
		return owner.Visitor{}, fmt.Errorf("the ticket names %q, which is not one of this computer's peers in config.json", c.Name)
	}
	return owner.Visitor{Node: c.Node, Name: c.Name, ReadOnly: c.ReadOnly()}, nil
}

// requestTicket is the ticket in r's `Authorization: Delta <ticket>`, or
// the door's refusal naming what is wrong with the header.
func requestTicket(r *http.Request) (string, error) {
	auth := r.Header.Get("Authorization")
	t, ok := proto.TicketFrom(auth)
	switch {
	case ok:
		return t, nil
	case auth == "":
		return "", fmt.Errorf("%w: the request has no Authorization header", owner.ErrDoorUnauthorized)
	}
	return "", fmt.Errorf("%w: the Authorization header is not \"Delta <ticket>\"", owner.ErrDoorUnauthorized)
}

// MintedTickets mints this computer's own tickets with a key shared by the
// static network, renewing them ahead of expiry.
type MintedTickets struct {
	Key  ticket.Key
	Self localapi.Self
	Now  func() time.Time
	// Peers are the configured peers, whose lan and thunderbolt roads
	// direct reads use (DirectRoads).
	Peers []roads.StaticPeer

	mu      sync.Mutex
	held    string
	expires time.Time
}

// DirectRoads are the configured peers' thunderbolt and lan roads, plain
// TCP (gateway.DirectReads).
func (m *MintedTickets) DirectRoads() ([]localapi.DirectPeer, string, string) {
	var out []localapi.DirectPeer
	for _, p := range m.Peers {
		dp := localapi.DirectPeer{Name: p.Name}
		for _, r := range roads.LocalRoads {
			if addr, ok := p.Roads[r]; ok {
				dp.Roads = append(dp.Roads, localapi.DirectRoad{Road: string(r), Address: addr})
			}
		}
		out = append(out, dp)
	}
	return out, "", ""
}

// ReadTicket mints a read ticket for peer (gateway.DirectReads): under the
// network key, like every static ticket, admitting reads only.
func (m *MintedTickets) ReadTicket(_ context.Context, _ string) (string, time.Time, error) {
	exp := m.Now().Add(ticket.Lifetime)
	return m.Key.Mint(ticket.Claims{Node: m.Self.Node, Name: m.Self.Name, Expires: exp, Scope: ticket.ScopeRead}), exp, nil
}

// Ticket implements Tickets.
// A ticket is minted once and sent until half its life has passed (or the
// door refused it: renew), not minted for every request.
func (m *MintedTickets) Ticket(_ context.Context, _ string, renew bool) (string, error) {
	now := m.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if renew || m.held == "" || now.After(m.expires.Add(-ticket.Lifetime/2)) {
		m.expires = now.Add(ticket.Lifetime)
		m.held = m.Key.Mint(ticket.Claims{Node: m.Self.Node, Name: m.Self.Name, Expires: m.expires})
	}
	return m.held, nil
}

var _ gateway.DirectReads = (*MintedTickets)(nil)
