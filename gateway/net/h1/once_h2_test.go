package h1

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// h2cApp serves h in HTTP/2 with prior knowledge, as a gRPC server does.
func h2cApp(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := &http.Server{Handler: h, Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestOnceH2: a request written once as HTTP/2's one stream on its own
// connection; its answer streams with its trailers after the body; a head
// that takes longer than Wait is a timeout of a request that was sent.
func TestOnceH2(t *testing.T) {
	var calls atomic.Int32
	addr := h2cApp(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Trailer", "Grpc-Status")
		w.Write(append([]byte(r.Proto+" "+r.Header.Get("Te")+" "), b...))
		w.Header().Set("Grpc-Status", "0")
	})
	once := func(path string, wait time.Duration) (*Answer, error) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", "http://"+addr+path, strings.NewReader("hello"))
		req.Header.Set("Te", "trailers")
		return OnceH2(context.Background(), conn, req, Options{Wait: wait})
	}
	a, err := once("/x", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(a.Body)
	a.Body.Close()
	if err != nil || string(b) != "HTTP/2.0 trailers hello" || a.Trailer.Get("Grpc-Status") != "0" {
		t.Fatalf("%q %v (trailer %v)", b, err, a.Trailer)
	}
	_, err = once("/slow", 100*time.Millisecond)
	var oe *Error
	if !errors.As(err, &oe) || !oe.Sent || !oe.Timeout {
		t.Fatalf("a late head: %#v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the app was asked %d times for 2 requests", n)
	}
}
