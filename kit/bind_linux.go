package kit

import "syscall"

// bindControl binds a direct read's connection to the interface of its
// road (SO_BINDTODEVICE), as Delta binds its own: two interfaces may both
// hold 169.254/16 addresses, and a thunderbolt read must not leave by
// Wi-Fi. The standard library's syscall, so that the kit imports no
// more than it does.
func bindControl(iface string) func(string, string, syscall.RawConn) error {
	if iface == "" {
		return nil
	}
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptString(int(fd), syscall.SOL_SOCKET, syscall.SO_BINDTODEVICE, iface)
		}); err != nil {
			return err
		}
		return serr
	}
}
