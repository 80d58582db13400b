package static_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/identity"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/static"
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

func TestAnnouncementWire(t *testing.T) {
	id := someID(1)
	a := static.Announcement{ID: id.String(), Port: 7421, Name: "studio"}
	got, gid, err := static.ParseAnnouncement(a.Marshal())
	if err != nil || got != a || gid != id {
		t.Fatalf("round trip: %+v %v %v", got, gid, err)
	}
	for _, bad := range []struct{ pkt, says string }{
		{"hello", "not a Delta announcement"},
		{"DELTA-ANNOUNCE/1 {", "not JSON"},
		{`DELTA-ANNOUNCE/1 {"id": "nope", "port": 1}`, "not a Delta ID"},
		{`DELTA-ANNOUNCE/1 {"id": "` + id.String() + `", "port": 70000}`, "port 70000"},
	} {
		if _, _, err := static.ParseAnnouncement([]byte(bad.pkt)); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%q: %v, want %q", bad.pkt, err, bad.says)
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

// TestDiscoveryOnLoopback: a Discovery announces to its targets, learns a
// paired peer's road from its announcement, and keeps an unpaired one as
// nearby, with the line that would pair it.
func TestDiscoveryOnLoopback(t *testing.T) {
	self, studio, stranger := someID(1), someID(2), someID(3)
	heard, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer heard.Close()
	var mu sync.Mutex
	var learned []string
	d := &static.Discovery{Self: self, Name: "laptop", Port: 7421, IDs: map[string]identity.ID{"studio": studio},
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

	// It announced itself at start.
	buf := make([]byte, 2048)
	heard.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _, err := heard.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if a, id, err := static.ParseAnnouncement(buf[:n]); err != nil || id != self || a.Port != 7421 || a.Name != "laptop" {
		t.Fatalf("its announcement: %+v %v", a, err)
	}
	// studio's and a stranger's announcements, from loopback.
	send := func(id identity.ID, port int, name string) {
		c, err := net.Dial("udp4", d.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(static.Announcement{ID: id.String(), Port: port, Name: name}.Marshal())
	}
	send(studio, 7521, "studio")
	send(stranger, 7621, "kitchen")
	gatewaytest.WaitFor(t, 10*time.Second, "studio's road learned and the stranger nearby", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(learned) == 1 && len(d.Nearby()) == 1
	})
	if learned[0] != "studio lan 127.0.0.1:7521" {
		t.Fatalf("learned %q", learned[0])
	}
	nb := d.Nearby()[0]
	if nb.ID != stranger.String() || nb.Name != "kitchen" || nb.Pair != "delta pair kitchen="+stranger.String()+"@127.0.0.1:7621" {
		t.Fatalf("nearby: %+v", nb)
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
	conn.Write([]byte(`DELTA-ANNOUNCE/1 {"id": "` + studioID.String() + `", "port": ` + port + `, "name": "studio"}`))
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
	stranger := someID(9)
	conn.Write([]byte(`DELTA-ANNOUNCE/1 {"id": "` + stranger.String() + `", "port": 7999, "name": "kitchen"}`))
	gatewaytest.WaitFor(t, 10*time.Second, "laptop's status shows the stranger nearby", func() bool {
		st, err := c.Status(ctx)
		return err == nil && len(st.Nearby) == 1 && st.Nearby[0].Pair == "delta pair kitchen="+stranger.String()+"@127.0.0.1:7999"
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
