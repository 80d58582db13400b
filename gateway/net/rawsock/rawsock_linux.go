package rawsock

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const enabled = true

// maxRW is the most one read or write asks of the kernel, as
// internal/poll's (a stream's reads and writes past 1 GiB are split).
const maxRW = 1 << 30

// Conn is a TCP connection whose reads and writes are raw system calls
// (the package's doc says why); everything else is its TCPConn's.
type Conn struct {
	*net.TCPConn
	on atomic.Bool // On: raw reads and writes; net's own until then

	// A read's and a write's state, for the callbacks given to the
	// connection's syscall.RawConn, which are bound once (readFD, writeFD): a
	// closure made on every call would be allocated on every call.
	r, w rawOp
}

// rawOp is one read's or write's state, as its callback sees it, under
// its own lock: net.Conn's Read and Write may each be called from several
// goroutines at once.
type rawOp struct {
	mu    sync.Mutex
	p     []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool             // the callback (readFD, writeFD)
	rc    func(func(fd uintptr) bool) error // rc.Read or rc.Write
}

// run calls fn through rc for p, and returns what it did.
func (o *rawOp) run(p []byte) (int, syscall.Errno, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.p, o.n, o.errno = p, 0, 0
	err := o.rc(o.fn)
	o.p = nil
	return o.n, o.errno, err
}

// Wrap returns c as a Conn when it is a *net.TCPConn, else c itself. Its
// reads and writes are net's own until On.
func Wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	c2 := &Conn{TCPConn: tc}
	c2.r.fn, c2.r.rc = c2.readFD, rc.Read
	c2.w.fn, c2.w.rc = c2.writeFD, rc.Write
	return c2
}

func (c *Conn) turn(on bool) { c.on.Store(on) }

// NetConn is the TCP connection beneath.
func (c *Conn) NetConn() net.Conn { return c.TCPConn }

// Read is net.TCPConn's Read: the same poller, deadline and errors.
func (c *Conn) Read(p []byte) (int, error) {
	if !c.on.Load() {
		return c.TCPConn.Read(p)
	}
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	n, errno, err := c.r.run(p)
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// readFD is Read's callback: false (wait for the poller) while the
// socket has nothing to read.
func (c *Conn) readFD(fd uintptr) bool {
	p := c.r.p
	if len(p) == 0 {
		return true
	}
	for {
		r, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false // the poller waits until it is readable
		}
		c.r.n, c.r.errno = int(r), e
		return true
	}
}

// Write is net.TCPConn's Write: all of p, or an error; the same poller,
// deadline and errors.
func (c *Conn) Write(p []byte) (int, error) {
	if !c.on.Load() {
		return c.TCPConn.Write(p)
	}
	nn, errno, err := c.w.run(p)
	switch {
	case err != nil:
		return nn, c.opError("write", err)
	case errno != 0:
		return nn, c.opError("write", os.NewSyscallError("write", errno))
	case nn < len(p):
		return nn, c.opError("write", io.ErrUnexpectedEOF)
	}
	return nn, nil
}

// writeFD is Write's callback: it writes until all is written, or the
// socket is full (false: wait for the poller), or a failure.
func (c *Conn) writeFD(fd uintptr) bool {
	p := c.w.p
	for c.w.n < len(p) {
		q := p[c.w.n:]
		if len(q) > maxRW {
			q = q[:maxRW]
		}
		r, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&q[0])), uintptr(len(q)))
		switch e {
		case 0:
			if r == 0 {
				return true // as internal/poll: no progress is io.ErrUnexpectedEOF
			}
			c.w.n += int(r)
		case unix.EINTR:
		case unix.EAGAIN:
			return false // the poller waits until it is writable
		default:
			c.w.errno = e
			return true
		}
	}
	return true
}

// opError is the error net's own Read or Write returns: an *net.OpError
// naming op and the connection's addresses, around the poller's error
// (a deadline, a closed connection) or the system call's.
func (c *Conn) opError(op string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) { // the raw connection's "raw-read"
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// Peek looks at fd's receive queue without taking from it or waiting
// (recv with MSG_PEEK and MSG_DONTWAIT): n > 0 when bytes wait, n == 0
// when the other end closed, EAGAIN when nothing is there. For a
// connection's own raw connection (syscall.RawConn.Read).
func Peek(fd uintptr) (n int, err error) {
	var b [1]byte
	for {
		r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(r), nil
	}
}

// SetsockoptInt is setsockopt(2) of an int option on fd, as a raw system
// call (it never waits), for a connection's own raw connection
// (syscall.RawConn.Control).
func SetsockoptInt(fd uintptr, level, opt, value int) error {
	v := int32(value)
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, fd, uintptr(level), uintptr(opt), uintptr(unsafe.Pointer(&v)), unsafe.Sizeof(v), 0)
	if e != 0 {
		return os.NewSyscallError("setsockopt", e)
	}
	return nil
}
