package session

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
)

// wrapped is a connection that only says what is beneath it.
type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }

// TestKeepAlive: a session's TCP connection gets its keepalive beneath
// the wrappers it comes in (issue 34 U1); a connection that is not TCP
// does not.
func TestKeepAlive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, conn := range []net.Conn{c, wrapped{c}, tls.Client(wrapped{c}, &tls.Config{InsecureSkipVerify: true})} {
		if !KeepAlive(conn) {
			t.Errorf("%T: no keepalive set", conn)
		}
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if KeepAlive(a) {
		t.Error("a pipe has a keepalive")
	}
}

// TestPipeOnce: what a session carries arrives whole and in order, small
// pieces and bursts alike (an idle direction waits with a small buffer and
// borrows a copy buffer only for a burst).
func TestPipeOnce(t *testing.T) {
	var want []byte
	src := &pieces{}
	for i, n := range []int{1, 511, 512, 513, 40 << 10, 3, 1 << 20, 7} {
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(i*31 + j)
		}
		src.p = append(src.p, p)
		want = append(want, p...)
	}
	var got bytesBuffer
	if err := pipeOnce(&got, src); err != nil {
		t.Fatal(err)
	}
	if string(got.b) != string(want) {
		t.Errorf("%d bytes arrived, want %d, or not in order", len(got.b), len(want))
	}
}

// pieces reads its pieces one a Read (or as much of one as fits).
type pieces struct{ p [][]byte }

func (s *pieces) Read(b []byte) (int, error) {
	if len(s.p) == 0 {
		return 0, io.EOF
	}
	n := copy(b, s.p[0])
	if s.p[0] = s.p[0][n:]; len(s.p[0]) == 0 {
		s.p = s.p[1:]
	}
	return n, nil
}

type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
