package netwatch

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/net/route"
	"golang.org/x/sys/unix"
)

// rtMon receives messages from the routing socket, modelled on Tailscale's
// net/netmon/netmon_darwin.go (darwinRouteMon): interface, address and
// route messages are changes unless isChange says not, and a panic in
// route.ParseRIB is recovered.
type rtMon struct {
	f   *os.File
	buf []byte
}

func newOSMon() (osMon, error) {
	fd, err := syscall.Socket(syscall.AF_ROUTE, syscall.SOCK_RAW, syscall.AF_UNSPEC)
	if err != nil {
		return nil, fmt.Errorf("routing socket: %w", err)
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return &rtMon{f: os.NewFile(uintptr(fd), "route"), buf: make([]byte, 64<<10)}, nil
}

// Receive returns after a message that may mean a change (the caller reads
// the interfaces again); routine ones (RTM_MISS, link-local routes,
// tunnels) are skipped.
func (m *rtMon) Receive() error {
	for {
		n, err := m.f.Read(m.buf)
		if errors.Is(err, os.ErrClosed) {
			return errClosed
		}
		if err != nil {
			return err
		}
		msgs, err := parseRIB(m.buf[:n])
		if err != nil {
			return err // unparsable (or a recovered panic): read again to be safe
		}
		for _, msg := range msgs {
			if isChange(toRouteMsg(msg)) {
				return nil
			}
		}
	}
}

// parseRIB is route.ParseRIB with a recover ("permanent panic protection,
// as we have been burned by ParseRIB panics too many times": Tailscale).
func parseRIB(b []byte) (msgs []route.Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			msgs, err = nil, &ParsePanicError{Panic: p, Msg: append([]byte(nil), b...)}
		}
	}()
	return route.ParseRIB(route.RIBTypeRoute, b)
}

// toRouteMsg reads what isChange needs from a message.
func toRouteMsg(msg route.Message) routeMsg {
	switch msg := msg.(type) {
	case *route.RouteMessage:
		return routeMsg{Kind: kindRoute, Type: msg.Type, Dst: ipOf(addrAt(msg.Addrs, unix.RTAX_DST)), Interface: linkName(msg.Addrs)}
	case *route.InterfaceAddrMessage:
		return routeMsg{Kind: kindIfAddr, Type: msg.Type, Interface: linkName(msg.Addrs)}
	case *route.InterfaceMulticastAddrMessage:
		return routeMsg{Kind: kindIfMaddr, Type: msg.Type}
	case *route.InterfaceMessage:
		return routeMsg{Kind: kindIfInfo, Type: msg.Type, Interface: msg.Name}
	case *route.InterfaceAnnounceMessage:
		return routeMsg{Kind: kindIfAnnounce, Type: msg.Type, Interface: msg.Name}
	}
	return routeMsg{Kind: kindOther}
}

// addrAt is addrs[i] (an RTAX_* index, net/route.h), if there is one.
func addrAt(addrs []route.Addr, i int) route.Addr {
	if len(addrs) > i {
		return addrs[i]
	}
	return nil
}

func linkName(addrs []route.Addr) string {
	if la, ok := addrAt(addrs, unix.RTAX_IFP).(*route.LinkAddr); ok {
		return la.Name
	}
	return ""
}

func ipOf(a route.Addr) netip.Addr {
	switch a := a.(type) {
	case *route.Inet4Addr:
		return netip.AddrFrom4(a.IP)
	case *route.Inet6Addr:
		return netip.AddrFrom16(a.IP)
	}
	return netip.Addr{}
}

func (m *rtMon) Close() error { return m.f.Close() }

// rtmMiss is unix.RTM_MISS (a build fails if not).
var _ = [1]struct{}{}[unix.RTM_MISS-rtmMiss]
