package roadfacts

import "syscall"

// tcpUserTimeout is Linux's TCP_USER_TIMEOUT (include/uapi/linux/tcp.h),
// which the standard library's syscall does not name.
const tcpUserTimeout = 0x12

// BindControl binds a connection on a local road to its interface
// (SO_BINDTODEVICE: two interfaces may both hold 169.254/16 addresses, and
// a thunderbolt request must not leave by Wi-Fi) and sets TCP_USER_TIMEOUT
// to the road's connect timeout, so that a pooled connection on a road
// that went silent fails in seconds instead of hanging. iface "" binds
// nothing.
func BindControl(iface string, road Road) func(string, string, syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if iface != "" {
				serr = syscall.SetsockoptString(int(fd), syscall.SOL_SOCKET, syscall.SO_BINDTODEVICE, iface)
			}
			if serr == nil {
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, int(road.ConnectTimeout().Milliseconds()))
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
}
