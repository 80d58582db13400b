package static

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/net/identity"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/netwatch"
)

// Local discovery (static mode with IDs), in Syncthing's way: each Delta
// announces its ID and its peer API's port by UDP broadcast on each lan
// and thunderbolt network it is on, at start, every AnnounceEvery, and at
// once (three times, 300 ms apart) when an interface gains an address;
// and it listens for its peers' announcements on DiscoveryPort.
//
// An announcement proves who made it (issue 63, D2): it carries its
// computer's certificate, whose SHA-256 is the ID it claims, and is signed
// with that certificate's key over its ID, port, name and time; one whose
// signature does not verify, or that is not newer than the last one heard
// from that ID on that road (or more than FreshFor from this computer's
// clock), is ignored, so that a recorded one cannot be told again. Even then it only
// says where to try: one from a paired ID moves (or adds) that peer's road
// on the network it came from only once the pinned handshake has
// succeeded at the new address (Router.Learn), since the address is the
// packet's source, not something signed. One from an ID that is not
// paired is kept for a while as "nearby, not paired" (at most MaxNearby,
// the oldest forgotten first), with its name only when it is a valid
// peer name that no paired peer has (D3, D4), and with the command that
// would pair it, built from the ID and the address alone. Announcements
// from this computer's own ID, from outside a lan or thunderbolt network,
// or that do not parse are ignored.

// DiscoveryPort is the UDP port announcements go to.
const DiscoveryPort = 7422

// AnnounceEvery is how often a Delta announces itself when nothing
// changes; NearbyFor is how long an unpaired announcement is shown;
// MaxNearby is how many are kept at once; FreshFor is how far an
// announcement's time may be from this computer's clock.
const (
	AnnounceEvery = 30 * time.Second
	NearbyFor     = 2 * AnnounceEvery
	MaxNearby     = 64
	FreshFor      = 10 * time.Minute
)

// announceMagic starts every announcement.
const announceMagic = "DELTA-ANNOUNCE/2 "

// Announcement is what a Delta says of itself.
type Announcement struct {
	ID   string `json:"id"`
	Port int    `json:"port"` // its peer API's TCP port
	Name string `json:"name,omitempty"`
	// At is when it was made (Unix milliseconds): each is newer than the
	// last, so a recorded one cannot be told again.
	At int64 `json:"at"`
	// Cert is its computer's certificate (DER), whose SHA-256 is ID, and
	// Sig that certificate's key's signature of the rest (Signed).
	Cert []byte `json:"cert"`
	Sig  []byte `json:"sig"`
}

// Signed is what an announcement's signature covers: its ID, port, name
// and time, each told apart.
func (a Announcement) Signed() []byte {
	return fmt.Appendf(nil, "delta-announce/2\x00%s\x00%d\x00%s\x00%d", a.ID, a.Port, a.Name, a.At)
}

// Sign gives the announcement its certificate and signature, made with
// cert's key (at a.At, set already).
func (a *Announcement) Sign(cert *tls.Certificate) error {
	signer, ok := cert.PrivateKey.(crypto.Signer)
	if !ok || len(cert.Certificate) == 0 {
		return errors.New("local discovery: this computer's certificate has no key to sign with")
	}
	a.Cert = cert.Certificate[0]
	opts, msg := crypto.SignerOpts(crypto.SHA256), a.Signed()
	if _, ed := signer.Public().(ed25519.PublicKey); ed {
		opts = crypto.Hash(0)
	} else {
		h := sha256.Sum256(msg)
		msg = h[:]
	}
	sig, err := signer.Sign(rand.Reader, msg, opts)
	if err != nil {
		return fmt.Errorf("local discovery: sign an announcement: %w", err)
	}
	a.Sig = sig
	return nil
}

// Marshal is the announcement's packet.
func (a Announcement) Marshal() []byte {
	b, _ := json.Marshal(a)
	return append([]byte(announceMagic), b...)
}

