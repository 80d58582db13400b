package kit

import (
	"net"
	"net/netip"
	"syscall"
)

// bindControl binds a direct read's connection to the interface of its
// road (IP_BOUND_IF, IPV6_BOUND_IF), as Delta binds its own (netwatch's
// bind_darwin.go): Wi-Fi and the Thunderbolt bridge may both hold
// 169.254/16 addresses.
func bindControl(iface string) func(string, string, syscall.RawConn) error {
	if iface == "" {
		return nil
	}
	return func(_, address string, c syscall.RawConn) error {
		ifc, err := net.InterfaceByName(iface)
		if err != nil {
			return err
		}
		v6 := false
		if ap, err := netip.ParseAddrPort(address); err == nil {
			v6 = ap.Addr().Is6() && !ap.Addr().Is4In6()
		}
		var serr error
		if err := c.Control(func(fd uintptr) {
			if v6 {
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, syscall.IPV6_BOUND_IF, ifc.Index)
			} else {
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_BOUND_IF, ifc.Index)
			}
		}); err != nil {
			return err
		}
		return serr
	}
}
