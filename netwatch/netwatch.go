// Package netwatch knows this computer's network interfaces, classifies
// each as a thunderbolt road, a lan road, or neither (loopback, tunnels,
// interfaces that are never roads), and watches them: a Monitor turns the
// OS's events (netlink on Linux, the routing socket on macOS, polling
// elsewhere) into a Change computed from the old and new State (Diff, pure),
// so that roads over a dead interface are dropped at once and roads over
// one that came back are probed.
package netwatch

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/delta-roads/delta/gateway/roads"
)

// Interface is one network interface as a road.
type Interface struct {
	Name string
	// Road is roads.Thunderbolt, roads.LAN, or "" when the interface is no
	// road (loopback, a tunnel, down, or without a usable address).
	Road roads.Road
	// Addrs are the usable addresses: private or link-local IPv4, and IPv6
	// unique-local. IPv6 link-local addresses are not: every interface has
	// one, and fe80::/64 cannot tell which interface reaches a peer's (a
	// wrong guess would carry a "lan" request over another link).
	Addrs []string
	// Nets are the networks of Addrs, in the same order.
	Nets []netip.Prefix
	// Running reports whether the interface is up with a carrier (a pulled
	// cable clears it while the interface stays up).
	Running bool
	// Why says why Road is empty.
	Why string
}

// Current reads and classifies this computer's interfaces, sorted by name.
func Current() []Interface {
	var out []Interface
	for _, ifc := range Read(nil) {
		out = append(out, ifc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// tunnelPrefixes name interfaces that are tunnels or never roads.
var tunnelPrefixes = []string{"utun", "tailscale", "wg", "tun", "tap", "ipsec", "ppp",
	"awdl", "llw", "p2p", "ap1", "anpi", "gif", "stf", "XHC", "docker", "virbr"}

// Classify decides what an interface is from its name, flags, driver (Linux;
// "" elsewhere) and addresses. It is pure, for table tests.
func Classify(name string, flags net.Flags, driver string, prefixes []netip.Prefix) Interface {
	ifc := Interface{Name: name, Running: flags&net.FlagUp != 0 && flags&net.FlagRunning != 0}
	switch {
	case flags&net.FlagLoopback != 0:
		ifc.Why = "loopback"
		return ifc
	case flags&net.FlagUp == 0:
		ifc.Why = "down"
		return ifc
	}
	for _, p := range tunnelPrefixes {
		if strings.HasPrefix(name, p) {
			ifc.Why = "a tunnel or not a road (" + p + "*)"
			return ifc
		}
	}
	if strings.HasPrefix(name, "bridge") && name != "bridge0" {
		ifc.Why = "Internet Sharing bridge"
		return ifc
	}
	for _, p := range prefixes {
		a := p.Addr()
		switch {
		case a.Is4() && (a.IsPrivate() || a.IsLinkLocalUnicast()):
			ifc.Addrs, ifc.Nets = append(ifc.Addrs, a.String()), append(ifc.Nets, p.Masked())
		case a.Is6() && a.IsPrivate():
			ifc.Addrs, ifc.Nets = append(ifc.Addrs, a.String()), append(ifc.Nets, p.Masked())
		}
	}
	if len(ifc.Addrs) == 0 {
		ifc.Why = "no private or link-local address"
		return ifc
	}
	ifc.Road = roads.LAN
	if driver == "thunderbolt-net" || strings.HasPrefix(name, "thunderbolt") || name == "bridge0" {
		ifc.Road = roads.Thunderbolt
	}
	return ifc
}

// driver is the Linux driver of an interface ("" elsewhere or if virtual).
func driver(name string) string {
	if runtime.GOOS != "linux" {
		return ""
	}
	p, err := os.Readlink(filepath.Join("/sys/class/net", name, "device", "driver"))
	if err != nil {
		return ""
	}
	return filepath.Base(p)
}

// InterfaceFor returns the running interface of st, of the given road,
// whose network holds ip: the interface a road's connections to ip must be
// bound to. It returns "" if there is none (loopback, or a routed address).
func (st State) InterfaceFor(road roads.Road, ip netip.Addr) string {
	ip = ip.WithZone("")
	best, bits := "", -1
	for name, ifc := range st {
		if ifc.Road != road || !ifc.Running {
			continue
		}
		for _, n := range ifc.Nets {
			if n.Contains(ip) && n.Bits() > bits {
				best, bits = name, n.Bits()
			}
		}
	}
	return best
}
