package h1

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// second is the answer a connection gives to every request but its first.
const second = "HTTP/1.1 200 OK\r\nX-Second: yes\r\nContent-Length: 6\r\n\r\nsecond"

// FuzzPooledAnswers feeds arbitrary bytes to the pooled client as a
// connection's first answer (an answer written past its length, a body to
// a 204, a stray interim answer, trailing bytes of any kind) and then asks
// again: the second answer, on the same connection if the client pooled it
// or on a new one, must be the server's second answer, never bytes that
// came before it was asked for (issue 34 A3). An error is allowed.
func FuzzPooledAnswers(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nPOISON",
		"HTTP/1.1 204 No Content\r\n\r\nstray",
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, first []byte) {
		// Real loopback TCP: what the server wrote past its answer waits
		// in the kernel, as it does between an owner and its app.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var conns []net.Conn
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
				wg.Add(1)
				go func() {
					defer wg.Done()
					serve(c, i == 0, first)
				}()
			}
		}()
		tr := &Transport{Dial: func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}}
		defer func() {
			tr.CloseIdleConnections()
			ln.Close()
			mu.Lock()
			for _, c := range conns {
				c.Close()
			}
			mu.Unlock()
			wg.Wait()
		}()
		url := "http://" + ln.Addr().String() + "/"
		ask := func() (*http.Response, string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond) // an error is allowed: a slow machine only makes it one
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				return nil, "", err
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, string(b), err
		}
		ask() // the first: whatever it is
		resp, body, err := ask()
		if err == nil && (resp.Header.Get("X-Second") != "yes" || body != "second") {
			t.Fatalf("the second request was answered %d %v %q: not the server's second answer", resp.StatusCode, resp.Header, body)
		}
	})
}

// serve answers each request on c: the first with raw (if first), every
// other with second.
func serve(c net.Conn, first bool, raw []byte) {
	br := bufio.NewReader(c)
	for i := 0; ; i++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		answer := []byte(second)
		if i == 0 && first {
			answer = raw
		}
		if _, err := c.Write(answer); err != nil {
			return
		}
	}
}
