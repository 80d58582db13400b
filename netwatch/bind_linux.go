package netwatch

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/delta-roads/delta/gateway/roads"
)

// BindControl binds a lan or thunderbolt connection to its interface
// (SO_BINDTODEVICE: two interfaces may both hold 169.254/16 addresses, and a
// thunderbolt request must not leave by Wi-Fi) and sets TCP_USER_TIMEOUT to
// the road's connect timeout, so that a pooled connection on a road that
// went silent fails in seconds instead of hanging.
func BindControl(iface string, road roads.Road) func(string, string, syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if iface != "" {
				serr = unix.BindToDevice(int(fd), iface)
			}
			if serr == nil {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(road.ConnectTimeout().Milliseconds()))
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
}

// BroadcastControl makes a UDP socket that sends broadcasts out of iface
// alone (SO_BINDTODEVICE, SO_BROADCAST): a Wake-on-LAN packet.
func BroadcastControl(iface string) func(string, string, syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.BindToDevice(int(fd), iface)
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
