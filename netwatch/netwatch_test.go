package netwatch

import (
	"net"
	"net/netip"
	"testing"

	"github.com/delta-roads/delta/gateway/roads"
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
		road   roads.Road
		n      int
	}{
		{"lo", up | net.FlagLoopback, "", p("127.0.0.1/8"), "", 0},
		{"en0", up, "", p("192.168.1.20/24", "fe80::1/64", "fd7a::1/64", "2001:db8::1/64"), roads.LAN, 2},
		{"wan0", up, "", p("198.51.100.1/24", "fe80::1/64"), "", 0},
		{"en0", net.FlagBroadcast, "", p("192.168.1.20/24"), "", 0},
		{"eth0", up, "virtio_net", p("203.0.113.5/24"), "", 0},
		{"bridge0", up, "", p("169.254.3.1/16"), roads.Thunderbolt, 1},
		{"bridge100", up, "", p("192.168.2.1/24"), "", 0},
		{"thunderbolt0", up, "", p("169.254.3.1/16"), roads.Thunderbolt, 1},
		{"enp5s0", up, "thunderbolt-net", p("10.0.0.1/24"), roads.Thunderbolt, 1},
		{"utun3", up, "", p("100.64.0.1/32"), "", 0},
		{"tailscale0", up, "", p("100.64.0.1/32"), "", 0},
		{"wg0", up, "", p("10.8.0.1/24"), "", 0},
		{"awdl0", up, "", p("fe80::2/64"), "", 0},
		{"en5", up, "", p("fe80::2/64"), "", 0},
	} {
		got := Classify(tc.name, tc.flags, tc.driver, tc.addrs)
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
		st[name] = Classify(name, flags, "", []netip.Prefix{netip.MustParsePrefix(p)})
	}
	run := net.FlagUp | net.FlagRunning
	add("en0", run, "169.254.10.2/16")
	add("bridge0", run, "169.254.3.1/16")
	add("en1", run, "192.168.1.5/24")
	add("en2", net.FlagUp, "10.0.0.5/24") // no carrier
	for _, tc := range []struct {
		road roads.Road
		ip   string
		want string
	}{
		{roads.Thunderbolt, "169.254.3.2", "bridge0"},
		{roads.LAN, "169.254.3.2", "en0"}, // same link-local range: the road decides
		{roads.LAN, "192.168.1.20", "en1"},
		{roads.LAN, "10.0.0.6", ""},
		{roads.LAN, "127.0.0.3", ""},
	} {
		if got := st.InterfaceFor(tc.road, netip.MustParseAddr(tc.ip)); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.road, tc.ip, got, tc.want)
		}
	}
}
