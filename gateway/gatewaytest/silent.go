package gatewaytest

import (
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// SilentAddr returns a loopback address whose connects go unanswered, as a
// road does when its cable leads nowhere or a firewall drops its SYNs: a
// listening socket with a full accept queue that never accepts (the
// kernel drops SYNs beyond it), so a connect waits until its timeout. The
// test is skipped where the OS answers such SYNs after all.
func SilentAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("silent road: socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("silent road: bind: %v", err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatalf("silent road: listen: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("silent road: %v", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	// Fill the accept queue; the first connect that times out shows the
	// road silent.
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			return addr
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Skipf("this OS answers connects beyond a full accept queue (%s): no silent road to test with", addr)
	return ""
}
