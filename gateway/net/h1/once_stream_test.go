package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func dialT(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Interim answers (102, 103) are never the answer: they are told to
// Got1xx in order and the final one is returned.
func TestInterimAnswersAreNotTheAnswer(t *testing.T) {
	addr := listen(t, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"+
			"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
	})
	var got []int
	res, err := OnceWhole(context.Background(), dialT(t, addr), post(addr), 1<<20, Options{Got1xx: func(code int, h http.Header) {
		got = append(got, code)
		if code == 103 && h.Get("Link") == "" {
			t.Errorf("103 without its Link header: %v", h)
		}
	}})
	if err != nil || res.StatusCode != 201 || string(res.Bytes) != "ok" {
		t.Fatalf("answer: %v %v", res, err)
	}
	if len(got) != 2 || got[0] != 102 || got[1] != 103 {
		t.Errorf("interim answers told: %v, want [102 103]", got)
	}
}

// With Continue, a peer that answers before asking for the body gets none
// of it, and its answer is the answer.
func TestContinueRefusedBeforeTheBody(t *testing.T) {
	var bodyBytes atomic.Int64
	addr := listen(t, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if req.Header.Get("Expect") != "100-continue" {
			t.Errorf("no Expect: 100-continue: %v", req.Header)
		}
		io.WriteString(c, "HTTP/1.1 507 Insufficient Storage\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _ := io.Copy(io.Discard, br)
		bodyBytes.Store(n)
	})
	req, _ := http.NewRequest("POST", "http://"+addr+"/x", io.NopCloser(strings.NewReader(strings.Repeat("x", 4<<20))))
	req.ContentLength, req.TransferEncoding = -1, []string{"chunked"}
	a, err := Once(context.Background(), dialT(t, addr), req, Options{Continue: true, Idle: 5 * time.Second})
	if err != nil || a.StatusCode != 507 {
		t.Fatalf("early refusal: %v %v", a, err)
	}
	a.Body.Close()
}

// With Continue, the body follows the peer's 100 Continue.
func TestContinueSendsAfter100(t *testing.T) {
	addr := listen(t, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		n, _ := io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\nX-Got: "+strings.Repeat("1", int(n%7))+"\r\n\r\n")
	})
	req, _ := http.NewRequest("POST", "http://"+addr+"/x", io.NopCloser(strings.NewReader(strings.Repeat("x", 3<<20))))
	req.ContentLength, req.TransferEncoding = -1, []string{"chunked"}
	written := false
	a, err := Once(context.Background(), dialT(t, addr), req, Options{Continue: true, Idle: 5 * time.Second, Written: func() { written = true }})
	if err != nil || a.StatusCode != 201 || !written {
		t.Fatalf("after 100: %v %v written=%v", a, err, written)
	}
	a.Body.Close()
}

