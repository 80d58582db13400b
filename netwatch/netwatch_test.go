package netwatch

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/roadfacts"
)

func TestClassify(t *testing.T) {
	up := net.FlagUp | net.FlagBroadcast
	p := func(s ...string) (out []netip.Prefix) {
		for _, x := range s {
			out = append(out, netip.MustParsePrefix(x))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		flags  net.Flags
		driver string
		addrs  []netip.Prefix
		road   roadfacts.Road
		n      int
	}{
		{"lo", up | net.FlagLoopback, "", p("127.0.0.1/8"), "", 0},
		{"en0", up, "", p("192.168.1.20/24", "fe80::1/64", "fd7a::1/64", "2001:db8::1/64"), roadfacts.LAN, 2},
		{"wan0", up, "", p("198.51.100.1/24", "fe80::1/64"), "", 0},
		{"en0", net.FlagBroadcast, "", p("192.168.1.20/24"), "", 0},
		{"eth0", up, "virtio_net", p("203.0.113.5/24"), "", 0},
		{"bridge0", up, "", p("169.254.3.1/16"), roadfacts.Thunderbolt, 1},
		{"bridge100", up, "", p("192.168.2.1/24"), "", 0},
		{"thunderbolt0", up, "", p("169.254.3.1/16"), roadfacts.Thunderbolt, 1},
		{"enp5s0", up, "thunderbolt-net", p("10.0.0.1/24"), roadfacts.Thunderbolt, 1},
		{"utun3", up, "", p("100.64.0.1/32"), "", 0},
		{"tailscale0", up, "", p("100.64.0.1/32"), "", 0},
		{"wg0", up, "", p("10.8.0.1/24"), "", 0},
		{"awdl0", up, "", p("fe80::2/64"), "", 0},
		{"en5", up, "", p("fe80::2/64"), "", 0},
		// A developer's Mac: VM and overlay adapters are never roads.
		{"vboxnet0", up, "", p("192.168.56.1/24"), "", 0},
		{"vmnet8", up, "", p("172.16.150.1/24"), "", 0},
		{"vnic0", up, "", p("10.211.55.2/24"), "", 0},
		{"feth3071", up, "", p("10.147.17.5/24"), "", 0},
		{"vmenet0", up, "", nil, "", 0},
	} {
		got := Classify(tc.name, tc.flags, tc.driver, tc.addrs, Media{})
		if got.Road != tc.road || len(got.Addrs) != tc.n || (got.Road == "" && got.Why == "") {
			t.Errorf("%s (%s): %+v, want road %q with %d addresses", tc.name, tc.driver, got, tc.road, tc.n)
		}
	}
}

func TestCurrent(t *testing.T) {
	for _, ifc := range Current() {
		if ifc.Name == "lo" && ifc.Road != "" {
			t.Errorf("loopback classified as %s", ifc.Road)
		}
	}
}

func TestInterfaceFor(t *testing.T) {
	st := State{}
	add := func(name string, flags net.Flags, p string) {
		st[name] = Classify(name, flags, "", []netip.Prefix{netip.MustParsePrefix(p)}, Media{})
	}
	run := net.FlagUp | net.FlagRunning
	add("en0", run, "169.254.10.2/16")
	add("bridge0", run, "169.254.3.1/16")
	add("en1", run, "192.168.1.5/24")
	add("en2", net.FlagUp, "10.0.0.5/24") // no carrier
	for _, tc := range []struct {
		road roadfacts.Road
		ip   string
		want string
	}{
		{roadfacts.Thunderbolt, "169.254.3.2", "bridge0"},
		{roadfacts.LAN, "169.254.3.2", "en0"}, // same link-local range: the road decides
		{roadfacts.LAN, "192.168.1.20", "en1"},
		{roadfacts.LAN, "10.0.0.6", ""},
		{roadfacts.LAN, "127.0.0.3", ""},
	} {
		if got := st.InterfaceFor(tc.road, netip.MustParseAddr(tc.ip)); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.road, tc.ip, got, tc.want)
		}
	}
}

