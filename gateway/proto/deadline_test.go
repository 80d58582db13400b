package proto

import (
	"io"
	"net"
	"net/http"
	"strings"
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
	srv := DoorServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	}), nil, DoorLimits{Header: limit, Request: limit, Idle: limit})
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
