package gatewaytest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// SendsApp is an owner app that answers as Python's http.server does at
// HTTP/1.1 (and many small servers): on a kept-alive connection, Nagle's
// algorithm on, each answer's head in one send and its body in others, so
// the body waits for the head's acknowledgement. It is a raw server, so the
// sends are exactly these:
//
//	/s/1, /s/2, /s/3  1 KiB in that many sends (head and body together, or
//	                  the head, then the body in one or two pieces)
//	/r                1 KiB in two sends
//	anything else     "answer to PATH" in two sends
//
// A request that says Connection: close is answered and its connection
// closed. Tests, benchmarks and tools/bench use it.
type SendsApp struct {
	URL    string
	ln     net.Listener
	reused atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

// SendsBody is the size of the answers to /s/N and /r.
const SendsBody = 1 << 10

// NewSendsApp starts a SendsApp on loopback; Close stops it.
func NewSendsApp() (*SendsApp, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a := &SendsApp{URL: "http://" + ln.Addr().String(), ln: ln, conns: map[net.Conn]bool{}}
	a.wg.Go(a.accept)
	return a, nil
}

// StartSendsApp starts a SendsApp that stops with the test.
func StartSendsApp(t testing.TB) *SendsApp {
	t.Helper()
	a, err := NewSendsApp()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// Reused counts the requests answered on a connection that had been
// answered on before.
func (a *SendsApp) Reused() int { return int(a.reused.Load()) }

// Close stops the app and closes its connections, and returns once each
// connection's goroutine has ended.
func (a *SendsApp) Close() {
	a.ln.Close()
	a.mu.Lock()
	a.closed = true
	for c := range a.conns {
		c.Close()
	}
	a.mu.Unlock()
	a.wg.Wait()
}

func (a *SendsApp) accept() {
	for {
		c, err := a.ln.Accept()
		if err != nil {
			return
		}
		c.(*net.TCPConn).SetNoDelay(false) // Nagle on, as Python's sockets are
		a.mu.Lock()
		a.conns[c] = true
		if a.closed { // accepted while Close ran: closed at once
			c.Close()
		}
		a.mu.Unlock()
		a.wg.Go(func() {
			defer func() {
				c.Close()
				a.mu.Lock()
				delete(a.conns, c)
				a.mu.Unlock()
			}()
			a.serve(c)
		})
	}
}

// serve answers the requests on one connection, each in the sends its
// path names, until the connection ends or a request says close.
func (a *SendsApp) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for n := 0; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		if n > 0 {
			a.reused.Add(1)
		}
		p := req.URL.Path
		body, sends := "answer to "+p, 2
		switch p {
		case "/s/1", "/s/2", "/s/3":
			body, sends = strings.Repeat("s", SendsBody), int(p[3]-'0')
		case "/r":
			body = strings.Repeat("r", SendsBody)
		}
		conn := ""
		if req.Close {
			conn = "Connection: close\r\n"
		}
		head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%s\r\n", len(body), conn)
		writes := []string{head, body[:len(body)/2], body[len(body)/2:]}
		switch sends {
		case 1:
			writes = []string{head + body}
		case 2:
			writes = []string{head, body}
		}
		for _, w := range writes {
			if _, err = io.WriteString(c, w); err != nil {
				break
			}
		}
		if err != nil || req.Close {
			return
		}
	}
}