// TestMediaOnMacOS: macOS keeps IFF_RUNNING set on a link that ifconfig
// shows as "status: inactive" (from an ifconfig fixture: "en1:
// flags=8963<UP,BROADCAST,SMART,RUNNING,PROMISC,SIMPLEX,MULTICAST> …
// status: inactive" for a Thunderbolt port, and "bridge0:
// flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> … member: en1
// … status: inactive"); SIOCGIFMEDIA's status decides.
func TestMediaOnMacOS(t *testing.T) {
	const ether, wifi = 0x20, 0x80 // IFM_ETHER, IFM_IEEE80211
	for _, tc := range []struct {
		status, active int
		want           Media
	}{
		{0x3, ether, Media{Known: true, Active: true}},                       // IFM_AVALID|IFM_ACTIVE: "status: active"
		{0x1, ether, Media{Known: true}},                                     // IFM_AVALID alone: "status: inactive"
		{0x0, ether, Media{}},                                                // no valid status: flags decide
		{0x3, wifi | 0x16, Media{Known: true, Active: true, Wireless: true}}, // Wi-Fi, with a subtype
	} {
		if got := MediaFromIfmediareq(tc.status, tc.active); got != tc.want {
			t.Errorf("MediaFromIfmediareq(%#x, %#x) = %+v, want %+v", tc.status, tc.active, got, tc.want)
		}
	}
	// 0x8963 and 0x8863 in ifconfig are BSD's bits; Go's net.Flags of them:
	flags := net.FlagUp | net.FlagBroadcast | net.FlagRunning | net.FlagMulticast
	tb := []netip.Prefix{netip.MustParsePrefix("169.254.3.1/16")}
	if got := Classify("bridge0", flags, "", tb, MediaFromIfmediareq(0x1, ether)); got.Road != roadfacts.Thunderbolt || got.Running {
		t.Errorf("bridge0 with status: inactive: %+v, want a thunderbolt road that is not running", got)
	}
	if got := Classify("bridge0", flags, "", tb, MediaFromIfmediareq(0x3, ether)); !got.Running {
		t.Errorf("bridge0 with status: active: %+v, want running", got)
	}
	if got := Classify("en0", flags, "", []netip.Prefix{netip.MustParsePrefix("192.168.1.237/24")}, Media{}); !got.Running {
		t.Errorf("an interface without media: %+v, want its flags to decide (running)", got)
	}
	// The pull seen: Diff says the road was lost.
	before := State{"bridge0": Classify("bridge0", flags, "", tb, MediaFromIfmediareq(0x3, ether))}
	after := State{"bridge0": Classify("bridge0", flags, "", tb, MediaFromIfmediareq(0x1, ether))}
	if c := Diff(before, after); len(c.Lost) != 1 || c.Lost[0] != "bridge0" {
		t.Errorf("a pulled cable on macOS: %+v, want bridge0 lost", c)
	}
}

// TestInterfaceForTies: a Mac on one /24 by Wi-Fi (en0) and by Ethernet
// (en7), as in an ifconfig fixture (en0 192.168.1.237, en7 192.168.1.204):
// the wired one, every time; of two wired, the lower index; a narrower
// network wins over both.
func TestInterfaceForTies(t *testing.T) {
	mk := func(name string, index int, wireless bool, prefix string) Interface {
		ifc := Classify(name, net.FlagUp|net.FlagRunning, "", []netip.Prefix{netip.MustParsePrefix(prefix)}, Media{})
		ifc.Index, ifc.Wireless = index, wireless
		return ifc
	}
	peer := netip.MustParseAddr("192.168.1.20")
	for range 20 { // map order changes from run to run
		st := State{"en0": mk("en0", 4, true, "192.168.1.237/24"), "en7": mk("en7", 12, false, "192.168.1.204/24")}
		if got := st.InterfaceFor(roadfacts.LAN, peer); got != "en7" {
			t.Fatalf("Wi-Fi and Ethernet on one /24: %q, want en7 (wired)", got)
		}
		st = State{"en8": mk("en8", 14, false, "192.168.1.30/24"), "en7": mk("en7", 12, false, "192.168.1.204/24")}
		if got := st.InterfaceFor(roadfacts.LAN, peer); got != "en7" {
			t.Fatalf("two wired on one /24: %q, want en7 (the lower index)", got)
		}
		st = State{"en0": mk("en0", 4, true, "192.168.1.17/28"), "en7": mk("en7", 12, false, "192.168.1.204/24")}
		if got := st.InterfaceFor(roadfacts.LAN, peer); got != "en0" {
			t.Fatalf("a narrower network: %q, want en0", got)
		}
	}
}

// TestOwns: a peer's road to one of this computer's own addresses (both
// Macs have VirtualBox's 192.168.56.1) leads back here, adapters that are
// not roads included.
func TestOwns(t *testing.T) {
	st := State{}
	for name, p := range map[string]string{"vboxnet0": "192.168.56.1/24", "en0": "192.168.1.237/24"} {
		st[name] = Classify(name, net.FlagUp|net.FlagRunning, "", []netip.Prefix{netip.MustParsePrefix(p)}, Media{})
	}
	for ip, want := range map[string]bool{"192.168.56.1": true, "192.168.1.237": true, "192.168.1.20": false} {
		if got := st.Owns(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Owns(%s) = %v, want %v", ip, got, want)
		}
	}
}

