package static_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/static"
	"github.com/delta-roads/delta/gateway/net/identity"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/kit"
	"github.com/delta-roads/delta/netwatch"
)

func someID(b byte) identity.ID {
	var id identity.ID
	for i := range id {
		id[i] = b + byte(i)
	}
	return id
}

// certFor makes a computer's certificate (as pintls makes one per state
// folder) and returns it with its ID.
func certFor(t *testing.T, name string) (*tls.Certificate, identity.ID) {
	t.Helper()
	cert, _, err := pintls.LoadOrCreate(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return &cert, identity.FromCert(cert.Certificate[0])
}

// signed is a's packet signed with cert, at at (Unix ms).
func signed(t *testing.T, cert *tls.Certificate, id identity.ID, port int, name string, at int64) []byte {
	t.Helper()
	a := static.Announcement{ID: id.String(), Port: port, Name: name, At: at}
	if err := a.Sign(cert); err != nil {
		t.Fatal(err)
	}
	return a.Marshal()
}

// TestAnnouncementWire: an announcement proves who made it: its
// certificate is its ID's and its signature covers its ID, port, name and
// time; anything else is refused, naming why. A name that is not a peer
// name is dropped (issue 63, D2, D4).
func TestAnnouncementWire(t *testing.T) {
	cert, id := certFor(t, "studio")
	other, _ := certFor(t, "stranger")
	now := time.Now().UnixMilli()
	got, gid, err := static.ParseAnnouncement(signed(t, cert, id, 7421, "studio", now))
	if err != nil || gid != id || got.Port != 7421 || got.Name != "studio" || got.At != now {
		t.Fatalf("round trip: %+v %v %v", got, gid, err)
	}
	if a, _, err := static.ParseAnnouncement(signed(t, cert, id, 7421, "studio; curl x | sh", now)); err != nil || a.Name != "" {
		t.Errorf("a name that is no peer name: %q %v, want it dropped", a.Name, err)
	}
	tampered := func(f func(*static.Announcement)) string {
		a := static.Announcement{ID: id.String(), Port: 7421, Name: "studio", At: now}
		if err := a.Sign(cert); err != nil {
			t.Fatal(err)
		}
		f(&a)
		return string(a.Marshal())
	}
	for _, bad := range []struct{ pkt, says string }{
		{"hello", "not a Delta announcement"},
		{"DELTA-ANNOUNCE/2 {", "not JSON"},
		{`DELTA-ANNOUNCE/2 {"id": "nope", "port": 1}`, "not a Delta ID"},
		{`DELTA-ANNOUNCE/2 {"id": "` + id.String() + `", "port": 70000}`, "port 70000"},
		{`DELTA-ANNOUNCE/1 {"id": "` + id.String() + `", "port": 7421, "name": "studio"}`, "not a Delta announcement"},
		{`DELTA-ANNOUNCE/2 {"id": "` + id.String() + `", "port": 7421}`, "certificate is not that ID's"},
		{tampered(func(a *static.Announcement) { a.Cert = other.Certificate[0] }), "certificate is not that ID's"},
		{tampered(func(a *static.Announcement) { a.Port = 7999 }), "signature does not verify"},
		{tampered(func(a *static.Announcement) { a.At++ }), "signature does not verify"},
		{tampered(func(a *static.Announcement) { a.Name = "kitchen" }), "signature does not verify"},
		{tampered(func(a *static.Announcement) { a.Sig[len(a.Sig)-1] ^= 1 }), "signature does not verify"},
	} {
		if _, _, err := static.ParseAnnouncement([]byte(bad.pkt)); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%.60q…: %v, want %q", bad.pkt, err, bad.says)
		}
	}
}

// TestFresh: an announcement is believed only when newer than the last
// one from its ID and within FreshFor of this computer's clock: a
// recorded one cannot be told again.
func TestFresh(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	ms := now.UnixMilli()
	for _, tc := range []struct {
		at, last int64
		want     bool
	}{
		{ms, 0, true},
		{ms, ms - 1, true},
		{ms, ms, false}, // the same one again
		{ms - 1000, ms, false},
		{ms - static.FreshFor.Milliseconds() - 1, 0, false},
		{ms + static.FreshFor.Milliseconds() + 1, 0, false},
		{ms - static.FreshFor.Milliseconds() + 1000, 0, true},
	} {
		if got := static.Fresh(tc.at, tc.last, now); got != tc.want {
			t.Errorf("Fresh(now%+d ms, last now%+d ms) = %v", tc.at-ms, tc.last-ms, got)
		}
	}
}

