// Package rawsock reads and writes TCP connections without waking the Go
// scheduler's monitor.
//
// Every read and write through the net package enters the runtime's
// system-call path (entersyscall), and the first one after a process's
// goroutines have all been idle wakes `sysmon`, the runtime's monitor
// thread, from its deep sleep: a futex wake and two thread switches, then
// a few 20 µs naps (nanosleep) before it sleeps again. A Delta carrying a
// small read is idle between the request and its answer, so this happened
// on nearly every read and write: a quarter of both Deltas' CPU at one
// reader (perf, issue 40) and, with the futex calls, most of their thread
// switches.
//
// A socket in Go is non-blocking: a read or write returns at once, with
// data or EAGAIN, and the poller waits for readiness. Conn does exactly
// what net's does (the same poller, deadlines, locks and errors) but makes
// the read(2) and write(2) themselves as raw system calls, which do not
// enter the scheduler's system-call path. That is safe for calls that
// never block, and only for those: it is used for a socket's read and
// write, never for anything that may wait in the kernel.
//
// Wrap and Listener make a Conn on Linux of a plain TCP connection
// (beneath TLS when a listener or a dial is wrapped before the
// handshake), with net's own reads and writes until On turns the raw ones
// on: only a read's connections are (On says why). On other systems, and
// for every other kind of connection, they return what they are given.
// Conn names its TCP connection (NetConn), so code that looks beneath a
// connection (TCP_QUICKACK, the idle check's peek) finds it.
package rawsock

import "net"

// On turns the raw system calls on for the Conn beneath c (through TLS
// and wrappers that name theirs, NetConn), if there is one; Off turns
// them off again. A Wrapped connection starts with them off, and only a
// read's hops turn them on: the pooled client's connections
// (h1.Transport) and a connection whose request is a read served by
// h1server. A call's connections, and every TLS handshake, keep net's
// own: through two Deltas on the lan road's TLS, calls at 16 at once ran
// at 0.80 to 0.90 of their rate with raw calls beneath TLS from the
// connection's start (four runs; 0.81 still with them turned off only
// after the handshake; plain TCP unchanged), while reads gained.
func On(c net.Conn) { turn(c, true) }

// Off turns the raw system calls off for the Conn beneath c (On): a
// connection that served reads and now carries a call (h1server's
// hand-over to net/http).
func Off(c net.Conn) { turn(c, false) }

func turn(c net.Conn, on bool) {
	for range 4 {
		switch x := c.(type) {
		case interface{ turn(bool) }:
			x.turn(on)
			return
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return
		}
	}
}

// Listener returns ln whose accepted connections are Wrapped.
func Listener(ln net.Listener) net.Listener {
	if !enabled {
		return ln
	}
	return &listener{ln}
}

type listener struct{ net.Listener }

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	return Wrap(c), nil
}
