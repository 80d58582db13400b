// Package netwatch knows this computer's network interfaces, classifies
// each as a thunderbolt road, a lan road, or neither (loopback, tunnels,
// interfaces that are never roads), and watches them: a Monitor turns the
// OS's events (netlink on Linux, the routing socket on macOS, polling
// elsewhere) into a Change computed from the old and new State (Diff, pure),
// so that roads over a dead interface are dropped at once and roads over
// one that came back are probed.
package netwatch

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/delta-roads/delta/api/roadfacts"
)

// Interface is one network interface as a road.
type Interface struct {
	Name string
	// Road is roadfacts.Thunderbolt, roadfacts.LAN, or "" when the interface is no
	// road (loopback, a tunnel, down, or without a usable address).
	Road roadfacts.Road
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
	// Index is the OS's interface index; Wireless says it is Wi-Fi (from
	// its media on macOS, /sys on Linux). They order two interfaces on one
	// network (InterfaceFor).
	Index    int
	Wireless bool
	// MediaWord is what the OS said of the link's kind (Media.Word).
	MediaWord string
	// Local are every address of the interface, a road or not (a VM
	// adapter's, a tunnel's): Owns asks them.
	Local []netip.Addr
	// Why says why Road is empty.
	Why string
}

// Media is an interface's link state as the OS reports it apart from its
// flags: on macOS SIOCGIFMEDIA, because IFF_RUNNING stays set there on a
// link that ifconfig shows as "status: inactive" (a pulled Thunderbolt or
// Ethernet cable). Known is false where the OS has none (Linux, whose
// IFF_RUNNING is the carrier, and interfaces without media).
type Media struct {
	Known    bool
	Active   bool
	Wireless bool
	// Word is what the OS said, for the log ("" where it says nothing):
	// on macOS the functional type and ifm_active's word, logged once per
	// interface at start so that a Mac's run tells what its hardware
	// reports.
	Word string
}

// ifmediareq's bits (net/if_media.h): ifm_status's IFM_AVALID (the status
// is valid) and IFM_ACTIVE (the link is up), and the type of ifm_active
// (IFM_TYPE: IFM_ETHER, IFM_IEEE80211).
const (
	ifmAvalid    = 0x1
	ifmActive    = 0x2
	ifmTypeMask  = 0xe0
	ifmIEEE80211 = 0x80
)

// SIOCGIFFUNCTIONALTYPE's answers (sys/sockio.h, net/if.h's
// ifru_functional_type; ifconfig -v prints them as "type:"), the ones
// that decide.
const (
	ifrFunctionalUnknown   = 0
	ifrFunctionalWiFiInfra = 3
	ifrFunctionalWiFiAWDL  = 4
)

// MediaOnMac reads what macOS says of an interface: SIOCGIFMEDIA's
// ifm_status and ifm_active (media false when that ioctl failed: lo0,
// utun), and SIOCGIFFUNCTIONALTYPE's type (-1 when that one failed). Wi-Fi
// is what the functional type says, as Apple's own code reads it
// (mDNSResponder): IFM_IEEE80211 in ifm_active decides only when the type
// is unknown, because Apple's Wi-Fi driver is not known to report it
// (review A5). Pure, for table tests on every OS.
func MediaOnMac(media bool, status, active, ftype int) Media {
	var m Media
	if media {
		m = MediaFromIfmediareq(status, active)
	}
	switch ftype {
	case -1, ifrFunctionalUnknown:
		// the media's word, if any, stands
	default:
		m.Wireless = ftype == ifrFunctionalWiFiInfra || ftype == ifrFunctionalWiFiAWDL
	}
	m.Word = fmt.Sprintf("functional type %d (%s)", ftype, functionalName(ftype))
	if media {
		m.Word += fmt.Sprintf(", ifm_active 0x%x, ifm_status 0x%x", active, status)
	}
	return m
}

func functionalName(ftype int) string {
	switch ftype {
	case -1:
		return "the ioctl failed"
	case ifrFunctionalUnknown:
		return "unknown"
	case 1:
		return "loopback"
	case 2:
		return "wired"
	case ifrFunctionalWiFiInfra:
		return "Wi-Fi"
	case ifrFunctionalWiFiAWDL:
		return "AWDL"
	case 5:
		return "cellular"
	case 6:
		return "coprocessor"
	case 7:
		return "companion link"
	}
	return "unrecognized"
}