// TestIsChange: which routing messages (macOS) make the monitor read the
// interfaces again, after Tailscale's netmon_darwin.go.
func TestIsChange(t *testing.T) {
	const rtmAdd, rtmDelete = 0x1, 0x2
	for _, tc := range []struct {
		what string
		m    routeMsg
		want bool
	}{
		{"a default route changes", routeMsg{Kind: kindRoute, Type: rtmAdd, Dst: netip.MustParseAddr("0.0.0.0"), Interface: "en0"}, true},
		{"a route is deleted on bridge0", routeMsg{Kind: kindRoute, Type: rtmDelete, Dst: netip.MustParseAddr("169.254.0.0"), Interface: "bridge0"}, true},
		{"RTM_MISS", routeMsg{Kind: kindRoute, Type: rtmMiss, Dst: netip.MustParseAddr("192.168.1.9")}, false},
		{"a link-local destination", routeMsg{Kind: kindRoute, Type: rtmAdd, Dst: netip.MustParseAddr("fe80::b476:66ff:fe30:c8f6"), Interface: "en0"}, false},
		{"a route on utun3", routeMsg{Kind: kindRoute, Type: rtmAdd, Dst: netip.MustParseAddr("100.64.0.0"), Interface: "utun3"}, false},
		{"an address on awdl0", routeMsg{Kind: kindIfAddr, Interface: "awdl0"}, false},
		{"an address on vboxnet0", routeMsg{Kind: kindIfAddr, Interface: "vboxnet0"}, false},
		{"an address on en0", routeMsg{Kind: kindIfAddr, Interface: "en0"}, true},
		{"a multicast address", routeMsg{Kind: kindIfMaddr}, false},
		{"RTM_IFINFO (a link's state)", routeMsg{Kind: kindIfInfo, Interface: "en1"}, true},
		{"an interface arrives", routeMsg{Kind: kindIfAnnounce, Interface: "en9"}, true},
		{"something else", routeMsg{Kind: kindOther}, true},
	} {
		if got := isChange(tc.m); got != tc.want {
			t.Errorf("%s: isChange = %v, want %v", tc.what, got, tc.want)
		}
	}
}

// TestPickName: macOS's LocalHostName first, then its ComputerName as a
// DNS label, then the host name's first label (a DHCP-given one can change
// with the network).
func TestPickName(t *testing.T) {
	for _, tc := range []struct{ local, computer, host, want string }{
		{"Alices-MacBook-Pro", "Alice’s MacBook Pro", "dhcp-10-0-0-7.corp.example", "Alices-MacBook-Pro"},
		{"", "Alice’s MacBook Pro", "dhcp-10-0-0-7.corp.example", "Alices-MacBook-Pro"},
		{"", "", "studio.local", "studio"},
		{"", "  __ ", "studio", "studio"},
		{"", "Mac mini (2)", "", "Mac-mini-2"},
		{"", "", "", ""},
	} {
		if got := pickName(tc.local, tc.computer, tc.host); got != tc.want {
			t.Errorf("pickName(%q, %q, %q) = %q, want %q", tc.local, tc.computer, tc.host, got, tc.want)
		}
	}
}

func TestLocalNetworkBlocked(t *testing.T) {
	unreach := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	if !LocalNetworkBlocked("darwin", unreach, true, 2*time.Millisecond) {
		t.Error("no hint for EHOSTUNREACH at once to a connected network on macOS")
	}
	for _, tc := range []struct {
		goos      string
		err       error
		connected bool
		took      time.Duration
	}{{"linux", unreach, true, 0}, {"darwin", refused, true, 0}, {"darwin", unreach, false, 0},
		{"darwin", unreach, true, 3 * time.Second}} { // after an ARP timeout: a peer that is off
		if LocalNetworkBlocked(tc.goos, tc.err, tc.connected, tc.took) {
			t.Errorf("%s %v connected=%v after %v: blocked, want not", tc.goos, tc.err, tc.connected, tc.took)
		}
	}
}