// ParseAnnouncement reads a packet and checks that it is what it says: a
// packet that is not one, or whose certificate is not its ID's, or whose
// signature does not verify, is an error naming why. A name that is not a
// valid peer name is dropped (the rest stands).
func ParseAnnouncement(b []byte) (Announcement, identity.ID, error) {
	var a Announcement
	if !strings.HasPrefix(string(b), announceMagic) {
		return a, identity.ID{}, errors.New("not a Delta announcement")
	}
	if err := json.Unmarshal(b[len(announceMagic):], &a); err != nil {
		return a, identity.ID{}, fmt.Errorf("a Delta announcement that is not JSON: %w", err)
	}
	id, err := identity.Parse(a.ID)
	if err != nil {
		return a, id, err
	}
	if a.Port <= 0 || a.Port > 65535 {
		return a, id, fmt.Errorf("a Delta announcement with port %d", a.Port)
	}
	if identity.FromCert(a.Cert) != id {
		return a, id, fmt.Errorf("an announcement from %s whose certificate is not that ID's", id.Short())
	}
	cert, err := x509.ParseCertificate(a.Cert)
	if err != nil {
		return a, id, fmt.Errorf("an announcement from %s whose certificate does not parse: %w", id.Short(), err)
	}
	algo := x509.ECDSAWithSHA256
	switch cert.PublicKeyAlgorithm {
	case x509.Ed25519:
		algo = x509.PureEd25519
	case x509.RSA:
		algo = x509.SHA256WithRSA
	}
	if err := cert.CheckSignature(algo, a.Signed(), a.Sig); err != nil {
		return a, id, fmt.Errorf("an announcement from %s whose signature does not verify: %w", id.Short(), err)
	}
	if a.Name != "" && proto.CheckName("peer", a.Name) != nil {
		a.Name = "" // not a name a person may be shown or pair by (D4)
	}
	return a, id, nil
}

// Fresh reports whether an announcement made at at (Unix ms) may be
// believed at now after last, the newest one heard from that ID (0: none):
// newer than it, and within FreshFor of now.
func Fresh(at, last int64, now time.Time) bool {
	d := time.Duration(now.UnixMilli()-at) * time.Millisecond
	return at > last && d < FreshFor && d > -FreshFor
}

// Heard is what an announcement means here, a pure decision: move the
// road of a paired peer (Peer, Road, Address), keep an unpaired ID as
// nearby (Nearby), or nothing (Ignore, with why).
type Heard struct {
	Peer    string
	Road    roads.Road
	Address string
	Nearby  bool
	Ignore  string
}

// Decide says what an announcement a from src means to a computer whose
// own ID is self, paired with ids (name → ID), on the interfaces st.
// Loopback counts as a lan network (two Deltas on one machine, tests).
func Decide(a Announcement, id identity.ID, src netip.Addr, self identity.ID, ids map[string]identity.ID, st netwatch.State) Heard {
	if id == self {
		return Heard{Ignore: "this computer's own announcement"}
	}
	src = src.Unmap()
	road := roads.Road("")
	for _, r := range roads.LocalRoads { // the best road the source is on
		if st.InterfaceFor(r, src) != "" {
			road = r
			break
		}
	}
	switch {
	case road != "":
	case src.IsLoopback():
		road = roads.LAN
	default:
		return Heard{Ignore: fmt.Sprintf("%s is on no lan or thunderbolt network of this computer's", src)}
	}
	addr := netip.AddrPortFrom(src, uint16(a.Port)).String()
	for name, pid := range ids {
		if pid == id {
			return Heard{Peer: name, Road: road, Address: addr}
		}
	}
	return Heard{Road: road, Address: addr, Nearby: true}
}

// Discovery announces this computer and listens for its peers.
type Discovery struct {
	Self identity.ID
	Name string
	Port int // this computer's peer API port
	IDs  map[string]identity.ID
	// Paired, if not nil, gives the paired IDs now in IDs' place (peers
	// paired and unpaired while Delta runs).
	Paired func() map[string]identity.ID
	// Learn moves a paired peer's road (the router's Learn).
	Learn func(peer string, road roads.Road, addr string)
	// State is the interfaces now (the router's netwatch state).
	State func() netwatch.State
	// Extra are addresses announcements also go to (tests on loopback,
	// where there is no broadcast).
	Extra []netip.AddrPort
	// ListenAddr is where announcements are heard; if empty,
	// 0.0.0.0:DiscoveryPort.
	ListenAddr string
	Log        *slog.Logger
	Now        func() time.Time

	// Cert is this computer's certificate, whose key signs its
	// announcements. Required.
	Cert *tls.Certificate

	conn   *net.UDPConn
	mu     sync.Mutex
	nearby map[identity.ID]localapi.Nearby
	last   map[heardOn]int64 // the newest announcement heard from each ID on each road (Unix ms)
	sent   int64             // the time of the last announcement made
	burst  chan struct{}
	once   sync.Once

	blockedOnce sync.Once
}

