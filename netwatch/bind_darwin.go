package netwatch

import (
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/delta-roads/delta/gateway/roads"
)

// BindControl binds a lan or thunderbolt connection to its interface
// (IP_BOUND_IF / IPV6_BOUND_IF: Wi-Fi and the Thunderbolt bridge may both
// hold 169.254/16 addresses) and sets TCP_RXT_CONNDROPTIME to the road's
// connect timeout, so that a pooled connection on a road that went silent
// fails in seconds.
func BindControl(iface string, road roads.Road) func(string, string, syscall.RawConn) error {
	return func(_, address string, c syscall.RawConn) error {
		idx := 0
		if iface != "" {
			ifc, err := net.InterfaceByName(iface)
			if err != nil {
				return err
			}
			idx = ifc.Index
		}
		v6 := false
		if ap, err := netip.ParseAddrPort(address); err == nil {
			v6 = ap.Addr().Is6() && !ap.Addr().Is4In6()
		}
		var serr error
		err := c.Control(func(fd uintptr) {
			if idx != 0 {
				if v6 {
					serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_BOUND_IF, idx)
				} else {
					serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BOUND_IF, idx)
				}
			}
			if serr == nil {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RXT_CONNDROPTIME, int(road.ConnectTimeout().Seconds()))
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
}

// BroadcastControl makes a UDP socket that sends broadcasts out of iface
// alone (IP_BOUND_IF, SO_BROADCAST): a Wake-on-LAN packet.
func BroadcastControl(iface string) func(string, string, syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		ifc, err := net.InterfaceByName(iface)
		if err != nil {
			return err
		}
		var serr error
		err = c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BOUND_IF, ifc.Index)
			if serr == nil {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BROADCAST, 1)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
}
