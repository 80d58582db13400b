//go:build unix

package static

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// reuseAndBroadcast lets every Delta on a computer hear announcements
// (SO_REUSEADDR, SO_REUSEPORT: broadcasts reach each socket bound to the
// port) and send broadcasts (SO_BROADCAST).
func reuseAndBroadcast(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		for _, o := range []int{unix.SO_REUSEADDR, unix.SO_REUSEPORT, unix.SO_BROADCAST} {
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, o, 1); serr != nil {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	return serr
}