// An answer's body has no idle limit (Idle bounds the request's writing
// alone, DESIGN §2c): one that keeps moving is read whole, and one that
// goes quiet for longer than Idle is still being read, ending only as its
// server ends it (here, short of its last chunk: an error, never a
// timeout).
func TestAnswerQuietPastIdle(t *testing.T) {
	addr := listen(t, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
		for range 6 { // 300 ms in all, more than Idle, each gap less
			io.WriteString(c, "1\r\nx\r\n")
			time.Sleep(50 * time.Millisecond)
		}
		if req.URL.Path == "/quiet" {
			time.Sleep(time.Second) // quiet for more than six times Idle
			io.WriteString(c, "1\r\ny\r\n")
			return // then cut short
		}
		io.WriteString(c, "0\r\n\r\n")
	})
	for _, path := range []string{"/flow", "/quiet"} {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		a, err := Once(context.Background(), dialT(t, addr), req, Options{Idle: 150 * time.Millisecond, Wait: 150 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(a.Body)
		a.Body.Close()
		var oe *Error
		switch {
		case path == "/flow" && (err != nil || len(b) != 6):
			t.Errorf("a body that moves: %q %v", b, err)
		case path == "/quiet" && (string(b) != "xxxxxxy" || !errors.As(err, &oe) || errors.Is(err, ErrIdle) || !oe.Sent || oe.Timeout):
			t.Errorf("a body quiet past Idle, then cut: %q %#v; want all 7 bytes, then the cut (not a timeout)", b, err)
		}
	}
}

// ReadAhead takes what arrived already: a small answer written in one
// piece is whole; one that trickles is not, and the rest follows on Body.
func TestReadAhead(t *testing.T) {
	addr := listen(t, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if req.URL.Path == "/whole" {
			io.WriteString(c, "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
		time.Sleep(100 * time.Millisecond)
		io.WriteString(c, "4\r\nnext\r\n0\r\n\r\n")
	})
	for _, tc := range []struct {
		path, ahead, rest string
		whole             bool
	}{{"/whole", "hello", "", true}, {"/trickle", "first", "next", false}} {
		req, _ := http.NewRequest("GET", "http://"+addr+tc.path, nil)
		a, err := Once(context.Background(), dialT(t, addr), req, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Let the first piece arrive (the head may come before it).
		deadline := time.Now().Add(2 * time.Second)
		var ahead []byte
		var whole bool
		for time.Now().Before(deadline) {
			ahead, whole, err = a.ReadAhead(1 << 20)
			if err != nil || len(ahead) > 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		rest, rerr := io.ReadAll(a.Body)
		a.Body.Close()
		if err != nil || rerr != nil || string(ahead) != tc.ahead || whole != tc.whole || string(rest) != tc.rest {
			t.Errorf("%s: ahead %q whole %v rest %q (%v, %v)", tc.path, ahead, whole, rest, err, rerr)
		}
	}
}

// A streamed body goes in chunks as big as what its source gives, up to
// bigPiece (gate.WriteTo), not in io.Copy's 32 KiB ones, and arrives
// whole and in order; a source that gives little at a time is passed on
// as it comes, never held back to fill a chunk.
func TestStreamedBodyChunks(t *testing.T) {
	body := make([]byte, 3<<20+123)
	for i := range body {
		body[i] = byte(i * 13)
	}
	for _, tc := range []struct {
		name     string
		read     int // the most the source gives a read
		min, max int // the biggest chunk's size
	}{
		{"a source that gives a lot", 1 << 20, bigPiece, bigPiece},
		{"a source that gives 5000 bytes at a time", 5000, 5000, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type seen struct {
				biggest int
				got     []byte
				err     error
			}
			out := make(chan seen, 1)
			addr := listen(t, func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				if _, err := http.ReadRequest(br); err != nil {
					out <- seen{err: err}
					return
				}
				io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
				var s seen
				for { // the chunks as they are on the wire
					line, err := br.ReadString('\n')
					if err != nil {
						s.err = err
						break
					}
					n, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(line, ";", 2)[0]), 16, 64)
					if err != nil {
						s.err = fmt.Errorf("chunk size %q: %v", line, err)
						break
					}
					if n == 0 {
						break
					}
					s.biggest = max(s.biggest, int(n))
					chunk := make([]byte, n+2)
					if _, err := io.ReadFull(br, chunk); err != nil {
						s.err = err
						break
					}
					s.got = append(s.got, chunk[:n]...)
				}
				out <- s
				io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
			})
			src := &pieceReader{r: bytes.NewReader(body), most: tc.read}
			req, _ := http.NewRequest("POST", "http://"+addr+"/x", io.NopCloser(src))
			req.ContentLength, req.TransferEncoding = -1, []string{"chunked"}
			a, err := Once(context.Background(), dialT(t, addr), req, Options{Continue: true, Idle: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			a.Body.Close()
			s := <-out
			if s.err != nil || !bytes.Equal(s.got, body) {
				t.Fatalf("the body arrived as %d bytes (%v), want %d, the same", len(s.got), s.err, len(body))
			}
			if s.biggest < tc.min || s.biggest > tc.max {
				t.Errorf("the biggest chunk was %d bytes, want %d to %d", s.biggest, tc.min, tc.max)
			}
		})
	}
}

// pieceReader gives at most most bytes a read.
type pieceReader struct {
	r    io.Reader
	most int
}

func (p *pieceReader) Read(b []byte) (int, error) { return p.r.Read(b[:min(len(b), p.most)]) }