// MediaFromIfmediareq reads SIOCGIFMEDIA's ifm_status and ifm_active. It
// is pure, for table tests on every OS.
func MediaFromIfmediareq(status, active int) Media {
	if status&ifmAvalid == 0 {
		return Media{Wireless: active&ifmTypeMask == ifmIEEE80211}
	}
	return Media{Known: true, Active: status&ifmActive != 0, Wireless: active&ifmTypeMask == ifmIEEE80211}
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

// vmPrefixes name a virtual machine's or an overlay's adapters, whose
// private addresses are this computer's own business (VirtualBox gives
// every Mac 192.168.56.1): VirtualBox, VMware Fusion, Parallels, ZeroTier,
// Apple Virtualization.
var vmPrefixes = []string{"vboxnet", "vmnet", "vnic", "feth", "vmenet"}

// Classify decides what an interface is from its name, flags, driver (Linux;
// "" elsewhere), addresses and media (macOS; the zero Media elsewhere). It
// is pure, for table tests.
func Classify(name string, flags net.Flags, driver string, prefixes []netip.Prefix, media Media) Interface {
	ifc := Interface{Name: name, Running: flags&net.FlagUp != 0 && flags&net.FlagRunning != 0 && (!media.Known || media.Active),
		Wireless: media.Wireless}
	for _, p := range prefixes {
		ifc.Local = append(ifc.Local, p.Addr().WithZone(""))
	}
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
	for _, p := range vmPrefixes {
		if strings.HasPrefix(name, p) {
			ifc.Why = "a virtual machine's or an overlay's adapter (" + p + "*)"
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
	ifc.Road = roadfacts.LAN
	if driver == "thunderbolt-net" || strings.HasPrefix(name, "thunderbolt") || name == "bridge0" {
		ifc.Road = roadfacts.Thunderbolt
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
// Of two on networks equally narrow (a Mac on one /24 by Wi-Fi and by
// Ethernet), the wired one wins, then the lower index, then the name: the
// same one every time.
func (st State) InterfaceFor(road roadfacts.Road, ip netip.Addr) string {
	ip = ip.WithZone("")
	var best *Interface
	bits := -1
	for _, ifc := range st {
		if ifc.Road != road || !ifc.Running {
			continue
		}
		for _, n := range ifc.Nets {
			if !n.Contains(ip) {
				continue
			}
			if n.Bits() > bits || n.Bits() == bits && before(ifc, *best) {
				ifc := ifc
				best, bits = &ifc, n.Bits()
			}
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}

// before orders two interfaces on one network: wired first, then the lower
// index, then the name.
func before(a, b Interface) bool {
	if a.Wireless != b.Wireless {
		return !a.Wireless
	}
	if a.Index != b.Index {
		return a.Index < b.Index
	}
	return a.Name < b.Name
}

// Owns reports whether ip is one of the addresses of st's interfaces: a
// peer's road to it would lead back to this computer (two Macs with
// VirtualBox both have 192.168.56.1, and a hello may carry it).
func (st State) Owns(ip netip.Addr) bool {
	ip = ip.WithZone("")
	for _, ifc := range st {
		if slices.Contains(ifc.Local, ip) {
			return true
		}
	}
	return false
}

// LocalNetworkBlocked reports whether a failed lan or thunderbolt connect
// looks like macOS 15's Local Network privacy (its error then wraps
// the roads package's ErrLocalNetwork): it blocks an app that was not allowed with "no
// route to host" (EHOSTUNREACH), and only to addresses on directly
// connected networks (connected: an interface of this computer is on the
// peer's network), and at once: the denial comes before any packet, while
// the same errno after an ARP timeout (took: a second or more) is a peer
// that does not answer, not a denial (issue 37, N15). Pure, for tests on
// every OS.
func LocalNetworkBlocked(goos string, err error, connected bool, took time.Duration) bool {
	return goos == "darwin" && connected && took < LocalNetworkDenialWithin && errors.Is(err, syscall.EHOSTUNREACH)
}

// LocalNetworkDenialWithin is how soon a connect refused by Local Network
// privacy fails: the kernel refuses it before sending anything, where an
// unanswered ARP takes seconds.
const LocalNetworkDenialWithin = 100 * time.Millisecond

// ParsePorts reads "bsdname\tport name" lines into a map.
func ParsePorts(s string) map[string]string {
	out := map[string]string{}
	for line := range strings.Lines(s) {
		if bsd, port, ok := strings.Cut(strings.TrimRight(line, "\n"), "\t"); ok && bsd != "" {
			out[bsd] = port
		}
	}
	return out
}

// BridgeMembers reads a bridge's members from `ifconfig bridgeN`: its
// "member: en2 flags=…" lines.
func BridgeMembers(ifconfig string) []string {
	var out []string
	for line := range strings.Lines(ifconfig) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "member: "); ok {
			if name, _, _ := strings.Cut(rest, " "); name != "" {
				out = append(out, name)
			}
		}
	}
	return out
}

// thunderboltPort is the name macOS gives an IP-over-Thunderbolt port.
var thunderboltPort = regexp.MustCompile(`^Thunderbolt \d+$`)

// PortsRoad decides between the thunderbolt and lan roads for interface
// name from macOS's hardware ports (ports: port name by BSD name) and
// bridges' members, when they tell: a Thunderbolt port itself ("Thunderbolt
// 1", set up on its own, without the bridge) is thunderbolt; a bridge is
// thunderbolt when one of its members is a Thunderbolt port, and lan when
// its members are known and none is (Internet Sharing's bridge of
// Ethernet). decided is false when they do not tell (another OS, no such
// port), and the name rule of Classify stands (issue 37, N14). Only the
// IP-over-Thunderbolt ports, "Thunderbolt N", are Thunderbolt: a
// Thunderbolt Ethernet adapter ("Thunderbolt Ethernet") or a dock's
// Ethernet ("Thunderbolt Ethernet Slot 1") is Ethernet on the home
// network, and the bridge's own name, localized ("Thunderbolt Bridge",
// "Pont Thunderbolt"), is never read (issue 64, M7). Pure.
func PortsRoad(name string, ports map[string]string, members map[string][]string) (road roadfacts.Road, decided bool) {
	isTB := func(n string) bool { return thunderboltPort.MatchString(ports[n]) }
	if isTB(name) {
		return roadfacts.Thunderbolt, true
	}
	if ms, ok := members[name]; ok && len(ms) > 0 {
		for _, m := range ms {
			if isTB(m) {
				return roadfacts.Thunderbolt, true
			}
		}
		if len(ports) > 0 {
			return roadfacts.LAN, true
		}
	}
	return "", false
}
