package h1server

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzServedAsNetHTTP sends any bytes, as a client would, to net/http
// and to this server, both serving framingHandler, and ends its side of
// the connection: both must answer with the same bytes (Date aside) and
// close. Whatever this server serves must be served as net/http serves
// it, and whatever it hands over must reach net/http whole.
func FuzzServedAsNetHTTP(f *testing.F) {
	for _, s := range []string{
		"GET /small HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /exact HTTP/1.1\r\nHost: x\r\n\r\n",
		"HEAD /trailers HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET /echo HTTP/1.1\nHost: x\nX-A: lf\n\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /small HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
		"GET /echo HTTP/1.0\r\nHost: x\r\n\r\n",
		"GET /early-hints HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	// No hijacking here: what a hijacker sees buffered depends on timing.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "hijack") {
			http.NotFound(w, r)
			return
		}
		framingHandler(w, r)
	})
	std, lean, _ := servePair(f, h)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 4000 {
			// More than a server reads at once may be left unread when it
			// closes, and the reset that follows may cut its answer.
			t.Skip()
		}
		a, b := sendAll(t, std, raw), sendAll(t, lean, raw)
		if a != b {
			t.Errorf("%q:\nnet/http:\n%q\nhere:\n%q", raw, a, b)
		}
	})
}

// sendAll writes raw to a new connection to addr, ends the writing side,
// and returns all that comes back until the server closes, Date blanked.
func sendAll(t *testing.T, addr string, raw []byte) string {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second)) // a bound for a failure, not a wait
	go func() {
		c.Write(raw)
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("no end in 20 s: %v; got %q", err, got)
	}
	return dateRE.ReplaceAllString(string(got), "Date: X\r\n")
}
