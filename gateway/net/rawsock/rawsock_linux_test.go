package rawsock

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pair is a connected TCP pair on loopback: a (Wrapped) and b (as net
// gives it).
func pair(t *testing.T) (a *Conn, b *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	w, ok := Wrap(c).(*Conn)
	if !ok {
		t.Fatalf("Wrap(%T) is not a Conn", c)
	}
	On(w)
	t.Cleanup(func() { w.Close(); s.Close() })
	return w, s.(*net.TCPConn)
}

// TestMovesBytes: what goes either way arrives whole and in order,
// bigger than the socket's buffers (a write that must wait for the
// poller, reads that must too), and the other end's close is io.EOF.
func TestMovesBytes(t *testing.T) {
	a, b := pair(t)
	data := make([]byte, 8<<20)
	rand.Read(data)
	for _, dir := range []struct {
		name string
		w    io.Writer
		r    io.Reader
	}{{"raw to net", a, b}, {"net to raw", b, a}} {
		errc := make(chan error, 1)
		go func() {
			n, err := dir.w.Write(data)
			if err == nil && n != len(data) {
				err = io.ErrShortWrite
			}
			errc <- err
		}()
		got := make([]byte, len(data))
		if _, err := io.ReadFull(dir.r, got); err != nil {
			t.Fatalf("%s: read: %v", dir.name, err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("%s: write: %v", dir.name, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("%s: the bytes differ", dir.name)
		}
	}
	if n, err := a.Read(nil); n != 0 || err != nil {
		t.Errorf("Read(nil) = %d, %v; want 0, nil as net's", n, err)
	}
	b.Close()
	if n, err := a.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Errorf("after the other end closed: %d, %v; want 0, io.EOF", n, err)
	}
}

// TestErrorsAreNets: a deadline, a closed connection and a connection
// the other end reset fail as net's own Read and Write do: the same
// *net.OpError, the same causes for errors.Is, the same words.
func TestErrorsAreNets(t *testing.T) {
	a, b := pair(t)
	plain := a.TCPConn // the same socket, read the way net does

	a.SetReadDeadline(time.Now().Add(-time.Second))
	_, rawErr := a.Read(make([]byte, 1))
	_, netErr := plain.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(rawErr, &ne) || !ne.Timeout() || !errors.Is(rawErr, os.ErrDeadlineExceeded) {
		t.Errorf("a read past its deadline: %v, want a timeout", rawErr)
	}
	if rawErr.Error() != netErr.Error() {
		t.Errorf("a read past its deadline: %q, net's %q", rawErr, netErr)
	}
	a.SetReadDeadline(time.Time{})

	a.SetWriteDeadline(time.Now().Add(-time.Second))
	_, rawErr = a.Write([]byte("x"))
	_, netErr = plain.Write([]byte("x"))
	if !errors.Is(rawErr, os.ErrDeadlineExceeded) || rawErr.Error() != netErr.Error() {
		t.Errorf("a write past its deadline: %q, net's %q", rawErr, netErr)
	}
	a.SetWriteDeadline(time.Time{})

	// Reset by the other end (SO_LINGER 0): writes fail, naming why.
	b.SetLinger(0)
	b.Close()
	var werr error
	for range 100 {
		if _, werr = a.Write([]byte("after the reset")); werr != nil {
			break
		}
		time.Sleep(time.Millisecond) // the reset is on its way over loopback
	}
	if !errors.Is(werr, syscall.ECONNRESET) && !errors.Is(werr, syscall.EPIPE) {
		t.Errorf("a write after the other end reset: %v, want ECONNRESET or EPIPE", werr)
	}
	if !strings.HasPrefix(werr.Error(), "write tcp ") {
		t.Errorf("a write after the other end reset: %q, want net's words", werr)
	}

	a.Close()
	_, rawErr = a.Read(make([]byte, 1))
	_, netErr = plain.Read(make([]byte, 1))
	if !errors.Is(rawErr, net.ErrClosed) || rawErr.Error() != netErr.Error() {
		t.Errorf("a read of a closed connection: %q, net's %q", rawErr, netErr)
	}
}

// TestWrapKeepsTheRest: only a *net.TCPConn is wrapped; a Conn names
// its TCP connection (NetConn), and Listener wraps what it accepts.
func TestWrapKeepsTheRest(t *testing.T) {
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if Wrap(p1) != p1 {
		t.Error("a pipe was wrapped")
	}
	a, _ := pair(t)
	if a.NetConn() != net.Conn(a.TCPConn) {
		t.Error("NetConn is not the TCP connection beneath")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wl := Listener(ln)
	defer wl.Close()
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			io.WriteString(c, "hi")
		}
	}()
	c, err := wl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*Conn); !ok {
		t.Fatalf("Listener accepted a %T", c)
	}
	buf := make([]byte, 2)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hi" {
		t.Fatalf("read %q, %v", buf, err)
	}
}

