package roadfacts

import (
	"net"
	"net/netip"
	"syscall"
)

// BindControl binds a connection on a local road to its interface
// (IP_BOUND_IF / IPV6_BOUND_IF: Wi-Fi and the Thunderbolt bridge may both
// hold 169.254/16 addresses) and sets TCP_RXT_CONNDROPTIME to the road's
// connect timeout, so that a pooled connection on a road that went silent
// fails in seconds. iface "" binds nothing.
func BindControl(iface string, road Road) func(string, string, syscall.RawConn) error {
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
					serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, syscall.IPV6_BOUND_IF, idx)
				} else {
					serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_BOUND_IF, idx)
				}
			}
			if serr == nil {
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_RXT_CONNDROPTIME, int(road.ConnectTimeout().Seconds()))
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
}