// TestMediaOnMac: the functional type decides Wi-Fi; the media's
// IFM_IEEE80211 only when the type is unknown; the word names both.
func TestMediaOnMac(t *testing.T) {
	const ether, wifiMedia = 0x20, 0x80
	for _, tc := range []struct {
		name                  string
		media                 bool
		status, active, ftype int
		known, up, wireless   bool
	}{
		{"Wi-Fi reported as Ethernet media", true, 0x3, ether, 3, true, true, true},
		{"wired adapter", true, 0x3, ether, 2, true, true, false},
		{"Wi-Fi, link down", true, 0x1, ether, 3, true, false, true},
		{"type unknown: the media decides", true, 0x3, wifiMedia, 0, true, true, true},
		{"type ioctl failed: the media decides", true, 0x3, ether, -1, true, true, false},
		{"wired type beats a Wi-Fi media word", true, 0x3, wifiMedia, 2, true, true, false},
		{"no media (bridge0)", false, 0, 0, 2, false, false, false},
		{"AWDL", true, 0x3, ether, 4, true, true, true},
	} {
		m := MediaOnMac(tc.media, tc.status, tc.active, tc.ftype)
		if m.Known != tc.known || m.Active != tc.up || m.Wireless != tc.wireless || !strings.Contains(m.Word, fmt.Sprintf("functional type %d", tc.ftype)) {
			t.Errorf("%s: %+v", tc.name, m)
		}
		if tc.media && !strings.Contains(m.Word, fmt.Sprintf("ifm_active 0x%x", tc.active)) {
			t.Errorf("%s: the word lacks ifm_active: %q", tc.name, m.Word)
		}
	}
}

// TestPortsRoad: macOS's hardware ports decide between thunderbolt and
// lan where they tell (issue 37, N14): a Thunderbolt port set up on its
// own, a bridge by its members; otherwise the name rule stands.
func TestPortsRoad(t *testing.T) {
	ports := ParsePorts("en0\tWi-Fi\nen1\tThunderbolt 1\nen2\tThunderbolt 2\nen5\tUSB 10/100/1000 LAN\nbridge0\tThunderbolt Bridge\n" +
		"en7\tThunderbolt Ethernet\nen8\tThunderbolt Ethernet Slot 1\nbridge1\tBridge\nbridge2\tPont Thunderbolt\n")
	ifconfig := "bridge0: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n\tOptions=63<RXCSUM,TXCSUM,TSO4,TSO6>\n\tether 36:a1:2b:3c:4d:00\n\tConfiguration:\n\t\tid 0:0:0:0:0:0 priority 0 hellotime 0 fwddelay 0\n\tmember: en1 flags=3<LEARNING,DISCOVER>\n\t        ifmaxaddr 0 port 8 priority 0 path cost 0\n\tmember: en2 flags=3<LEARNING,DISCOVER>\n\tstatus: active\n"
	if got := BridgeMembers(ifconfig); len(got) != 2 || got[0] != "en1" || got[1] != "en2" {
		t.Fatalf("BridgeMembers: %q", got)
	}
	for _, tc := range []struct {
		name    string
		members map[string][]string
		road    roadfacts.Road
		decided bool
	}{
		{"bridge0", map[string][]string{"bridge0": {"en1", "en2"}}, roadfacts.Thunderbolt, true},
		{"bridge0", map[string][]string{"bridge0": {"en5"}}, roadfacts.LAN, true}, // a bridge of Ethernet only
		{"en1", nil, roadfacts.Thunderbolt, true},                                 // a Thunderbolt port without the bridge
		{"en0", nil, "", false},
		{"bridge0", nil, "", false}, // members unknown: the name rule stands
		// Ethernet by Thunderbolt is Ethernet (issue 64, M7): Apple's
		// Thunderbolt to Gigabit Ethernet Adapter, a dock's Ethernet, and
		// Internet Sharing's bridge of them.
		{"en7", nil, "", false},
		{"en8", nil, "", false},
		{"bridge1", map[string][]string{"bridge1": {"en7", "en8"}}, roadfacts.LAN, true},
		// A bridge named in French, of Thunderbolt ports.
		{"bridge2", map[string][]string{"bridge2": {"en1"}}, roadfacts.Thunderbolt, true},
	} {
		road, decided := PortsRoad(tc.name, ports, tc.members)
		if road != tc.road || decided != tc.decided {
			t.Errorf("PortsRoad(%s, %v) = %q %v, want %q %v", tc.name, tc.members, road, decided, tc.road, tc.decided)
		}
	}
	if _, decided := PortsRoad("bridge0", nil, map[string][]string{"bridge0": {"en5"}}); decided {
		t.Error("members without ports decided")
	}
}
