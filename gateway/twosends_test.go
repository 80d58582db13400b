package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// twoSendsApp is an owner app as Python's http.server answers at HTTP/1.1
// (and many small servers): on a kept-alive connection, Nagle's algorithm
// on, each answer's head in one send and its body in another. It counts
// the requests it answered on a connection it had answered before.
type twoSendsApp struct {
	URL    string
	mu     sync.Mutex
	reused int
}

func startTwoSendsApp(t testing.TB) *twoSendsApp {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &twoSendsApp{URL: "http://" + ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			c.(*net.TCPConn).SetNoDelay(false) // Nagle on, as Python's sockets are
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for n := 0; ; n++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if n > 0 {
						a.mu.Lock()
						a.reused++
						a.mu.Unlock()
					}
					body := "answer to " + req.URL.Path
					if req.URL.Path == "/r" { // the benchmarks' 1 KiB
						body = strings.Repeat("r", 1024)
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n")
					io.WriteString(c, body)
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return a
}

// TestTwoSendsApp: reads of an app that writes its head and its body in
// two sends, on a connection kept alive between the owner Delta and the
// app, arrive whole through two Deltas, each the answer to its own
// request (issue 40: each used to wait 40 ms for a delayed
// acknowledgement; BenchmarkTwoSends measures it, as a ratio to a fresh
// connection straight to the app).
func TestTwoSendsApp(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, nil)
	app := startTwoSendsApp(t)
	studio.register(t, "py", app.URL)
	for i := range 10 {
		path := "/item/" + strconv.Itoa(i)
		r := laptop.c.Must(t, "GET", "/v1/peers/studio/py"+path, nil, "Cache-Control", "no-store")
		if r.Status != 200 || string(r.Body) != "answer to "+path || r.Outcome() != "answered" {
			t.Fatalf("read %d: %d %q %q", i, r.Status, r.Outcome(), r.Body)
		}
	}
	app.mu.Lock()
	defer app.mu.Unlock()
	if app.reused == 0 {
		t.Errorf("the owner Delta never reused its connection to the app: the case this test is for did not arise")
	}
}

// BenchmarkTwoSends: a 1 KiB read of an app that answers in two sends,
// through two Deltas (the owner's connection to the app kept alive), next
// to a fresh connection straight to the app (curl's case, which a fresh
// connection's quick acknowledgements spare) and a kept one, in the same
// run. The macOS release workflow runs it too: macOS has no per-socket
// TCP_QUICKACK, so its figures say what a Mac's owner Delta pays.
func BenchmarkTwoSends(b *testing.B) {
	laptop, studio := pair(b, func(n *node) { n.cfg.Logger = nil })
	app := startTwoSendsApp(b)
	studio.register(b, "py", app.URL)
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	pooled := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.Run("direct-fresh", func(b *testing.B) {
		for b.Loop() {
			get(b, fresh, app.URL+"/r", "")
		}
	})
	// What a client that keeps its connection to the app pays (the case
	// TCP_QUICKACK removes on Linux; on a Mac this shows whether its
	// delayed acknowledgement holds the body at all).
	b.Run("direct-kept", func(b *testing.B) {
		for b.Loop() {
			get(b, pooled, app.URL+"/r", "")
		}
	})
	b.Run("two-deltas", func(b *testing.B) {
		for b.Loop() {
			get(b, pooled, laptop.c.URL+"/v1/peers/studio/py/r", laptop.c.Token)
		}
	})
}
