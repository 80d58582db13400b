package h1server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// framingHandler answers by the request's path: each a way a handler
// frames an answer, for net/http and this server to frame alike.
func framingHandler(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	switch strings.TrimPrefix(r.URL.Path, "/") {
	case "small":
		io.WriteString(w, "<html><body>hello</body></html>")
	case "big":
		w.Write(bytes.Repeat([]byte("abcdefgh"), 1000))
	case "exact":
		h.Set("Content-Length", "5")
		io.WriteString(w, "hello")
	case "short":
		h.Set("Content-Length", "10")
		io.WriteString(w, "hello")
	case "long":
		h.Set("Content-Length", "3")
		if _, err := io.WriteString(w, "hello"); !errors.Is(err, http.ErrContentLength) {
			panic(fmt.Sprintf("writing past Content-Length: %v", err))
		}
	case "204":
		h.Set("Content-Type", "text/plain")
		w.WriteHeader(204)
		if _, err := io.WriteString(w, "x"); !errors.Is(err, http.ErrBodyNotAllowed) {
			panic(fmt.Sprintf("writing a 204's body: %v", err))
		}
	case "304":
		h.Set("Content-Type", "text/plain")
		h.Set("Content-Length", "9")
		h.Set("Etag", `"x"`)
		w.WriteHeader(304)
	case "trailers":
		h.Set("Trailer", "X-Sum, X-Other")
		w.WriteHeader(200)
		io.WriteString(w, "body")
		h.Set("X-Sum", "abc")
		h.Set(http.TrailerPrefix+"X-Late", "late")
	case "trailer-prefix":
		io.WriteString(w, "body")
		h.Set(http.TrailerPrefix+"X-Late", "late")
	case "early-hints":
		h.Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(103)
		h.Del("Link")
		h.Set("Content-Type", "text/plain")
		io.WriteString(w, "after hints")
	case "flush":
		io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		io.WriteString(w, "second")
	case "flush-empty":
		w.(http.Flusher).Flush()
	case "controller":
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
			panic(err)
		}
		io.WriteString(w, "x")
		if err := rc.Flush(); err != nil {
			panic(err)
		}
	case "close":
		h.Set("Connection", "close")
		io.WriteString(w, "bye")
	case "identity":
		h.Set("Transfer-Encoding", "identity")
		io.WriteString(w, "stream until close")
	case "chunked-set":
		h.Set("Transfer-Encoding", "chunked")
		io.WriteString(w, "x")
	case "te-and-cl":
		h.Set("Transfer-Encoding", "chunked")
		h.Set("Content-Length", "1")
		io.WriteString(w, "x")
	case "abort":
		io.WriteString(w, strings.Repeat("y", 5000))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	case "gzip":
		h.Set("Content-Encoding", "gzip")
		io.WriteString(w, "\x1f\x8b not really")
	case "no-sniff":
		h["Content-Type"] = nil
		io.WriteString(w, "<html>")
	case "999":
		w.WriteHeader(999)
	case "empty":
	case "snapshot":
		h.Set("X-Before", "1")
		w.WriteHeader(202)
		h.Set("X-After", "2")
		io.WriteString(w, "snap")
	case "bad-cl":
		h.Set("Content-Length", "abc")
		io.WriteString(w, "x")
	case "date":
		h.Set("Date", "Mon, 01 Jan 2001 00:00:00 GMT")
		io.WriteString(w, "dated")
	case "twice":
		w.WriteHeader(201)
		w.WriteHeader(202)
	case "hijack":
		h.Set("X-Before", "1")
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(rw, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", rw.Reader.Buffered(), "")
		rw.Flush()
		c.Close()
	case "echo":
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s host=%s body=%q proto=%s close=%v", r.Method, r.RequestURI, r.Header.Get("X-A"), r.Host, b, r.Proto, r.Close)
	default:
		http.NotFound(w, r)
	}
}

var dateRE = regexp.MustCompile(`(?m)^Date: .*\r\n`)

// exchange writes raw to a new connection to addr, reads what comes back
// until the connection closes or quiet (no more bytes within it), and
// returns it with its Date headers blanked.
func exchange(t *testing.T, addr, raw string, quiet time.Duration) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Error(err)
		return ""
	}
	var got bytes.Buffer
	buf := make([]byte, 64<<10)
	for {
		c.SetReadDeadline(time.Now().Add(quiet))
		n, err := c.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return dateRE.ReplaceAllString(got.String(), "Date: X\r\n") + "[open]"
			}
			return dateRE.ReplaceAllString(got.String(), "Date: X\r\n") + "[closed]"
		}
	}
}