// heardOn is an ID on a road. An announcement goes to every network at
// once, the same one on each: freshness is kept per road, or the copy
// that came by lan would make the one by thunderbolt a replay.
type heardOn struct {
	id   identity.ID
	road roads.Road
}

// forget drops what was kept of id's announcements. d.mu is held.
func (d *Discovery) forget(id identity.ID) {
	for _, r := range roads.LocalRoads {
		delete(d.last, heardOn{id, r})
	}
}

func (d *Discovery) bursts() chan struct{} {
	d.once.Do(func() { d.burst = make(chan struct{}, 1) })
	return d.burst
}

// Start opens the listening socket; Run then serves it. An error (the
// port taken by something that is not a Delta) leaves discovery off, and
// the configured addresses still work.
func (d *Discovery) Start() error {
	addr := d.ListenAddr
	if addr == "" {
		addr = fmt.Sprintf("0.0.0.0:%d", DiscoveryPort)
	}
	lc := net.ListenConfig{Control: reuseAndBroadcast}
	pc, err := lc.ListenPacket(context.Background(), "udp4", addr)
	if err != nil {
		return fmt.Errorf("local discovery cannot listen on udp %s: %w", addr, err)
	}
	d.mu.Lock()
	d.conn = pc.(*net.UDPConn)
	d.nearby = map[identity.ID]localapi.Nearby{}
	d.last = map[heardOn]int64{}
	d.mu.Unlock()
	return nil
}

// Addr is where it listens, nil before Start.
func (d *Discovery) Addr() net.Addr {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn == nil {
		return nil
	}
	return d.conn.LocalAddr()
}

// Run announces and listens until ctx ends.
func (d *Discovery) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); d.listen() }()
	go func() { <-ctx.Done(); d.conn.Close() }()
	t := time.NewTicker(AnnounceEvery)
	defer t.Stop()
	d.Announce()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
			d.Announce()
		case <-d.bursts():
			for i := 0; i < 3; i++ {
				d.Announce()
				select {
				case <-ctx.Done():
				case <-time.After(300 * time.Millisecond):
				}
			}
		}
	}
}

// SetName gives this computer's announcements its new name (a person
// renamed it), said at once.
func (d *Discovery) SetName(name string) {
	d.mu.Lock()
	d.Name = name
	d.mu.Unlock()
	d.Soon()
}

// Soon announces at once, three times (an interface gained an address).
func (d *Discovery) Soon() {
	select {
	case d.bursts() <- struct{}{}:
	default:
	}
}