// TestPeekAndOptions: Peek says what the receive queue holds without
// taking it; SetsockoptInt sets what getsockopt reads back.
func TestPeekAndOptions(t *testing.T) {
	a, b := pair(t)
	rc, err := a.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	peek := func() (n int, err error) {
		rc.Read(func(fd uintptr) bool { n, err = Peek(fd); return true })
		return
	}
	if _, err := peek(); !errors.Is(err, syscall.EAGAIN) {
		t.Errorf("nothing there: %v, want EAGAIN", err)
	}
	b.Write([]byte("x"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := peek()
		if n == 1 && err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a byte sent is not seen: %d, %v", n, err)
		}
		time.Sleep(time.Millisecond)
	}
	buf := make([]byte, 1)
	if _, err := io.ReadFull(a, buf); err != nil || buf[0] != 'x' {
		t.Fatalf("the byte peeked was taken: %q, %v", buf, err)
	}
	for _, v := range []int{0, 1} {
		var got int
		var gerr error
		rc.Control(func(fd uintptr) {
			if err := SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, v); err != nil {
				gerr = err
				return
			}
			got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY)
		})
		if gerr != nil || (got != 0) != (v != 0) {
			t.Errorf("TCP_NODELAY set to %d, read back %d (%v)", v, got, gerr)
		}
	}
	b.Close()
	for {
		n, err := peek()
		if n == 0 && err == nil {
			break // the other end's close
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other end's close is not seen: %d, %v", n, err)
		}
		time.Sleep(time.Millisecond)
	}
}

type named struct{ net.Conn }

func (n named) NetConn() net.Conn { return n.Conn }

// TestOnOff: a Wrapped connection starts with net's own reads and
// writes; On and Off find the Conn beneath wrappers that name theirs, and
// reads and writes go on either way.
func TestOnOff(t *testing.T) {
	a, b := pair(t)
	Off(named{named{a}})
	if a.on.Load() {
		t.Fatal("Off did not reach the Conn beneath two wrappers")
	}
	On(named{a})
	if !a.on.Load() {
		t.Fatal("On did not reach the Conn beneath a wrapper")
	}
	Off(a)
	Off(b) // not a Conn: nothing
	go b.Write([]byte("after"))
	buf := make([]byte, 5)
	if _, err := io.ReadFull(a, buf); err != nil || string(buf) != "after" {
		t.Fatalf("read after Off: %q, %v", buf, err)
	}
	if _, err := a.Write([]byte("back")); err != nil {
		t.Fatal(err)
	}
}

// TestNoAllocations: a read and a write that find the socket ready
// allocate nothing (their callbacks are bound once, not made a call).
func TestNoAllocations(t *testing.T) {
	a, b := pair(t)
	out, in := []byte("ping"), make([]byte, 4)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := a.Write(out); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(b, in); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Write(out); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(a, in); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations a write and read of the raw connection (and the net one's), want 0", allocs)
	}
}

// TestConcurrentReadsAndWrites: reads and writes from several goroutines
// at once, as net.Conn allows, each move whole bytes of their own, raw
// writes read by net's reads and net's writes by raw reads (run with
// -race, it also checks that the bound callbacks' state is kept apart).
func TestConcurrentReadsAndWrites(t *testing.T) {
	type halfCloser interface {
		io.ReadWriter
		CloseWrite() error
	}
	a, b := pair(t)
	c, d := pair(t)
	for _, dir := range []struct {
		name string
		w, r halfCloser
	}{{"raw to net", a, b}, {"net to raw", d, c}} {
		const writers, each = 4, 2000
		var wg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				msg := []byte{byte('a' + i)}
				for range each {
					if _, err := dir.w.Write(msg); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		go func() { wg.Wait(); dir.w.CloseWrite() }()
		got := make(chan map[byte]int, writers)
		for range writers {
			go func() {
				m := map[byte]int{}
				buf := make([]byte, 7)
				for {
					n, err := dir.r.Read(buf)
					for _, c := range buf[:n] {
						m[c]++
					}
					if err != nil {
						break
					}
				}
				got <- m
			}()
		}
		total := map[byte]int{}
		for range writers {
			for c, n := range <-got {
				total[c] += n
			}
		}
		for i := range writers {
			if n := total[byte('a'+i)]; n != each {
				t.Errorf("%s: writer %c: %d bytes arrived, want %d", dir.name, 'a'+i, n, each)
			}
		}
	}
}
