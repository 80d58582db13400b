package netwatch

import (
	"syscall"

	"golang.org/x/sys/unix"
)

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
