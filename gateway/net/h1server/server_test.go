package h1server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// dial connects to ln, closed when the test ends, with a reader for its
// answers.
func dial(t *testing.T, ln net.Listener) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// serve runs s on ln until the test ends, and checks that Serve returned
// http.ErrServerClosed and that no goroutine is left.
func serve(t *testing.T, s *Server, ln net.Listener) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
		leftGoroutines(t)
	})
}

// TestHangUpEndsContext: a handler still running when its client hangs
// up has its request's context ended, on a request served here (the
// watch starts after WatchAfter) and on one handed to net/http.
func TestHangUpEndsContext(t *testing.T) {
	started := make(chan string, 2)
	ended := make(chan string, 2)
	s := New(&http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // net/http watches once the body is read
		started <- r.Method
		<-r.Context().Done()
		ended <- r.Method
	})})
	ln := listen(t)
	serve(t, s, ln)
	for _, raw := range []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx"} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, raw)
		m := <-started
		c.Close()
		select {
		case got := <-ended:
			if got != m {
				t.Fatalf("ended %s, want %s", got, m)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the handler's context did not end in 10 s after its client hung up", m)
		}
	}
}

// TestPipelined: a request sent while the one before is served (its
// handler outlasting WatchAfter, so the watch reads the next request's
// first byte) is answered after it, and the first one's context is not
// ended by it.
func TestPipelined(t *testing.T) {
	watching := make(chan struct{}, 1)
	testHookWatching = func() {
		select {
		case watching <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { testHookWatching = nil })
	release := make(chan struct{})
	s := New(&http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
			if err := r.Context().Err(); err != nil {
				http.Error(w, "context ended: "+err.Error(), 500)
				return
			}
		}
		io.WriteString(w, r.URL.Path)
	})})
	ln := listen(t)
	serve(t, s, ln)
	c, br := dial(t, ln)
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	io.WriteString(c, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
	select { // the watch reads the connection: it takes /next's first byte
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("no hang-up watch began in 10 s while a handler ran")
	}
	close(release)
	for _, want := range []string{"/slow", "/next"} {
		resp, body := readAnswer(t, br, "GET")
		if resp.StatusCode != 200 || body != want {
			t.Fatalf("got %d %q, want 200 %q", resp.StatusCode, body, want)
		}
	}
}

// TestHooksAndTLS: over TLS, each connection is counted new once and
// closed once by ConnState, with the connection accepted (never a
// wrapper), whether its requests were served here or handed over; and
// each request sees its ConnContext and its TLS state.
func TestHooksAndTLS(t *testing.T) {
	type key struct{}
	var mu sync.Mutex
	states := map[net.Conn][]http.ConnState{}
	closed := make(chan struct{}, 8)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || !r.TLS.HandshakeComplete {
			http.Error(w, "no TLS state", 500)
			return
		}
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%v", r.Context().Value(key{}))
	})
	s := New(&http.Server{Handler: h,
		ConnState: func(c net.Conn, st http.ConnState) {
			if _, ok := c.(*tls.Conn); !ok {
				t.Errorf("ConnState got a %T", c)
			}
			mu.Lock()
			states[c] = append(states[c], st)
			mu.Unlock()
			if st == http.StateClosed {
				closed <- struct{}{}
			}
		},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if _, ok := c.(*tls.Conn); !ok {
				t.Errorf("ConnContext got a %T", c)
			}
			return context.WithValue(ctx, key{}, "conn-value")
		}})
	cert := httptest.NewTLSServer(http.NotFoundHandler())
	cfg := cert.TLS.Clone()
	cert.Close()
	ln := tls.NewListener(listen(t), cfg)
	serve(t, s, ln)
	for _, raws := range [][]string{
		{"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
		{"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"},
	} {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		for _, raw := range raws {
			io.WriteString(c, raw)
			resp, body := readAnswer(t, br, strings.Fields(raw)[0])
			if resp.StatusCode != 200 || body != "conn-value" {
				t.Errorf("%q: %d %q", raw, resp.StatusCode, body)
			}
		}
		c.Close()
		<-closed
	}
	mu.Lock()
	defer mu.Unlock()
	for c, sts := range states {
		if sts[0] != http.StateNew || sts[len(sts)-1] != http.StateClosed || count(sts, http.StateNew) != 1 || count(sts, http.StateClosed) != 1 {
			t.Errorf("%v: states %v", c.RemoteAddr(), sts)
		}
	}
	if len(states) != 2 {
		t.Errorf("%d connections seen, want 2", len(states))
	}
}

func count(sts []http.ConnState, st http.ConnState) int {
	n := 0
	for _, s := range sts {
		if s == st {
			n++
		}
	}
	return n
}

