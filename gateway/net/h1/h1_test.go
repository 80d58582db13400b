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
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// dialCounter is a Transport whose dials are counted.
func newTransport(dials *atomic.Int32) *Transport {
	return &Transport{Dial: func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}}
}

func get(t *testing.T, tr *Transport, ctx context.Context, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp, string(b)
}

// TestPooling: answers of known length, chunked and empty leave their
// connection pooled; a body closed before its end does not; the headers
// go as net/http's Transport sends them (no User-Agent of Go's when the
// caller gave an empty one, no Accept-Encoding); trailers come.
func TestPooling(t *testing.T) {
	var seen atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(fmt.Sprintf("UA %q AE %q", r.Header.Values("User-Agent"), r.Header.Get("Accept-Encoding")))
		switch r.URL.Path {
		case "/len":
			w.Header().Set("Content-Length", "5")
			io.WriteString(w, "hello")
		case "/chunked":
			w.Header().Set("Trailer", "X-Sum")
			io.WriteString(w, "chun")
			w.(http.Flusher).Flush()
			io.WriteString(w, "ked")
			w.Header().Set("X-Sum", "7")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/big":
			w.Header().Set("Content-Length", fmt.Sprint(1<<20))
			w.Write(bytes.Repeat([]byte("b"), 1<<20))
		}
	}))
	defer srv.Close()
	var dials atomic.Int32
	tr := newTransport(&dials)
	defer tr.CloseIdleConnections()
	ctx := context.Background()
	for i := range 3 {
		if resp, b := get(t, tr, ctx, srv.URL+"/len", "User-Agent", ""); b != "hello" || resp.StatusCode != 200 {
			t.Fatalf("/len: %d %q", resp.StatusCode, b)
		}
		if resp, b := get(t, tr, ctx, srv.URL+"/chunked"); b != "chunked" || resp.Trailer.Get("X-Sum") != "7" {
			t.Fatalf("/chunked: %q trailer %v", b, resp.Trailer)
		}
		if resp, b := get(t, tr, ctx, srv.URL+"/empty"); b != "" || resp.StatusCode != 204 {
			t.Fatalf("/empty: %d %q", resp.StatusCode, b)
		}
		if dials.Load() != 1 {
			t.Fatalf("round %d: %d dials, want the one connection reused", i, dials.Load())
		}
	}
	if s := seen.Load().(string); s != `UA ["Go-http-client/1.1"] AE ""` {
		t.Errorf("the last request came with %s", s)
	}
	get(t, tr, ctx, srv.URL+"/len", "User-Agent", "")
	if s := seen.Load().(string); s != `UA [] AE ""` {
		t.Errorf("an empty User-Agent came as %s", s)
	}
	// Closed before its end: the connection is not pooled.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/big", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Read(make([]byte, 10))
	resp.Body.Close()
	get(t, tr, ctx, srv.URL+"/len")
	if dials.Load() != 2 {
		t.Errorf("%d dials after a body closed early, want 2 (it is not reused)", dials.Load())
	}
}

