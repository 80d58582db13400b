package proto

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestBodyDeadline: a body announced and not sent fails the handler's read
// after d; a body read to its end leaves a handler that then works longer
// than d its request and its answer.
func TestBodyDeadline(t *testing.T) {
	const d = 100 * time.Millisecond
	results := make(chan string, 2)
	srv := httptest.NewServer(BodyDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		if err != nil {
			results <- "read: " + err.Error()
			return
		}
		select {
		case <-r.Context().Done():
			results <- "context ended while working"
		case <-time.After(4 * d): // the work outlasts the body's deadline
			results <- "worked"
		}
		w.WriteHeader(204)
	}), d))
	defer srv.Close()

	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"))
	if got := <-results; !strings.Contains(got, "timeout") {
		t.Errorf("a body that never came: %q, want the read to time out", got)
	}
	resp, err := http.Post(srv.URL, "text/plain", strings.NewReader("0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := <-results; got != "worked" || resp.StatusCode != 204 {
		t.Errorf("a handler working past the body's deadline: %q %d", got, resp.StatusCode)
	}
}
