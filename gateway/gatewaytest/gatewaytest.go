// Package gatewaytest has the parts that tests of Delta start for real:
// an owner app on loopback that behaves as each row of the fault table
// (DESIGN §2), a listener that resets every connection, a dead address, and
// a client of the local API that uses a new connection for every request.
package gatewaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/net/rawsock"
)

// OwnerApp is an owner app on loopback. The first path segment of a request
// chooses its behaviour:
//
//	/answer/...            applies the effect and answers 201 (the body echoed)
//	/apply-then-sleep/...  applies the effect, then waits for Release(path), then answers
//	/sleep-then-apply/...  waits for Release(path), then applies the effect and answers
//	/reset-after-read/...  reads the whole request, applies the effect, then resets (SO_LINGER 0)
//	/hold/...              waits for Release(path), then applies the effect and answers
//	/cache/...             answers with the query's cc parameter as Cache-Control
//
// Anything else answers 200 with the path, without an effect.
type OwnerApp struct {
	URL string

	srv *http.Server
	ln  net.Listener

	mu       sync.Mutex
	released bool                     // every path is released
	release  map[string]chan struct{} // path → closed when released
	effects  map[string]int           // path → effects applied
	requests []*http.Request
	arrived  chan string // request ids, as requests arrive (buffered)
	total    atomic.Int64
}

// StartOwnerApp starts an owner app; it stops when the test ends.
func StartOwnerApp(t testing.TB) *OwnerApp {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return StartOwnerAppOn(t, ln)
}

// StartOwnerAppOn starts an owner app on ln (a listener made inside a
// network namespace, say).
func StartOwnerAppOn(t testing.TB, ln net.Listener) *OwnerApp {
	t.Helper()
	a := &OwnerApp{URL: "http://" + ln.Addr().String(), ln: ln, release: map[string]chan struct{}{},
		effects: map[string]int{}, arrived: make(chan string, 1024)}
	a.srv = &http.Server{Handler: http.HandlerFunc(a.serve)}
	go a.srv.Serve(ln)
	t.Cleanup(func() {
		a.ReleaseAll()
		a.srv.Close()
	})
	return a
}

func (a *OwnerApp) gate(path string) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch, ok := a.release[path]
	if !ok {
		ch = make(chan struct{})
		if a.released {
			close(ch)
		}
		a.release[path] = ch
	}
	return ch
}

// Release lets the requests waiting on path go on (and later ones on it
// pass at once).
func (a *OwnerApp) Release(path string) {
	ch := a.gate(path)
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// ReleaseAll lets every waiting request go on, now and later.
func (a *OwnerApp) ReleaseAll() {
	a.mu.Lock()
	a.released = true
	paths := make([]string, 0, len(a.release))
	for p := range a.release {
		paths = append(paths, p)
	}
	a.mu.Unlock()
	for _, p := range paths {
		a.Release(p)
	}
}

// Effects reports how many effects were applied for path.
func (a *OwnerApp) Effects(path string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.effects[path]
}

// Requests reports how many requests arrived in all.
func (a *OwnerApp) Requests() int { return int(a.total.Load()) }

// RequestsFor reports how many requests arrived with X-Delta-Request-Id id.
func (a *OwnerApp) RequestsFor(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, r := range a.requests {
		if r.Header.Get("X-Delta-Request-Id") == id {
			n++
		}
	}
	return n
}

// Seen returns the requests that arrived so far (their headers, method and
// URL; bodies are consumed).
func (a *OwnerApp) Seen() []*http.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*http.Request(nil), a.requests...)
}

// Arrived yields the request id of each request as it arrives.
func (a *OwnerApp) Arrived() <-chan string { return a.arrived }

// WaitArrived waits until a request with X-Delta-Request-Id id has arrived.
func (a *OwnerApp) WaitArrived(t testing.TB, id string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		if a.RequestsFor(id) > 0 {
			return
		}
		select {
		case <-a.arrived:
		case <-timeout:
			t.Fatalf("request %s did not arrive at the owner app", id)
		}
	}
}

func (a *OwnerApp) apply(path string) {
	a.mu.Lock()
	a.effects[path]++
	a.mu.Unlock()
}

func (a *OwnerApp) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.total.Add(1)
	a.mu.Lock()
	a.requests = append(a.requests, r)
	a.mu.Unlock()
	select {
	case a.arrived <- r.Header.Get("X-Delta-Request-Id"):
	default:
	}
	mode, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	answer := func() {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("X-App", "owner")
		w.Header().Set("X-Delta-Outcome", "forged-by-app") // the owner's Delta must strip it
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	}
	switch mode {
	case "answer":
		a.apply(r.URL.Path)
		answer()
	case "apply-then-sleep":
		a.apply(r.URL.Path)
		<-a.gate(r.URL.Path)
		answer()
	case "sleep-then-apply", "hold":
		<-a.gate(r.URL.Path)
		a.apply(r.URL.Path)
		answer()
	case "reset-after-read":
		a.apply(r.URL.Path)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
	case "cache":
		w.Header().Set("Cache-Control", r.URL.Query().Get("cc"))
		fmt.Fprintf(w, "version %d of %s", a.total.Load(), r.URL.Path)
	default:
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.RequestURI())
	}
}