// TestClosedIdleConnection: a GET that went on a pooled connection the
// server had closed is sent again on a new one; a POST is not.
func TestClosedIdleConnection(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	srv.Start()
	defer srv.Close()
	var dials atomic.Int32
	tr := newTransport(&dials)
	defer tr.CloseIdleConnections()
	get(t, tr, context.Background(), srv.URL+"/")
	srv.CloseClientConnections() // the server drops its idle connection
	if _, b := get(t, tr, context.Background(), srv.URL+"/"); b != "ok" || dials.Load() != 2 {
		t.Errorf("after the server closed the idle connection: %q with %d dials, want ok on a second", b, dials.Load())
	}
	srv.CloseClientConnections()
	// A pooled connection the server closed is found so before anything
	// is written (its end is waiting to be read: pending): a POST goes on
	// a new one, written once. (One closed after that look is the case
	// above: a GET is sent again, a POST is not, errClosedIdle.)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader("x"))
	if resp, err := tr.RoundTrip(req); err != nil || dials.Load() != 3 {
		t.Errorf("a POST after the pooled connection was closed: %v with %d dials, want it on a new connection", err, dials.Load())
	} else {
		resp.Body.Close()
	}
	if !replayable(httptest.NewRequest("GET", "/", nil)) || replayable(httptest.NewRequest("POST", "/", strings.NewReader("x"))) {
		t.Error("replayable: a GET without a body is, a POST is not")
	}
	// A new connection closed before an answer: said so, and not sent again.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(c).ReadString('\n')
			c.Close()
		}
	}()
	before := dials.Load()
	req, _ = http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, ErrClosedEarly) || dials.Load() != before+1 {
		t.Errorf("a new connection closed before an answer: %v after %d dials, want ErrClosedEarly after one", err, dials.Load()-before)
	}
}

// TestInterim: 103 answers go to Got1xxResponse, and the final answer
// follows; GotConn names the connection.
func TestInterim(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "final")
	}))
	defer srv.Close()
	var dials atomic.Int32
	tr := newTransport(&dials)
	defer tr.CloseIdleConnections()
	var early []string
	var gotConn net.Conn
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			early = append(early, fmt.Sprintf("%d %s", code, h.Get("Link")))
			return nil
		},
		GotConn: func(info httptrace.GotConnInfo) { gotConn = info.Conn },
	})
	resp, b := get(t, tr, ctx, srv.URL+"/")
	if b != "final" || resp.StatusCode != 200 || len(early) != 1 || early[0] != "103 </a.css>; rel=preload" {
		t.Errorf("answer %d %q, interim %q", resp.StatusCode, b, early)
	}
	if gotConn == nil {
		t.Error("GotConn was not called")
	}
}

// TestCancel: a request's context ending unblocks it at once, whatever
// it waits for, and its connection is not reused.
func TestCancel(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "12345")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	var dials atomic.Int32
	tr := newTransport(&dials)
	defer tr.CloseIdleConnections()
	cause := errors.New("the test's cause")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/head", nil)
	if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "the test's cause") {
		t.Errorf("waiting for the head: %v, want it ended naming the cause", err)
	}
	ctx, cancel2 := context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/body", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	io.ReadFull(resp.Body, buf)
	time.AfterFunc(50*time.Millisecond, cancel2)
	if _, err := resp.Body.Read(buf); err == nil {
		t.Error("a body read after the context ended returned no error")
	}
	resp.Body.Close()
}

// TestIdleTimeout: a pooled connection is closed once idle for the
// Transport's IdleTimeout, counted from when it was last pooled, not
// from when it was first: one reused before that is reused again, and
// one taken while its timer runs is not closed under its request.
func TestIdleTimeout(t *testing.T) {
	closed := make(chan time.Time, 4)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(350 * time.Millisecond) // past the idle timeout, in use
		}
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- time.Now()
		}
	}
	srv.Start()
	defer srv.Close()
	var dials atomic.Int32
	tr := newTransport(&dials)
	const idle = 300 * time.Millisecond
	tr.IdleTimeout = idle
	defer tr.CloseIdleConnections()
	ctx := context.Background()
	get(t, tr, ctx, srv.URL+"/")
	get(t, tr, ctx, srv.URL+"/slow") // in use when its first idle timer fires
	var last time.Time
	for range 3 {
		time.Sleep(idle / 3) // idle, but not for long enough
		last = time.Now()    // before it is pooled again
		get(t, tr, ctx, srv.URL+"/")
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d dials for five reads a connection's idle timeout apart at most, want 1", n)
	}
	select {
	case at := <-closed:
		if after := at.Sub(last); after < idle {
			t.Errorf("closed %v after it was last pooled, before its idle timeout %v", after, idle)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a pooled connection idle past its timeout was not closed")
	}
}
