package netwatch

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

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
