package tailnet

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/roads/routes"
	"github.com/delta-roads/delta/netwatch"
)

func TestMagicPacket(t *testing.T) {
	mac, _ := net.ParseMAC("a4:83:e7:01:02:03")
	p, err := MagicPacket(mac)
	if err != nil || len(p) != 102 || !bytes.Equal(p[:6], bytes.Repeat([]byte{0xff}, 6)) {
		t.Fatalf("%x %v", p, err)
	}
	for i := range 16 {
		if !bytes.Equal(p[6+6*i:12+6*i], mac) {
			t.Fatalf("repeat %d: %x", i, p[6+6*i:12+6*i])
		}
	}
	if _, err := MagicPacket(net.HardwareAddr{1, 2, 3}); err == nil {
		t.Fatal("a 3-byte address made a packet")
	}
}

// TestAsleepError: it says the words of the issue, and is still a
// refusal of every road (held down, offline) for the callers.
func TestAsleepError(t *testing.T) {
	cause := &routes.OfflineError{Peer: "studio"}
	err := error(&AsleepError{Peer: "studio", Cause: cause, Sent: []string{"a4:83:e7:01:02:03 via en0"}})
	if !strings.HasPrefix(err.Error(), "studio is asleep; Delta sent it a wake-up (a4:83:e7:01:02:03 via en0)") || !errors.Is(err, roads.ErrOffline) {
		t.Fatalf("%v", err)
	}
}

// TestLocalRoad: a hello's address that is this computer's own is never a
// road; one a running interface of the road reaches is, bound to it.
func TestLocalRoad(t *testing.T) {
	st := netwatch.State{}
	for name, p := range map[string]string{"vboxnet0": "192.168.56.1/24", "en0": "192.168.1.237/24"} {
		st[name] = netwatch.Classify(name, net.FlagUp|net.FlagRunning, "", []netip.Prefix{netip.MustParsePrefix(p)}, netwatch.Media{})
	}
	for _, tc := range []struct {
		ip    string
		iface string
		ok    bool
	}{
		{"192.168.56.1", "", false},  // VirtualBox's, on both Macs
		{"192.168.1.237", "", false}, // this computer's own lan address
		{"192.168.1.20", "en0", true},
		{"10.0.0.5", "", false}, // no interface reaches it
		{"127.0.0.1", "", true}, // tests
	} {
		iface, ok := localRoad(st, roads.LAN, netip.MustParseAddr(tc.ip))
		if iface != tc.iface || ok != tc.ok {
			t.Errorf("localRoad(%s) = %q, %v; want %q, %v", tc.ip, iface, ok, tc.iface, tc.ok)
		}
	}
}