// ResetListener accepts connections and resets each (SO_LINGER 0) as soon
// as the request's bytes have arrived, without reading a byte of them. It
// returns its URL.
func ResetListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var mu sync.Mutex
	var cur net.Conn // the connection waited on, closed by the cleanup
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			cur = c
			mu.Unlock()
			tc := c.(*net.TCPConn)
			if rc, err := tc.SyscallConn(); err == nil {
				// Wait until bytes (or the end) are queued, consuming
				// nothing. A look each time, not a count of wake-ups: the
				// poller forgets a readiness that came before the wait,
				// so a request that arrived whole before it would never
				// wake it.
				rc.Read(func(fd uintptr) bool {
					_, err := rawsock.Peek(fd)
					return !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EWOULDBLOCK)
				})
			}
			tc.SetLinger(0)
			tc.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		// A client may hold a connection open without writing (a pool's
		// spare dial): closing it ends the wait for its bytes.
		mu.Lock()
		if cur != nil {
			cur.Close()
		}
		mu.Unlock()
		<-done
	})
	return "http://" + ln.Addr().String()
}

// DeadAddr returns a loopback host:port where nothing listens: a connect
// there is refused at once (ECONNREFUSED).
func DeadAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Client talks to one Delta's local API, on a new connection each time.
type Client struct {
	URL   string
	Token string
	// Dial, if not nil, makes the connections (a lab dials from inside a
	// network namespace).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Response is an answer of the local API.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// Err is the JSON error body, when Delta made the answer.
	Err struct {
		Error     string `json:"error"`
		Detail    string `json:"detail"`
		RequestID string `json:"request_id"`
		Peer      string `json:"peer"`
		Road      string `json:"road"`
	}
}

// Outcome is the answer's X-Delta-Outcome.
func (r *Response) Outcome() string { return r.Header.Get("X-Delta-Outcome") }

// Do sends one request. hdr is a list of name, value pairs.
func (c *Client) Do(method, path string, body []byte, hdr ...string) (*Response, error) {
	req, err := http.NewRequest(method, c.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body == nil {
		req.Body, req.ContentLength = nil, 0
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	tr := &http.Transport{DisableKeepAlives: true, DialContext: c.Dial}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := &Response{Status: resp.StatusCode, Header: resp.Header}
	if out.Body, err = io.ReadAll(resp.Body); err != nil {
		return nil, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		json.Unmarshal(out.Body, &out.Err)
	}
	return out, nil
}

// Must is Do that fails the test on a transport error.
func (c *Client) Must(t testing.TB, method, path string, body []byte, hdr ...string) *Response {
	t.Helper()
	r, err := c.Do(method, path, body, hdr...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// GetCall reads one call's record; wait > 0 long-polls until it settles.
func (c *Client) GetCall(t testing.TB, id string, wait int) *localapi.Call {
	t.Helper()
	path := "/v1/calls/" + id
	if wait > 0 {
		path += fmt.Sprintf("?wait=%d", wait)
	}
	r := c.Must(t, "GET", path, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	var call localapi.Call
	if err := json.Unmarshal(r.Body, &call); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, r.Body)
	}
	return &call
}

// WaitFor polls cond until it holds or d passes (then the test fails with
// what). It is for conditions in another process that send no event.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// LogBuffer collects a log that a process or a gateway writes while a test
// reads it.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Contains reports whether the log holds sub.
func (l *LogBuffer) Contains(sub string) bool { return strings.Contains(l.String(), sub) }

// NeedLoopback binds each loopback address in addrs (127.0.0.2, …) once
// and skips t when one cannot be bound on macOS, which configures only
// 127.0.0.1 on lo0 until aliases are added (the release workflow adds
// them with sudo ifconfig lo0 alias). Elsewhere a failure is the test's.
func NeedLoopback(t testing.TB, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		ln, err := net.Listen("tcp", net.JoinHostPort(a, "0"))
		if err == nil {
			ln.Close()
			continue
		}
		if runtime.GOOS == "darwin" {
			t.Skipf("%s is not on lo0 (macOS configures only 127.0.0.1; sudo ifconfig lo0 alias %s up adds it): %v", a, a, err)
		}
		t.Fatalf("loopback address %s cannot be bound: %v", a, err)
	}
}
