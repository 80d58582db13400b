// Package floor is the Go floor's process for tools/bench: the least an
// HTTP/1.1 forwarder written in Go can do, as two hops in one process,
// plain and with TLS 1.3 between the hops, like nginx's and Caddy's. Each
// connection gets one goroutine and one kept connection to the next hop;
// a request's head is passed on byte for byte, its body and its answer's
// body by Content-Length, through buffers kept for the connection: no
// header is parsed but Content-Length, and nothing is allocated a
// request. It is what any Go forwarder that keeps connections alive costs
// on this machine's kernel and Go runtime, with nothing of what Delta
// does (tokens, routes, journals, the cache, 1xx, chunked bodies,
// upgrades): for small reads and calls, a ceiling over Delta's figures;
// set beside nginx's, it shows what of a goal is in reach of Go here. A
// call's "Connection: close" goes on to each hop, so every hop of a call
// is a new connection, as Delta's are (its contract), while nginx's and
// Caddy's keep theirs to the next hop.
package floor

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// Main is the floor's process: hop 1 → hop 2 → app, plain and with
// TLS between; it prints the two first hops' addresses and serves until
// it is killed.
func Main(args []string) error {
	if len(args) != 3 {
		return errors.New("usage: bench floor APP CERT KEY")
	}
	app, certFile, keyFile := args[0], args[1], args[2]
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	listen := func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
	toApp := func() (net.Conn, error) { return net.Dial("tcp", app) }

	hop2, err := listen()
	if err != nil {
		return err
	}
	go serveFloor(hop2, toApp)
	hop1, err := listen()
	if err != nil {
		return err
	}
	go serveFloor(hop1, func() (net.Conn, error) { return net.Dial("tcp", hop2.Addr().String()) })

	tlsHop2, err := listen()
	if err != nil {
		return err
	}
	go serveFloor(tls.NewListener(tlsHop2, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}), toApp)
	tlsHop1, err := listen()
	if err != nil {
		return err
	}
	client := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13} // the bench's own self-signed hop
	go serveFloor(tlsHop1, func() (net.Conn, error) { return tls.Dial("tcp", tlsHop2.Addr().String(), client) })

	fmt.Println(hop1.Addr(), tlsHop1.Addr())
	select {}
}

func serveFloor(l net.Listener, dial func() (net.Conn, error)) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := dial()
			if err != nil {
				fmt.Fprintln(os.Stderr, "floor: dial:", err)
				return
			}
			defer up.Close()
			// Every connection ends with an error: a peer that goes
			// away (the end of a load, a closed connection) is how it
			// ends; anything else is said.
			err = floorConn(c, up)
			if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, net.ErrClosed) {
				fmt.Fprintln(os.Stderr, "floor:", err)
			}
		}()
	}
}

// floorConn forwards each request on c to up and its answer back, in
// turn, until either fails; it returns why (io.EOF when c closes).
func floorConn(c, up net.Conn) error {
	cr, cw := bufio.NewReaderSize(c, 64<<10), bufio.NewWriterSize(c, 64<<10)
	ur, uw := bufio.NewReaderSize(up, 64<<10), bufio.NewWriterSize(up, 64<<10)
	head := make([]byte, 0, 8<<10)
	buf := make([]byte, 64<<10)
	for {
		var n int64
		var err error
		if head, n, err = readHead(cr, head[:0]); err != nil {
			return err
		}
		if err := pass(uw, head, cr, n, buf); err != nil {
			return err
		}
		if head, n, err = readHead(ur, head[:0]); err != nil {
			return err
		}
		if err := pass(cw, head, ur, n, buf); err != nil {
			return err
		}
	}
}

// pass writes head and n bytes of body from r to w, and flushes.
func pass(w *bufio.Writer, head []byte, r *bufio.Reader, n int64, buf []byte) error {
	if _, err := w.Write(head); err != nil {
		return err
	}
	if n > 0 {
		if _, err := io.CopyBuffer(struct{ io.Writer }{w}, io.LimitReader(r, n), buf); err != nil {
			return err
		}
	}
	return w.Flush()
}

// digits is the decimal number d, without allocating.
func digits(d []byte) (n int64, ok bool) {
	if len(d) == 0 || len(d) > 18 {
		return 0, false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// readHead appends a message's head (through its empty line) to head and
// returns its Content-Length (0 if none). A chunked body and an Expect
// header are refused, by name: the bench's app and clients never send
// them (curl does, for a body over 1 MiB).
func readHead(r *bufio.Reader, head []byte) ([]byte, int64, error) {
	var n int64
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return head, 0, err
		}
		head = append(head, line...)
		if len(line) <= 2 {
			return head, n, nil
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok {
			switch {
			case bytes.EqualFold(k, []byte("Content-Length")):
				if n, ok = digits(bytes.TrimSpace(v)); !ok {
					return head, 0, fmt.Errorf("Content-Length %q is not a length", bytes.TrimSpace(v))
				}
			case bytes.EqualFold(k, []byte("Transfer-Encoding")):
				return head, 0, errors.New("a chunked body: the floor passes bodies by Content-Length only")
			case bytes.EqualFold(k, []byte("Expect")):
				return head, 0, errors.New("an Expect header: the floor passes no interim answer (100 Continue)")
			}
		}
	}
}