// Targets are the broadcast addresses of this computer's lan and
// thunderbolt networks (IPv4), and Extra.
func Targets(st netwatch.State, extra []netip.AddrPort) []netip.AddrPort {
	seen := map[netip.AddrPort]bool{}
	var out []netip.AddrPort
	add := func(a netip.AddrPort) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, ifc := range st {
		if !ifc.Road.Local() || !ifc.Running {
			continue
		}
		for _, n := range ifc.Nets {
			if b, ok := broadcast(n); ok {
				add(netip.AddrPortFrom(b, DiscoveryPort))
			}
		}
	}
	for _, e := range extra {
		add(e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// broadcast is the directed broadcast address of an IPv4 network.
func broadcast(n netip.Prefix) (netip.Addr, bool) {
	if !n.Addr().Is4() || n.Bits() >= 31 {
		return netip.Addr{}, false
	}
	a := n.Masked().Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= 1<<(32-n.Bits()) - 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// Announce sends this computer's announcement to every target once. A
// discovery that listens on loopback (two Deltas on one machine, tests)
// sends only to Extra: it never broadcasts on the machine's networks.
func (d *Discovery) Announce() {
	d.mu.Lock()
	at := max(d.now().UnixMilli(), d.sent+1) // each newer than the last, whatever the clock does
	d.sent = at
	name := d.Name
	d.mu.Unlock()
	a := Announcement{ID: d.Self.String(), Port: d.Port, Name: name, At: at}
	if err := a.Sign(d.Cert); err != nil {
		if d.Log != nil {
			d.Log.Warn("local discovery cannot sign this computer's announcement; it is not sent", "err", err)
		}
		return
	}
	pkt := a.Marshal()
	st := d.State()
	if host, _, err := net.SplitHostPort(d.ListenAddr); err == nil && proto.IsLoopbackHost(host) {
		st = nil
	}
	for _, to := range Targets(st, d.Extra) {
		_, err := d.conn.WriteToUDPAddrPort(pkt, to)
		switch {
		case err == nil || d.Log == nil:
		case AnnounceBlocked(runtime.GOOS, err):
			d.blockedOnce.Do(func() {
				d.Log.Warn("macOS is blocking Delta's Local Network access: local discovery cannot announce this computer (peers are still tried at their configured addresses); allow Delta in System Settings › Privacy & Security › Local Network", "to", to, "err", err)
			})
		default:
			d.Log.Debug("local discovery: announce", "to", to, "err", err)
		}
	}
}

// AnnounceBlocked reports whether a failed announcement looks like macOS's
// Local Network privacy (macOS 15 and later), which covers broadcasts as it
// covers connects (Apple's TN3179): sending to a broadcast address of a
// directly connected network fails at once with "no route to host"
// (EHOSTUNREACH), and broadcasts are not delivered to the app. Delta
// announces by UDP broadcast, not Bonjour, so NSBonjourServices is not
// needed; NSLocalNetworkUsageDescription (Info.plist) is, as for the roads.
// Pure, for tests on every OS.
func AnnounceBlocked(goos string, err error) bool {
	return goos == "darwin" && errors.Is(err, syscall.EHOSTUNREACH)
}

func (d *Discovery) listen() {
	buf := make([]byte, 2048)
	for {
		n, from, err := d.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		a, id, err := ParseAnnouncement(buf[:n])
		if err != nil {
			if d.Log != nil {
				d.Log.Debug("local discovery: an announcement ignored", "from", from, "err", err)
			}
			continue
		}
		h := Decide(a, id, from.Addr(), d.Self, d.ids(), d.State())
		if h.Ignore != "" {
			continue
		}
		d.mu.Lock()
		on := heardOn{id, h.Road}
		fresh := Fresh(a.At, d.last[on], d.now())
		if fresh && (h.Peer != "" || d.last[on] != 0) {
			d.last[on] = a.At // kept for paired IDs, and for the nearby ones kept (forgotten with them)
		}
		d.mu.Unlock()
		if !fresh {
			if d.Log != nil {
				d.Log.Debug("local discovery: an announcement ignored: not newer than the last one from its ID, or far from this computer's clock", "from", from, "id", id.Short())
			}
			continue
		}
		switch {
		case h.Peer != "":
			d.Learn(h.Peer, h.Road, h.Address)
		case h.Nearby:
			d.keepNearby(id, a, h)
		}
	}
}

// keepNearby keeps an unpaired ID heard, at most MaxNearby of them (the
// oldest forgotten first), with its name only when no paired peer has it
// (a stranger never takes a paired peer's name, D4).
func (d *Discovery) keepNearby(id identity.ID, a Announcement, h Heard) {
	name := a.Name
	if _, paired := d.ids()[name]; paired {
		name = ""
	}
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.nearby[id]; !ok && len(d.nearby) >= MaxNearby {
		var oldest identity.ID
		for k, n := range d.nearby {
			if oldest.IsZero() || n.SeenAt.Before(d.nearby[oldest].SeenAt) {
				oldest = k
			}
		}
		delete(d.nearby, oldest)
		d.forget(oldest)
	}
	d.nearby[id] = localapi.Nearby{ID: id.String(), Name: name, Road: string(h.Road), Address: h.Address, SeenAt: now,
		Pair: pairLine(id, h.Road, h.Address)}
	d.last[heardOn{id, h.Road}] = a.At
}

// ids are the paired IDs by name.
func (d *Discovery) ids() map[string]identity.ID {
	if d.Paired != nil {
		return d.Paired()
	}
	return d.IDs
}

func (d *Discovery) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// pairLine is the command that pairs an ID heard nearby, under a name the
// person chooses (NAME): never built from what a stranger calls itself
// (D4).
func pairLine(id identity.ID, road roads.Road, addr string) string {
	const name = "NAME"
	r := ""
	if road == roads.Thunderbolt {
		r = "thunderbolt@"
	}
	return fmt.Sprintf("delta pair %s=%s@%s%s", name, id, r, addr)
}

// Nearby are the unpaired Deltas heard in the last NearbyFor, newest
// first.
func (d *Discovery) Nearby() []localapi.Nearby {
	if d == nil || d.nearby == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []localapi.Nearby
	paired := map[identity.ID]bool{}
	for _, id := range d.ids() {
		paired[id] = true
	}
	for id, n := range d.nearby {
		if d.now().Sub(n.SeenAt) > NearbyFor || paired[id] { // paired since it was heard
			delete(d.nearby, id)
			d.forget(id)
			continue
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SeenAt.After(out[j].SeenAt) })
	return out
}
