package h1

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// BenchmarkFileBody is the owner's second pass of a big call: a spooled
// body, a file on this machine's disk, written to an app over loopback.
// "copied" is Delta's way (Once, the file read into a buffer and written);
// "sendfile" hands the same file to the kernel (sendfile(2) through
// net.TCPConn.ReadFrom), as issue 40 proposed for the spool. It is kept as
// the measurement behind not doing so: on this machine the kernel's way
// is the slower one for an app that reads 8 KiB at a time and the faster
// for one that reads 64 KiB, and Delta cannot know how an app reads
// (docs/benchmarks.md).
func BenchmarkFileBody(b *testing.B) {
	const size = 64 << 20
	name := spoolFile(b, size)
	open := func(b *testing.B) *os.File {
		f, err := os.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	// The app reads the body in pieces of 8 KiB (as io.Copy does from a
	// net/http server's body: io.Discard's own buffer) or of 64 KiB.
	for _, piece := range []int{8 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("app-reads-%dKiB", piece>>10), func(b *testing.B) {
			addr := bodyApp(b, piece)
			b.Run("copied", func(b *testing.B) {
				b.SetBytes(size)
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/c", open(b)) // closed by the write
					req.ContentLength = size
					c, err := net.Dial("tcp", addr)
					if err != nil {
						b.Fatal(err)
					}
					a, err := Once(context.Background(), c, req, Options{Idle: 30 * time.Second})
					if err != nil {
						b.Fatal(err)
					}
					a.Body.Close()
					if a.StatusCode != http.StatusNoContent {
						b.Fatalf("the app answered %d, not 204: the body did not arrive whole", a.StatusCode)
					}
				}
			})
			b.Run("sendfile", func(b *testing.B) {
				b.SetBytes(size)
				for b.Loop() {
					f := open(b)
					c, err := net.Dial("tcp", addr)
					if err != nil {
						b.Fatal(err)
					}
					fmt.Fprintf(c, "POST /c HTTP/1.1\r\nHost: app\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", size)
					if n, err := c.(*net.TCPConn).ReadFrom(f); err != nil || n != size {
						b.Fatalf("sendfile: %d of %d bytes (%v)", n, size, err)
					}
					f.Close()
					resp, err := http.ReadResponse(bufio.NewReader(c), nil)
					if err != nil {
						b.Fatal(err)
					}
					if resp.StatusCode != http.StatusNoContent {
						b.Fatalf("the app answered %d, not 204: the body did not arrive whole", resp.StatusCode)
					}
					c.Close()
				}
			})
		})
	}
}

// bodyApp is an app on loopback that reads each request's body whole, in
// reads of piece bytes, and answers 204; it stops with b.
func bodyApp(b *testing.B, piece int) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	b.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, piece)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err == nil {
				_, err = io.CopyBuffer(struct{ io.Writer }{io.Discard}, req.Body, buf)
			}
			if err == nil {
				io.WriteString(c, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// spoolFile writes a file of size bytes under b's temporary folder.
func spoolFile(b *testing.B, size int) string {
	f, err := os.CreateTemp(b.TempDir(), "spool-*.body")
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	for n := 0; n < size; n += len(buf) {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return f.Name()
}
