package h1

import (
	"net"
	"syscall"

	"github.com/delta-roads/delta/gateway/net/rawsock"
)

// quickAck asks the kernel to acknowledge at once what arrives next on c
// (TCP_QUICKACK), set once a request is written and before its answer is
// read. An app that writes its answer's head and body in two sends with
// Nagle's algorithm on (Python's http.server at HTTP/1.1, many small
// servers) holds the body until the head is acknowledged; on a kept-alive
// connection Linux delays that acknowledgement (it expects to carry it
// with the next request), and each answer paid 40 ms (issue 40: 44 ms
// against 20 µs here with it). The flag is not permanent, so it is set
// for each request, on the hops to an app only (Transport.QuickAck,
// Options.QuickAck); a connection that is not TCP beneath (a test's pipe)
// is left as it is.
func quickAck(c net.Conn) {
	tc := tcpOf(c)
	if tc == nil {
		return
	}
	if rc, err := tc.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			rawsock.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
		})
	}
}
