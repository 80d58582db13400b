package netwatch

import (
	"net/netip"
	"strings"
)

// routeMsg is one routing-socket message (macOS) as the decision whether
// it is a change sees it: its kind, its RTM_* type, the destination of a
// route and the interface it names. The darwin monitor fills it from
// x/net/route's messages; the decision (isChange) is pure, for table tests
// on every OS.
type routeMsg struct {
	Kind      routeKind
	Type      int        // RTM_* (route messages)
	Dst       netip.Addr // RTAX_DST of a route, if an IP
	Interface string     // the RTAX_IFP link's name, if any
}

type routeKind int

const (
	kindOther      routeKind = iota
	kindRoute                // a route added, deleted or changed (RTM_ADD, …)
	kindIfAddr               // an address added or removed (RTM_NEWADDR, RTM_DELADDR)
	kindIfMaddr              // a multicast address (RTM_NEWMADDR2)
	kindIfInfo               // an interface's flags or link changed (RTM_IFINFO): media are read again
	kindIfAnnounce           // an interface arrived or left
)

// rtmMiss is darwin's RTM_MISS (net/route.h): a failed route lookup.
const rtmMiss = 0x7

// isChange reports whether a routing message may mean a road changed, so
// that the state is read again. Modelled on Tailscale's
// net/netmon/netmon_darwin.go (skipMessage): route messages are changes,
// except RTM_MISS (every failed lookup sends one; it follows traffic, not
// the network), IPv6 link-local destinations, and those of interfaces that are
// never roads; multicast address messages never are. A link that comes
// and goes shows as RTM_IFINFO, always a change: its media are read again.
func isChange(m routeMsg) bool {
	switch m.Kind {
	case kindIfMaddr:
		return false
	case kindIfAddr:
		return interesting(m.Interface)
	case kindRoute:
		// IPv6 link-local only: Tailscale skips every link-local
		// destination, but the Thunderbolt bridge's road is 169.254/16.
		if m.Type == rtmMiss || m.Dst.Is6() && m.Dst.IsLinkLocalUnicast() {
			return false
		}
		return interesting(m.Interface)
	}
	return true
}

// interesting reports whether an interface can be a road ("" when a
// message names none): not one of Tailscale's uninteresting darwin
// interfaces (llw, awdl, ipsec, gif, XHC, anpi, lo, utun), and not a
// tunnel or a VM adapter by Classify's lists.
func interesting(name string) bool {
	if name == "" {
		return true
	}
	switch strings.TrimRight(name, "0123456789") {
	case "llw", "awdl", "ipsec", "gif", "XHC", "anpi", "lo", "utun":
		return false
	}
	for _, p := range append(append([]string{}, tunnelPrefixes...), vmPrefixes...) {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	return true
}

// ParsePanicError is a panic in route.ParseRIB, recovered: the monitor
// logs it and reads the state again (golang/go#70528 and #71557 were such
// panics; Tailscale keeps the same protection).
type ParsePanicError struct {
	Panic any
	Msg   []byte
}

func (e *ParsePanicError) Error() string {
	return "netwatch: panic in route.ParseRIB (recovered; the interfaces are read again)"
}
