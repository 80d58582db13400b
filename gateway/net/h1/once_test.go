package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			serve(c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func dialer(addr string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

func post(addr string) *http.Request {
	req, _ := http.NewRequest("POST", "http://"+addr+"/x", strings.NewReader("hello"))
	return req
}

func TestAnswered(t *testing.T) {
	addr := listen(t, func(c net.Conn) {
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		b, _ := io.ReadAll(req.Body)
		io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Length: "+string(rune('0'+len(b)))+"\r\n\r\n"+string(b))
	})
	res, err := DialOnce(context.Background(), dialer(addr), post(addr), 1<<20)
	if err != nil || res.StatusCode != 201 || string(res.Bytes) != "hello" {
		t.Fatalf("%v %v", res, err)
	}
}

func TestRefusedIsNotSent(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err := DialOnce(context.Background(), dialer(addr), post(addr), 1<<20)
	var oe *Error
	if !errors.As(err, &oe) || oe.Sent || oe.Op != "connect" || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("refused: %#v", err)
	}
}

// A reset after the request was written is "sent": nobody knows whether
// the other side acted.
func TestResetAfterReadIsSent(t *testing.T) {
	addr := listen(t, func(c net.Conn) {
		http.ReadRequest(bufio.NewReader(c))
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	})
	_, err := DialOnce(context.Background(), dialer(addr), post(addr), 1<<20)
	var oe *Error
	if !errors.As(err, &oe) || !oe.Sent || oe.Op != "read the answer" {
		t.Fatalf("reset after read: %#v", err)
	}
}

// A write that fails after some bytes left still counts as sent: the
// record is of the first write, not the error's type.
func TestFailedWriteAfterFirstByteIsSent(t *testing.T) {
	addr := listen(t, func(c net.Conn) {
		c.Read(make([]byte, 1))
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	})
	req, _ := http.NewRequest("POST", "http://"+addr+"/x", strings.NewReader(strings.Repeat("x", 32<<20)))
	_, err := DialOnce(context.Background(), dialer(addr), req, 1<<20)
	var oe *Error
	if !errors.As(err, &oe) || !oe.Sent {
		t.Fatalf("broken write: %#v", err)
	}
}

func TestTimeoutAfterSendIsSent(t *testing.T) {
	block := make(chan struct{})
	addr := listen(t, func(c net.Conn) {
		go func() { <-block; c.Close() }()
	})
	defer close(block)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := DialOnce(ctx, dialer(addr), post(addr), 1<<20)
	var oe *Error
	if !errors.As(err, &oe) || !oe.Sent || !oe.Timeout {
		t.Fatalf("timeout: %#v", err)
	}
}

// A refusal the peer sends before reading the whole body is taken as its
// answer.
func TestEarlyAnswerIsRead(t *testing.T) {
	addr := listen(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		http.ReadRequest(br)
		io.WriteString(c, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		c.(*net.TCPConn).CloseWrite()
		time.AfterFunc(50*time.Millisecond, func() { c.(*net.TCPConn).SetLinger(0); c.Close() })
	})
	req, _ := http.NewRequest("POST", "http://"+addr+"/x", strings.NewReader(strings.Repeat("x", 16<<20)))
	res, err := DialOnce(context.Background(), dialer(addr), req, 1<<20)
	if err != nil || res.StatusCode != 401 {
		t.Fatalf("early answer: %v %v", res, err)
	}
}

func TestAnswerTooLarge(t *testing.T) {
	addr := listen(t, func(c net.Conn) {
		defer c.Close()
		http.ReadRequest(bufio.NewReader(c))
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n01234567890123456789")
	})
	_, err := DialOnce(context.Background(), dialer(addr), post(addr), 10)
	var oe *Error
	if !errors.As(err, &oe) || !oe.Sent || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("too large: %#v", err)
	}
}