// servePair serves h with net/http and with this server, each on its own
// loopback listener, and returns their addresses.
func servePair(t testing.TB, h http.Handler) (std, lean string, leanSrv *Server) {
	t.Helper()
	quietLog := log.New(io.Discard, "", 0)
	stdSrv := &http.Server{Handler: h, ErrorLog: quietLog, ReadHeaderTimeout: 10 * time.Second}
	leanSrv = New(&http.Server{Handler: h, ErrorLog: quietLog, ReadHeaderTimeout: 10 * time.Second})
	l1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	go func() { stdSrv.Serve(l1); done <- struct{}{} }()
	go func() { leanSrv.Serve(l2); done <- struct{}{} }()
	t.Cleanup(func() {
		stdSrv.Close()
		leanSrv.Close()
		<-done
		<-done
	})
	return l1.Addr().String(), l2.Addr().String(), leanSrv
}

// TestFramingIsNetHTTPs sends the same bytes to net/http and to this
// server, serving the same handler, and wants the same bytes back (Date
// aside), and the connection left open or closed alike: the answers of
// requests served here, and those of requests handed to net/http.
func TestFramingIsNetHTTPs(t *testing.T) {
	std, lean, _ := servePair(t, http.HandlerFunc(framingHandler))
	get := func(path string) string { return "GET /" + path + " HTTP/1.1\r\nHost: x\r\n\r\n" }
	var cases []string
	for _, p := range []string{"small", "big", "exact", "short", "long", "204", "304", "trailers", "trailer-prefix", "early-hints",
		"flush", "flush-empty", "controller", "close", "identity", "chunked-set", "te-and-cl", "abort", "gzip", "no-sniff", "999", "empty",
		"snapshot", "bad-cl", "date", "twice", "hijack", "echo", "nowhere"} {
		cases = append(cases, get(p), strings.Replace(get(p), "GET", "HEAD", 1))
	}
	cases = append(cases,
		// Served here: kept alive, pipelined, closed by the client, bare
		// LFs, a Content-Length of 0.
		get("small")+get("exact")+get("echo"),
		get("hijack")+get("small"),
		"GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET /echo HTTP/1.1\nHost: x\nX-A: lf\n\n",
		"GET /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
		"GET /echo?q=1 HTTP/1.1\r\nhost: x:80\r\nX-A: a\r\n\r\n",
		// Handed to net/http, at once or after one served here.
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
		get("small")+"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"+get("exact"),
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc",
		"GET /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: x\r\nExpect: something\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		"GET /echo HTTP/1.0\r\n\r\n",
		"GET /echo HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"+get("small"),
		"GET /echo HTTP/1.1\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET http://x/echo HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET * HTTP/1.1\r\nHost: x\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT x:1 HTTP/1.1\r\nHost: x:1\r\n\r\n",
		"GET /echo HTTP/2.0\r\nHost: x\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
		"\r\nGET /echo HTTP/1.1\r\nHost: x\r\n\r\n",
		"garbage\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: x\r\nX-Long: "+strings.Repeat("l", 5000)+"\r\n\r\n",
	)
	// An answer is whole once nothing more comes for a while: there is
	// no event for a connection left open. The cases run at once.
	got := make([][2]string, len(cases))
	var wg sync.WaitGroup
	for i, raw := range cases {
		wg.Go(func() {
			got[i][0] = exchange(t, std, raw, 2*time.Second)
			got[i][1] = exchange(t, lean, raw, 2*time.Second)
		})
	}
	wg.Wait()
	for i, raw := range cases {
		if got[i][0] != got[i][1] {
			t.Errorf("%q:\nnet/http:\n%q\nhere:\n%q", trim(raw), got[i][0], got[i][1])
		}
	}
}

func trim(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// leftGoroutines waits for this package's goroutines other than the
// test's to end, and fails if some do not.
func leftGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var left []string
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if (strings.Contains(g, "gateway/net/h1server.") || strings.Contains(g, "net/http.(*conn).serve")) && !strings.Contains(g, "_test.go") {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left:\n%s", len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond) // polling for goroutines to end; there is no event to wait on
	}
}

// readAnswer reads one answer from br.
func readAnswer(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

var _ = context.Background