// TestShutdown: Shutdown closes idle connections (served here and
// handed), lets a request in flight finish with Connection: close, and
// Serve returns.
func TestShutdown(t *testing.T) {
	inside := make(chan struct{})
	release := make(chan struct{})
	s := New(&http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/slow" {
			close(inside)
			<-release
		}
		io.WriteString(w, "ok")
	})})
	ln := listen(t)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	dial := func(raw string) (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, raw)
		return c, bufio.NewReader(c)
	}
	idle, idleR := dial("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	readAnswer(t, idleR, "GET")
	handed, handedR := dial("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx")
	readAnswer(t, handedR, "POST")
	busy, busyR := dial("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	<-inside
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	for _, br := range []*bufio.Reader{idleR, handedR} {
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("an idle connection read %v, want EOF", err)
		}
	}
	close(release)
	resp, body := readAnswer(t, busyR, "GET")
	if body != "ok" || !resp.Close {
		t.Errorf("in flight at Shutdown: %q, close %v", body, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
	idle.Close()
	handed.Close()
	busy.Close()
	leftGoroutines(t)
}

// TestIdleTimeout: a kept-alive connection is closed once idle for the
// server's IdleTimeout (90 to 100 % of it: the deadline is not moved on
// every request), after quick requests and after one slow enough to be
// watched; with no idle timeout, its wait for the next request has no
// bound, even where its head's reading has one.
func TestIdleTimeout(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(3 * WatchAfter) // watched: the watch clears the deadline
		}
		io.WriteString(w, r.URL.Path)
	})
	const idle = 400 * time.Millisecond
	for _, paths := range [][]string{{"/a", "/b", "/c"}, {"/a", "/slow"}} {
		s := New(&http.Server{Handler: handler, IdleTimeout: idle, ReadHeaderTimeout: 10 * time.Second})
		ln := listen(t)
		serve(t, s, ln)
		c, br := dial(t, ln)
		for _, p := range paths {
			io.WriteString(c, "GET "+p+" HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp, body := readAnswer(t, br, "GET"); resp.StatusCode != 200 || body != p {
				t.Fatalf("got %d %q, want 200 %q", resp.StatusCode, body, p)
			}
		}
		last := time.Now()
		c.SetReadDeadline(time.Now().Add(20 * idle)) // a bound for a failure, not a wait
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("%v: idle connection: read %v, want its end", paths, err)
		}
		if after := time.Since(last); after < idle-idle/10 {
			t.Errorf("%v: closed %v after the last answer, before 90 %% of the idle timeout %v", paths, after, idle)
		}
		c.Close()
	}

	s := New(&http.Server{Handler: handler, ReadHeaderTimeout: 100 * time.Millisecond})
	ln := listen(t)
	serve(t, s, ln)
	c, br := dial(t, ln)
	for i, p := range []string{"/a", "/b"} {
		if i > 0 {
			time.Sleep(300 * time.Millisecond) // idle past the head's bound
		}
		io.WriteString(c, "GET "+p+" HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, body := readAnswer(t, br, "GET"); resp.StatusCode != 200 || body != p {
			t.Fatalf("no idle timeout: got %d %q, want 200 %q", resp.StatusCode, body, p)
		}
	}
}

// TestDeadlineBesideWatch: a handler that sets its connection's read
// deadline (http.ResponseController, as doors.RefuseAndClose does) while
// the hang-up watch begins changes what the watch changes under the same
// lock. The handler keeps setting it for twenty times WatchAfter, with no
// synchronisation of its own with the watch, so that -race sees the two
// side by side (issue 65: before, only a loaded machine showed the race,
// in gateway's TestRefusalsLogSummarized).
func TestDeadlineBesideWatch(t *testing.T) {
	watched := make(chan struct{}, 1)
	testHookWatching = func() {
		select {
		case watched <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { testHookWatching = nil })
	s := New(&http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctl := http.NewResponseController(w)
		for start := time.Now(); time.Since(start) < 20*WatchAfter; {
			if err := ctl.SetReadDeadline(time.Time{}); err != nil {
				t.Errorf("SetReadDeadline: %v", err)
				return
			}
		}
		io.WriteString(w, "ok")
	})})
	ln := listen(t)
	serve(t, s, ln)
	c, br := dial(t, ln)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, body := readAnswer(t, br, "GET"); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	select {
	case <-watched:
	default:
		t.Fatal("the hang-up watch never began while the handler ran for 20 × WatchAfter")
	}
}

// TestOutlastsReadTimeout: a handler that runs past the server's
// ReadTimeout, once its request's body is read, keeps its context while
// its client waits, whether the request was served here (a GET) or handed
// to net/http (a POST with a body, a DELETE without one); and still sees
// its client hang up after that (issue 62: a call waiting for its owner,
// a long-poll). ReadTimeout bounds the request, never the handler.
func TestOutlastsReadTimeout(t *testing.T) {
	const readTimeout = 150 * time.Millisecond
	type seen struct {
		method string
		err    error
	}
	outlived := make(chan seen, 3)
	hungUp := make(chan string, 3)
	s := New(&http.Server{ReadTimeout: readTimeout, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
			outlived <- seen{r.Method, r.Context().Err()}
			return
		case <-time.After(4 * readTimeout): // the point: time passing past ReadTimeout
		}
		outlived <- seen{r.Method, nil}
		<-r.Context().Done()
		hungUp <- r.Method
	})})
	ln := listen(t)
	serve(t, s, ln)
	for _, raw := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
		"DELETE / HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, raw)
		got := <-outlived
		if got.err != nil {
			t.Errorf("%s: the handler's context ended (%v) %s after it began, past ReadTimeout, while its client waited", got.method, got.err, 4*readTimeout)
		}
		c.Close()
		if got.err == nil {
			select {
			case m := <-hungUp:
				if m != got.method {
					t.Fatalf("hung up: %s, want %s", m, got.method)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: the handler's context did not end in 10 s after its client hung up", got.method)
			}
		}
	}
}
