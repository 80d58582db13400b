package h1

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// The conformance table: how the engine reads what real servers (and bad
// ones) answer, under both policies. Each row is a raw server's first
// answer, written byte for byte on real loopback TCP, and what comes of
// it: the body passed on (never one that was cut), the error that names
// the problem, and, for the pooled Transport, whether the connection is
// taken again, and that the next request gets its own answer (ok) whether
// or not it was.

// after is what the raw server does once it has written an answer.
type after int

const (
	keepOpen  after = iota // read the next request
	closeConn              // close (FIN)
	resetConn              // close with a reset (RST)
)

type confRow struct {
	name   string
	method string // GET if empty
	// answer writes the first answer (a string, or a writer for the
	// big ones); then the server does then.
	answer string
	write  func(w io.Writer)
	then   after
	// What comes of it.
	body    string   // the body read whole (when err is "")
	err     string   // a part of the error's text, from the head or the body
	header  []string // a name and its value, expected on the answer
	trailer []string // a name and its value, expected after the body
	pooled  bool     // Transport: the next request takes the same connection
	status  int      // the final status, if not 200
	// onlyPooled and onlyOnce keep a row to one policy.
	onlyPooled, onlyOnce bool
}

const ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

func confRows() []confRow {
	interim := func(n int) func(w io.Writer) {
		return func(w io.Writer) {
			bw := bufio.NewWriter(w)
			for range n {
				bw.WriteString("HTTP/1.1 102 Processing\r\n\r\n")
			}
			bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
			bw.Flush()
		}
	}
	bigHead := func(n int) func(w io.Writer) {
		return func(w io.Writer) {
			bw := bufio.NewWriterSize(w, 64<<10)
			bw.WriteString("HTTP/1.1 200 OK\r\nX-Big: ")
			line := strings.Repeat("a", 64<<10)
			for left := n; left > 0; left -= len(line) {
				if _, err := bw.WriteString(line[:min(left, len(line))]); err != nil {
					return // the client stopped reading
				}
			}
			bw.WriteString("\r\nContent-Length: 5\r\n\r\nhello")
			bw.Flush()
		}
	}
	return []confRow{
		// Framing.
		{name: "length", answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", body: "hello", pooled: true},
		{name: "chunked with a trailer", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: 42\r\n\r\n",
			body: "hello", trailer: []string{"X-Sum", "42"}, pooled: true},
		// RFC 9112 §6.3: Transfer-Encoding overrides Content-Length, as in
		// net/http; the next answer is still the next request's.
		{name: "Content-Length and Transfer-Encoding", answer: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", body: "hello", pooled: true},
		{name: "two different Content-Lengths", answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", err: "Content-Length"},
		{name: "two equal Content-Lengths", answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", body: "hello", pooled: true},
		{name: "a HEAD's length", method: http.MethodHead, answer: "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", body: "", header: []string{"Content-Length", ""}, pooled: true},
		// A body where none may be: never passed on, and the connection
		// is not used again (its bytes would be taken for the next answer).
		{name: "204 with a body", answer: "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello", status: 204, body: ""},
		{name: "304 with a body", answer: "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\nhello", status: 304, body: ""},
		{name: "Connection: close", answer: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello", then: closeConn, body: "hello"},
		{name: "HTTP/1.0", answer: "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello", then: closeConn, body: "hello"},
		{name: "HTTP/1.0 keep-alive", answer: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhello", body: "hello", pooled: true},
		{name: "delimited by its end", answer: "HTTP/1.1 200 OK\r\n\r\nhello", then: closeConn, body: "hello"},
		// A body that was cut is an error, never a whole body.
		{name: "short body", answer: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", then: closeConn, err: "unexpected EOF"},
		{name: "short body, reset", answer: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", then: resetConn, err: "reset"},
		{name: "chunked without its end", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", then: closeConn, err: "unexpected EOF"},
		{name: "bad chunk size", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", err: "chunk"},
		{name: "chunk extensions", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=\"v\"\r\nhello\r\n0;last\r\n\r\n", body: "hello", pooled: true},
		{name: "unknown transfer coding", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", err: "transfer encoding"},
		// RFC 9112 §5.2: a user agent replaces an obs-fold with spaces.
		{name: "obs-fold", answer: "HTTP/1.1 200 OK\r\nX-Fold: a\r\n b\r\nContent-Length: 5\r\n\r\nhello", body: "hello", header: []string{"X-Fold", "a b"}, pooled: true},
		// RFC 9112 §2.2: a recipient may take a bare LF for a line's end.
		{name: "bare LF", answer: "HTTP/1.1 200 OK\nContent-Length: 5\n\nhello", body: "hello", pooled: true},
		{name: "not HTTP", answer: "SSH-2.0-OpenSSH_9.2\r\n", then: closeConn, err: "malformed HTTP"},
		{name: "status out of range", answer: "HTTP/1.1 099 Odd\r\nContent-Length: 0\r\n\r\n", err: "status"},
		// Limits.
		{name: "1,000 interim answers", write: interim(1000), body: "hello", pooled: true},
		{name: "5,000 interim answers", write: interim(5000), then: closeConn, err: "interim"},
		{name: "a 900 KiB head", write: bigHead(900 << 10), body: "hello", pooled: true},
		{name: "a 64 MiB head", write: bigHead(64 << 20), then: closeConn, err: "head is over"},
		// A 101 ends a pooled read; the once-only policy hands it over.
		{name: "101 to a read", answer: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n", then: closeConn, err: "switched protocols", onlyPooled: true},
	}
}

// rawServer answers each connection's first request with row's answer and
// every later one with ok, until then says otherwise.
type rawServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
	first atomic.Bool // the first answer has been written
}

func startRaw(t *testing.T, row confRow) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(c, row)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *rawServer) serve(c net.Conn, row confRow) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		if !s.first.CompareAndSwap(false, true) {
			io.WriteString(c, ok)
			continue
		}
		if row.write != nil {
			row.write(c)
		} else {
			io.WriteString(c, row.answer)
		}
		switch row.then {
		case closeConn:
			return
		case resetConn:
			c.(*net.TCPConn).SetLinger(0)
			return
		}
	}
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() + "/" }

// check compares an exchange's outcome with the row's.
func (row confRow) check(t *testing.T, resp *http.Response, body string, err error) {
	t.Helper()
	if row.err != "" {
		if err == nil {
			t.Fatalf("answered %d %q, want an error naming %q", resp.StatusCode, body, row.err)
		}
		if !strings.Contains(err.Error(), row.err) {
			t.Fatalf("error %q, want one naming %q", err, row.err)
		}
		return
	}
	if err != nil {
		t.Fatalf("error %v, want the answer %q", err, row.body)
	}
	if want := cmp.Or(row.status, 200); resp.StatusCode != want || body != row.body {
		t.Fatalf("answered %d %q, want %d %q", resp.StatusCode, body, want, row.body)
	}
	if row.header != nil && row.header[1] != "" && resp.Header.Get(row.header[0]) != row.header[1] {
		t.Errorf("header %s: %q, want %q", row.header[0], resp.Header.Get(row.header[0]), row.header[1])
	}
	if row.trailer != nil && resp.Trailer.Get(row.trailer[0]) != row.trailer[1] {
		t.Errorf("trailer %s: %q, want %q", row.trailer[0], resp.Trailer.Get(row.trailer[0]), row.trailer[1])
	}
}

// TestConformancePooled runs the table through Transport, then a second
// request: on the same connection exactly when the row says it may be,
// and answered with its own answer either way.
func TestConformancePooled(t *testing.T) {
	for _, row := range confRows() {
		if row.onlyOnce {
			continue
		}
		t.Run(row.name, func(t *testing.T) {
			s := startRaw(t, row)
			var dials atomic.Int32
			tr := newTransport(&dials)
			defer tr.CloseIdleConnections()
			req, _ := http.NewRequest(cmp.Or(row.method, http.MethodGet), s.url(), nil)
			resp, err := tr.RoundTrip(req)
			var body string
			if err == nil {
				var b []byte
				b, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				body = string(b)
			}
			row.check(t, resp, body, err)

			var reused bool
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
			s.first.Store(true)
			_, got := get(t, tr, ctx, s.url())
			if got != "ok" {
				t.Fatalf("the next request was answered %q, want its own answer ok", got)
			}
			if err == nil && reused != row.pooled {
				t.Errorf("the next request reused the connection: %v, want %v", reused, row.pooled)
			}
		})
	}
}

// TestConformanceOnce runs the table through the once-only policy, on a
// connection of its own each: a call's answer is read as a read's is, its
// errors say it was sent, and a 101 is handed over.
func TestConformanceOnce(t *testing.T) {
	rows := append(confRows(), confRow{name: "101 to a session's opening", answer: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\nsession bytes",
		then: closeConn, status: 101, onlyOnce: true})
	for _, row := range rows {
		if row.onlyPooled {
			continue
		}
		t.Run(row.name, func(t *testing.T) {
			s := startRaw(t, row)
			c, err := net.Dial("tcp", s.ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			var call io.Reader = strings.NewReader("the call")
			if row.method != "" {
				call = nil
			}
			req, _ := http.NewRequest(cmp.Or(row.method, http.MethodPost), s.url(), call)
			a, err := Once(context.Background(), c, req, Options{})
			var resp *http.Response
			var body string
			if err == nil {
				resp = a.Response
				if a.StatusCode == http.StatusSwitchingProtocols {
					conn, br := a.Switched()
					b, _ := io.ReadAll(br)
					conn.Close()
					if string(b) != "session bytes" {
						t.Fatalf("the session's first bytes: %q", b)
					}
				} else {
					var b []byte
					b, err = io.ReadAll(a.Body)
					a.Body.Close()
					body = string(b)
				}
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || !e.Sent {
					t.Errorf("error %v: want an *Error that says the call was sent", err)
				}
			}
			row.check(t, resp, body, err)
		})
	}
}

// faultConn fails its next Write when armed: with nothing written, or
// after n bytes.
type faultConn struct {
	net.Conn
	armed   atomic.Bool
	written int // bytes the failing write puts through first
}

func (c *faultConn) Write(p []byte) (int, error) {
	if c.armed.CompareAndSwap(true, false) {
		n := min(c.written, len(p))
		c.Conn.Write(p[:n])
		c.Conn.Close()
		return n, &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return c.Conn.Write(p)
}

// TestConformanceReuse: a pooled connection that fails under the next
// request. A read whose writing failed before any byte of it was written
// goes again on a new connection (net/http retries it too), and so does
// one whose connection ended before any answer came; one written in
// part is not sent again; a call on the pooled client is never resent.
func TestConformanceReuse(t *testing.T) {
	cases := []struct {
		name    string
		method  string
		written int  // the failing write puts this much through first; -1 no failing write
		resetAt bool // the server resets the connection after reading the second request
		err     string
		dials   int32
	}{
		{name: "reset before the write", method: "GET", written: 0, dials: 2},
		{name: "reset during the write", method: "GET", written: 10, err: "reset", dials: 1},
		{name: "reset after the write", method: "GET", written: -1, resetAt: true, dials: 2},
		{name: "a call: reset before the write", method: "POST", written: 0, err: "reset", dials: 1},
		{name: "a call: reset after the write", method: "POST", written: -1, resetAt: true, err: "closed", dials: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			defer func() { ln.Close(); wg.Wait() }()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer c.Close()
						br := bufio.NewReader(c)
						for {
							req, err := http.ReadRequest(br)
							if err != nil {
								return
							}
							io.Copy(io.Discard, req.Body)
							if n.Add(1) == 2 && tc.resetAt {
								c.(*net.TCPConn).SetLinger(0)
								return
							}
							io.WriteString(c, ok)
						}
					}()
				}
			}()
			var dials atomic.Int32
			var last *faultConn
			tr := &Transport{Dial: func(ctx context.Context, addr string) (net.Conn, error) {
				dials.Add(1)
				c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
				if err != nil {
					return nil, err
				}
				last = &faultConn{Conn: c}
				return last, nil
			}}
			defer tr.CloseIdleConnections()
			url := "http://" + ln.Addr().String() + "/"
			get(t, tr, context.Background(), url)
			dials.Store(0)
			if tc.written >= 0 {
				last.written = tc.written
				last.armed.Store(true)
			}
			var body io.Reader
			if tc.method == "POST" {
				body = strings.NewReader("a call")
			}
			req, _ := http.NewRequest(tc.method, url, body)
			resp, err := tr.RoundTrip(req)
			var got string
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				got = string(b)
			}
			switch {
			case tc.err == "" && (err != nil || got != "ok"):
				t.Errorf("%v %q, want ok", err, got)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("%v %q, want an error naming %q", err, got, tc.err)
			}
			if dials.Load() != tc.dials-1 {
				t.Errorf("%d new connections, want %d", dials.Load(), tc.dials-1)
			}
		})
	}
}

// TestPoolKey: a connection whose dial reached another road than the one
// asked (a raced dial) is pooled under where it went: the next request
// for the address asked dials anew rather than take it (the pinned read of
// issue 35; peerclient's TestPinnedReadAfterRacedDial walks it through the
// road race).
func TestPoolKey(t *testing.T) {
	s := startRaw(t, confRow{name: "ok", answer: ok})
	s.first.Store(true)
	var dials atomic.Int32
	tr := &Transport{Dial: func(ctx context.Context, addr string) (net.Conn, error) {
		n := dials.Add(1)
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", s.ln.Addr().String())
		if err != nil {
			return nil, err
		}
		if n == 1 {
			return keyed{c, "elsewhere:1"}, nil // the race went to another road
		}
		return c, nil
	}}
	defer tr.CloseIdleConnections()
	url := "http://asked.example:80/"
	var reused bool
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
	get(t, tr, ctx, url)
	get(t, tr, ctx, url)
	if reused || dials.Load() != 2 {
		t.Errorf("the second request for the address asked: reused %v after %d dials, want a new connection", reused, dials.Load())
	}
	get(t, tr, ctx, url)
	if !reused || dials.Load() != 2 {
		t.Errorf("the third: reused %v after %d dials, want the second's connection again", reused, dials.Load())
	}
}

type keyed struct {
	net.Conn
	key string
}

func (k keyed) PoolKey() string { return k.key }
