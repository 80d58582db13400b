package doors

import (
	"bufio"
	"fmt"
	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/relay"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDoorServer: a body announced and not sent fails the handler's read
// at the request limit; a handler that works longer than that after
// reading its body still answers, and still learns through its context
// that its client went away.
func TestDoorServer(t *testing.T) {
	const limit = 100 * time.Millisecond
	results := make(chan string, 2)
	read := make(chan struct{}, 1)
	srv := Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			results <- "read: " + err.Error()
			return
		}
		read <- struct{}{}
		select {
		case <-r.Context().Done():
			results <- "saw the client go"
		case <-time.After(10 * time.Second): // a failure, not a wait
			results <- "never saw the client go"
		}
	}), nil, Limits{Header: limit, Request: limit, Idle: limit})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"))
	select {
	case got := <-results:
		if !strings.Contains(got, "timeout") {
			t.Errorf("a body that never came: %q, want the read to time out", got)
		}
	case <-time.After(10 * time.Second): // a failure, not a wait
		t.Fatal("a body that never came held the handler's read past the request's limit")
	}

	conn2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn2.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789"))
	<-read
	time.Sleep(3 * limit) // past the request's limit: the scenario, not a wait for a condition
	conn2.Close()
	if got := <-results; got != "saw the client go" {
		t.Errorf("a handler working past the request's limit: %q", got)
	}
}

// TestPerSourceCap: one source holds at most PerSource connections; one over
// is closed at once and reported, and a connection that ends frees its
// place.
func TestPerSourceCap(t *testing.T) {
	refused := make(chan string, 10)
	srv := Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), nil,
		Limits{Header: 10 * time.Second, Request: 10 * time.Second, Idle: 10 * time.Second, PerSource: 3,
			OnRefused: func(remote string) {
				select {
				case refused <- remote:
				default:
				}
			}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// works reports whether a request on c is answered.
	works := func(c net.Conn) bool {
		c.SetDeadline(time.Now().Add(10 * time.Second)) // a failure, not a wait
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return false
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	held := []net.Conn{dial(), dial(), dial()}
	for i, c := range held {
		if !works(c) {
			t.Fatalf("connection %d of 3 was not served", i+1)
		}
	}
	if works(dial()) {
		t.Fatal("a fourth connection from one source was served past the cap of 3")
	}
	// It is told so, not closed unanswered: nothing was carried out.
	c4 := dial()
	c4.SetDeadline(time.Now().Add(10 * time.Second))
	c4.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	if resp, err := http.ReadResponse(bufio.NewReader(c4), nil); err != nil || resp.StatusCode != 503 || resp.Header.Get(localapi.HeaderOutcome) != string(proto.PeerBusy) {
		t.Errorf("a connection over the cap: %v %v, want 503 %s", resp, err, proto.PeerBusy)
	}
	if got := <-refused; !strings.HasPrefix(got, "127.0.0.1:") {
		t.Errorf("refusal reported for %q, want the remote address", got)
	}
	held[0].Close()
	// Its place is freed when the server sees it closed: wait for that.
	for range 100 {
		if c := dial(); works(c) {
			return
		}
		time.Sleep(10 * time.Millisecond) // polling a condition the server reaches on its own
	}
	t.Fatal("a connection that ended did not free its place")
}

// TestProgressBody: read through relay.ProgressBody, a body that keeps moving
// arrives whole however long past the door's limit on a request it takes;
// one that stops for longer than the idle limit is ended, saying so.
func TestProgressBody(t *testing.T) {
	// idle is well above the writes' 50 ms pace, so that a loaded
	// machine's scheduling delays do not read as a stall (issue 36's
	// sweep); the stall is three times it.
	const limit, idle = 100 * time.Millisecond, 400 * time.Millisecond
	results := make(chan string, 2)
	srv := Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(relay.ProgressBody(w, r, idle))
		if err != nil {
			results <- err.Error()
			return
		}
		results <- fmt.Sprintf("%d bytes", len(b))
	}), nil, Limits{Header: limit, Request: limit, Idle: time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	for _, stall := range []bool{false, true} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\n"))
		for i := range 8 { // 8 × 50 ms: four times the door's limit
			if stall && i == 4 {
				time.Sleep(3 * idle)
			}
			conn.Write([]byte("x"))
			time.Sleep(limit / 2)
		}
		got := <-results
		conn.Close()
		switch {
		case !stall && got != "8 bytes":
			t.Errorf("a body that moves: %s", got)
		case stall && !strings.Contains(got, "made no progress for 400ms"):
			t.Errorf("a body that stalls: %s", got)
		}
	}
}

// TestPerSourceCapCountsSessions: a connection taken from its server for
// a session (hijacked) counts against its source's cap until the session
// says it closed (HijackDone), as it did while the server had it.
func TestPerSourceCapCountsSessions(t *testing.T) {
	done := make(chan struct{})
	var hijacked sync.WaitGroup
	srv := Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/session" {
			return
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		hijacked.Done()
		<-done
		c.Close()
		HijackDone(r.Context())
	}), nil, Limits{Header: 10 * time.Second, Request: 10 * time.Second, Idle: 10 * time.Second, PerSource: 2})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	ask := func(path string) (net.Conn, bool) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return c, false
		}
		if path == "/session" {
			return c, true
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		return c, err == nil && resp.StatusCode == 200
	}
	hijacked.Add(2)
	ask("/session")
	ask("/session")
	hijacked.Wait()
	if _, ok := ask("/"); ok {
		t.Fatal("a third connection was served while two sessions held the source's cap of 2")
	}
	close(done) // the sessions end
	waitFor(t, func() bool { _, ok := ask("/"); return ok })
}

// waitFor waits up to 10 s for cond, looking again every 20 ms.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("the source's cap was not given back when the sessions ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
