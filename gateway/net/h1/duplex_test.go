package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
)

// duplexServer answers a duplex request as a conversation: 100 Continue,
// then for each 5-byte message an answer chunk "<msg>!", the answer's
// head written after the first message; it tells ended how the request's
// body ended (nil: whole, with its trailer).
func duplexServer(t *testing.T, ended chan<- error) string {
	return listen(t, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			ended <- err
			return
		}
		if req.Header.Get("Expect") != "100-continue" {
			ended <- errors.New("no Expect: 100-continue")
			return
		}
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		msg := make([]byte, 5)
		for i := 0; ; i++ {
			if _, err := io.ReadFull(req.Body, msg); err != nil {
				if err == io.EOF && req.Trailer.Get("X-Count") != "" {
					io.WriteString(c, "0\r\n\r\n")
					ended <- nil
				} else {
					ended <- err
				}
				return
			}
			if i == 0 {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
			}
			io.WriteString(c, "6\r\n"+string(msg)+"!\r\n")
		}
	})
}

// TestOnceDuplex: the answer's head comes back while the request's body
// is still being written, and the two go on as a conversation (each
// message sent only once the answer to the one before came); the body's
// end reaches the peer with its trailer, and Stop says it passed whole.
func TestOnceDuplex(t *testing.T) {
	ended := make(chan error, 1)
	addr := duplexServer(t, ended)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", "http://"+addr+"/chat", pr)
	req.ContentLength, req.TransferEncoding = -1, []string{"chunked"}
	req.Trailer = http.Header{"X-Count": nil}
	d := &Duplex{}
	written := make(chan struct{})
	go pw.Write([]byte("first"))
	a, err := Once(context.Background(), dialT(t, addr), req, Options{Continue: true, Duplex: d, Written: func() { close(written) }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Body.Close()
	got := make([]byte, 6)
	for _, say := range []string{"", "later"} {
		if say != "" {
			go pw.Write([]byte(say))
		}
		if _, err := io.ReadFull(a.Body, got); err != nil || string(got) != map[string]string{"": "first!", "later": "later!"}[say] {
			t.Fatalf("answer to %q: %q %v", say, got, err)
		}
	}
	req.Trailer.Set("X-Count", "10")
	pw.Close()
	if rest, err := io.ReadAll(a.Body); err != nil || len(rest) != 0 {
		t.Fatalf("the answer's end: %q %v", rest, err)
	}
	<-written
	if err := <-ended; err != nil {
		t.Fatalf("the peer saw the body end with %v, want its end", err)
	}
	if err := d.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// TestOnceDuplexCut: a duplex body that breaks (its app's upload cut)
// reaches the peer cut, never ended (no last chunk, no trailer), and
// Stop says why.
func TestOnceDuplexCut(t *testing.T) {
	ended := make(chan error, 1)
	addr := duplexServer(t, ended)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", "http://"+addr+"/chat", pr)
	req.ContentLength, req.TransferEncoding = -1, []string{"chunked"}
	req.Trailer = http.Header{"X-Count": nil}
	d := &Duplex{}
	go pw.Write([]byte("first"))
	a, err := Once(context.Background(), dialT(t, addr), req, Options{Continue: true, Duplex: d})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Body.Close()
	got := make([]byte, 6)
	if _, err := io.ReadFull(a.Body, got); err != nil {
		t.Fatal(err)
	}
	cut := errors.New("the app hung up")
	pw.CloseWithError(cut)
	if err := <-ended; err == nil {
		t.Fatal("the peer saw a cut body end as whole")
	}
	if err := d.Stop(); !errors.Is(err, cut) {
		t.Fatalf("Stop: %v, want %v", err, cut)
	}
}

// TestOnceDuplexRefused: a peer that answers before its 100 Continue gets
// none of the body, and that answer is the answer.
func TestOnceDuplexRefused(t *testing.T) {
	addr := listen(t, func(c net.Conn) {
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\nno")
	})
	read := make(chan struct{}, 1)
	req, _ := http.NewRequest("POST", "http://"+addr+"/chat", readerFunc(func(p []byte) (int, error) { read <- struct{}{}; return 0, io.EOF }))
	req.ContentLength, req.TransferEncoding = -1, []string{"chunked"}
	d := &Duplex{}
	a, err := Once(context.Background(), dialT(t, addr), req, Options{Continue: true, Duplex: d})
	if err != nil || a.StatusCode != http.StatusConflict {
		t.Fatalf("%v %v", a, err)
	}
	a.Body.Close()
	if err := d.Stop(); !errors.Is(err, errRefusedEarly) {
		t.Fatalf("Stop: %v", err)
	}
	select {
	case <-read:
		t.Fatal("the body was read for a peer that refused it")
	default:
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