// lanState is a computer with a lan interface on 192.168.1.0/24 and a
// thunderbolt one on 169.254.0.0/16.
func lanState() netwatch.State {
	return netwatch.State{
		"en0":     {Name: "en0", Road: roads.LAN, Running: true, Addrs: []string{"192.168.1.10"}, Nets: []netip.Prefix{netip.MustParsePrefix("192.168.1.0/24")}},
		"bridge0": {Name: "bridge0", Road: roads.Thunderbolt, Running: true, Addrs: []string{"169.254.10.1"}, Nets: []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}},
		"en5":     {Name: "en5", Road: roads.LAN, Running: false, Addrs: []string{"10.0.0.2"}, Nets: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
	}
}

func TestTargets(t *testing.T) {
	got := static.Targets(lanState(), []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:9")})
	want := []string{"127.0.0.1:9", "169.254.255.255:7422", "192.168.1.255:7422"}
	if len(got) != len(want) {
		t.Fatalf("targets %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Fatalf("targets %v, want %v", got, want)
		}
	}
}

// TestDecide: what an announcement may do, and what it may not.
func TestDecide(t *testing.T) {
	self, studio, stranger := someID(1), someID(2), someID(3)
	ids := map[string]identity.ID{"studio": studio}
	st := lanState()
	for _, tc := range []struct {
		name string
		id   identity.ID
		src  string
		want static.Heard
	}{
		{"a paired peer on the lan moves its lan road", studio, "192.168.1.20", static.Heard{Peer: "studio", Road: roads.LAN, Address: "192.168.1.20:7421"}},
		{"a paired peer over the cable moves its thunderbolt road", studio, "169.254.77.2", static.Heard{Peer: "studio", Road: roads.Thunderbolt, Address: "169.254.77.2:7421"}},
		{"two Deltas on one machine", studio, "127.0.0.1", static.Heard{Peer: "studio", Road: roads.LAN, Address: "127.0.0.1:7421"}},
		{"an ID not paired is only nearby", stranger, "192.168.1.30", static.Heard{Road: roads.LAN, Address: "192.168.1.30:7421", Nearby: true}},
		{"this computer's own", self, "192.168.1.10", static.Heard{Ignore: "this computer's own announcement"}},
		{"from a network that is no road here", studio, "203.0.113.5", static.Heard{Ignore: "203.0.113.5 is on no lan or thunderbolt network of this computer's"}},
		{"from an interface that is down", studio, "10.0.0.9", static.Heard{Ignore: "10.0.0.9 is on no lan or thunderbolt network of this computer's"}},
	} {
		a := static.Announcement{ID: tc.id.String(), Port: 7421}
		if got := static.Decide(a, tc.id, netip.MustParseAddr(tc.src), self, ids, st); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestDiscoveryOnLoopback: a Discovery announces itself, signed, to its
// targets; learns a paired peer's road from its announcement, once (the
// same packet told again is not believed, nor one signed by another key);
// and keeps an unpaired one as nearby, without a paired peer's name, with
// a line that would pair it under a name the person chooses, and at most
// MaxNearby of them.
func TestDiscoveryOnLoopback(t *testing.T) {
	selfCert, self := certFor(t, "laptop")
	studioCert, studio := certFor(t, "studio")
	strangerCert, stranger := certFor(t, "stranger")
	heard, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer heard.Close()
	var mu sync.Mutex
	var learned []string
	d := &static.Discovery{Self: self, Cert: selfCert, Name: "laptop", Port: 7421, IDs: map[string]identity.ID{"studio": studio},
		Learn: func(peer string, road roads.Road, addr string) {
			mu.Lock()
			learned = append(learned, peer+" "+string(road)+" "+addr)
			mu.Unlock()
		},
		State: func() netwatch.State { return netwatch.State{} }, ListenAddr: "127.0.0.1:0",
		Extra: []netip.AddrPort{netip.MustParseAddrPort(heard.LocalAddr().String())}}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// It announced itself at start, signed.
	buf := make([]byte, 2048)
	heard.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _, err := heard.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if a, id, err := static.ParseAnnouncement(buf[:n]); err != nil || id != self || a.Port != 7421 || a.Name != "laptop" {
		t.Fatalf("its announcement: %+v %v", a, err)
	}
	send := func(pkt []byte) {
		c, err := net.Dial("udp4", d.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(pkt)
	}
	now := time.Now().UnixMilli()
	studioPkt := signed(t, studioCert, studio, 7521, "studio", now)
	send(studioPkt)
	send(studioPkt) // told again: not believed
	// studio's ID, signed by the stranger's key: refused.
	forged := static.Announcement{ID: studio.String(), Port: 7999, At: now + 1}
	forged.Sign(strangerCert)
	send(forged.Marshal())
	// A stranger that calls itself studio.
	send(signed(t, strangerCert, stranger, 7621, "studio", now))
	gatewaytest.WaitFor(t, 10*time.Second, "studio's road learned and the stranger nearby", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(learned) >= 1 && len(d.Nearby()) == 1
	})
	send(signed(t, studioCert, studio, 7522, "studio", now+2)) // newer: believed
	gatewaytest.WaitFor(t, 10*time.Second, "studio's newer announcement", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(learned) == 2
	})
	mu.Lock()
	if learned[0] != "studio lan 127.0.0.1:7521" || learned[1] != "studio lan 127.0.0.1:7522" {
		t.Errorf("learned %q; want 7521 once (its copy and the forged one not believed), then 7522", learned)
	}
	mu.Unlock()
	nb := d.Nearby()[0]
	if nb.ID != stranger.String() || nb.Name != "" || nb.Pair != "delta pair NAME="+stranger.String()+"@127.0.0.1:7621" {
		t.Fatalf("nearby: %+v; want no name (a paired peer's), and a line with NAME", nb)
	}

	// A flood of strangers: at most MaxNearby are kept (D3).
	for i := range static.MaxNearby + 20 {
		c, id := certFor(t, fmt.Sprint("flood", i))
		send(signed(t, c, id, 7000+i, fmt.Sprint("flood", i), time.Now().UnixMilli()))
	}
	last := "flood" + fmt.Sprint(static.MaxNearby+19)
	gatewaytest.WaitFor(t, 30*time.Second, "the last stranger of the flood nearby", func() bool {
		for _, n := range d.Nearby() {
			if n.Name == last {
				return true
			}
		}
		return false
	})
	if n := len(d.Nearby()); n > static.MaxNearby {
		t.Errorf("%d strangers kept, want at most %d", n, static.MaxNearby)
	}
}

// TestFoundAfterItMoved: laptop knows studio at an address where nothing
// listens any more (studio moved); studio's announcement, heard by
// laptop's local discovery, moves the road, and the next call goes there
// over the pinned handshake. How long it took is logged, not asserted.
func TestFoundAfterItMoved(t *testing.T) {
	dead := gatewaytest.DeadAddr(t)
	laptop, studio := gatewaytest.SealedPairFinding(t, "laptop", "studio", func(string) string { return dead }, "127.0.0.1:0")
	c, app := withOwner(t, laptop, studio)
	ctx := context.Background()
	var u *kit.Unavailable
	if _, err := c.Call(ctx, "studio", "owner", "POST", "/answer/before", []byte("x"), nil); !errors.As(err, &u) || !u.NothingSent {
		t.Fatalf("a call to where studio was: %v, want nothing sent", err)
	}
	disc := laptop.Router.(*static.Router).Discovery()
	gatewaytest.WaitFor(t, 10*time.Second, "laptop's discovery listens", func() bool { return disc.Addr() != nil })
	_, port, _ := net.SplitHostPort(studio.PeerAddr)
	studioID := idOf(t, studio.Dir)
	conn, err := net.Dial("udp4", disc.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	began := time.Now()
	studioCert, _, err := pintls.LoadOrCreate(studio.Dir, "studio")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	conn.Write(signed(t, &studioCert, studioID, p, "studio", time.Now().UnixMilli()))
	var took time.Duration
	gatewaytest.WaitFor(t, 10*time.Second, "a call reaches studio at its new address", func() bool {
		a, err := c.Call(ctx, "studio", "owner", "POST", "/answer/after", []byte("found"), nil)
		if err == nil && a.Status == 201 {
			took = time.Since(began)
			return true
		}
		return false
	})
	t.Logf("from studio's announcement to the first call answered at its new address: %s", took)
	if app.Effects("/answer/after") != 1 {
		t.Fatalf("the call after the move was carried out %d times", app.Effects("/answer/after"))
	}
	// A Delta that is not paired, heard: shown in laptop's status with the
	// line that would pair it, and given no road.
	strangerCert, stranger := certFor(t, "kitchen")
	conn.Write(signed(t, strangerCert, stranger, 7999, "kitchen", time.Now().UnixMilli()))
	gatewaytest.WaitFor(t, 10*time.Second, "laptop's status shows the stranger nearby", func() bool {
		st, err := c.Status(ctx)
		return err == nil && len(st.Nearby) == 1 && st.Nearby[0].Name == "kitchen" && st.Nearby[0].Pair == "delta pair NAME="+stranger.String()+"@127.0.0.1:7999"
	})
	if st, _ := c.Status(ctx); len(st.Peers) != 1 {
		t.Fatalf("a stranger's announcement made a peer: %+v", st.Peers)
	}
}

// TestAnnounceBlocked: macOS's Local Network privacy refuses a broadcast
// with "no route to host"; elsewhere, or with another error, it is not
// that.
func TestAnnounceBlocked(t *testing.T) {
	for _, tc := range []struct {
		goos string
		err  error
		want bool
	}{
		{"darwin", &net.OpError{Op: "write", Err: &os.SyscallError{Syscall: "sendto", Err: syscall.EHOSTUNREACH}}, true},
		{"darwin", syscall.ENETUNREACH, false},
		{"linux", syscall.EHOSTUNREACH, false},
		{"darwin", nil, false},
	} {
		if got := static.AnnounceBlocked(tc.goos, tc.err); got != tc.want {
			t.Errorf("AnnounceBlocked(%s, %v) = %t", tc.goos, tc.err, got)
		}
	}
}

// TestMoveTriedFirst (issue 63, D2): an announcement that studio really
// made, told from an address where studio is not (a recording replayed
// from another host, or an address studio has left), does not move
// laptop's road: the pinned handshake there fails, the road stays where
// it was, and calls go on being answered.
func TestMoveTriedFirst(t *testing.T) {
	laptop, studio := gatewaytest.SealedPairFinding(t, "laptop", "studio", func(a string) string { return a }, "127.0.0.1:0")
	c, app := withOwner(t, laptop, studio)
	ctx := context.Background()
	call := func(id string) error {
		a, err := c.Call(ctx, "studio", "owner", "POST", "/answer/"+id, []byte("x"), nil)
		if err == nil && a.Status != 201 {
			err = fmt.Errorf("status %d", a.Status)
		}
		return err
	}
	if err := call("before"); err != nil {
		t.Fatal(err)
	}
	disc := laptop.Router.(*static.Router).Discovery()
	gatewaytest.WaitFor(t, 10*time.Second, "laptop's discovery listens", func() bool { return disc.Addr() != nil })
	studioCert, _, err := pintls.LoadOrCreate(studio.Dir, "studio")
	if err != nil {
		t.Fatal(err)
	}
	_, deadPort, _ := net.SplitHostPort(gatewaytest.DeadAddr(t))
	p, _ := strconv.Atoi(deadPort)
	conn, err := net.Dial("udp4", disc.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(signed(t, &studioCert, idOf(t, studio.Dir), p, "studio", time.Now().UnixMilli()))
	gatewaytest.WaitFor(t, 10*time.Second, "laptop to try the address and keep the road", func() bool {
		return laptop.Log.Contains("did not prove itself")
	})
	for i := range 5 {
		if err := call(fmt.Sprint("after-", i)); err != nil {
			t.Fatalf("call %d after the announcement: %v; the road moved to where studio is not", i, err)
		}
	}
	if app.Effects("/answer/after-4") != 1 || laptop.Log.Contains("a peer's road moved") {
		t.Errorf("the road moved, or a call was lost")
	}
}
