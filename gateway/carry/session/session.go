// Package session relays a session (an HTTP Upgrade, such as a WebSocket)
// once both ends have switched protocols (DESIGN §2a): bytes both ways,
// until either end closes, and then both are closed. A session is never
// resumed or sent again; a lost road closes it.
package session

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/delta-roads/delta/api/roadfacts"
	"github.com/delta-roads/delta/gateway/carry/relay"
	"github.com/delta-roads/delta/gateway/carry/transfer"
)

// Relay carries bytes between near (towards the app on this computer) and
// far (towards the peer) until either side ends, then closes both. nearR
// and farR read each side, holding what was read past the heads already.
// x, if not nil, counts the bytes (sent: near to far). It returns the
// first error that ended it (nil for a side that closed).
func Relay(near net.Conn, nearR io.Reader, far net.Conn, farR io.Reader, x *transfer.Transfer) error {
	KeepAlive(near)
	KeepAlive(far)
	var once sync.Once
	var first error
	end := func(err error) {
		once.Do(func() {
			first = err
			near.Close()
			far.Close()
		})
	}
	var wg sync.WaitGroup
	pipe := func(dst net.Conn, src io.Reader, up bool) {
		defer wg.Done()
		if x != nil {
			src = x.Reader(src, up)
		}
		end(pipeOnce(dst, src))
	}
	wg.Add(2)
	go pipe(far, nearR, true)
	go pipe(near, farR, false)
	wg.Wait()
	return first
}

// KeepAliveConfig is a session's TCP keepalive, both ends': every
// connection between two Deltas on a lan or thunderbolt road has it
// (roadfacts.KeepAlive), so a road that goes silent with its interface up
// (a peer that lost power, a cable pulled at the far end) ends the
// session within Idle + Interval × Count, 11 s, instead of never (issue
// 34 U1, issue 62). A session with a live road and idle apps stays open
// as long as they like; WebSockets have their own pings.
var KeepAliveConfig = roadfacts.KeepAlive

// KeepAlive sets KeepAliveConfig on c's TCP connection, looking beneath
// wrappers (TLS, a road's connection) for it, and reports whether it
// could: a tailnet connection (userspace TCP) has no such setting.
func KeepAlive(c net.Conn) bool {
	for range 8 {
		switch x := c.(type) {
		case interface {
			SetKeepAliveConfig(net.KeepAliveConfig) error
		}:
			return x.SetKeepAliveConfig(KeepAliveConfig) == nil
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return false
		}
	}
	return false
}

// idleBuf is what a session's direction holds while it waits: an idle
// session (most of a WebSocket's life) holds no 32 KiB copy buffer.
const idleBuf = 512

// pipeOnce copies src to dst until src ends (nil) or either fails: it
// waits with a small buffer of its own, and borrows a pooled copy buffer
// only while reads keep filling it (a burst), giving it back when they
// stop.
func pipeOnce(dst io.Writer, src io.Reader) error {
	small := make([]byte, idleBuf)
	for {
		n, err := src.Read(small)
		if n > 0 {
			if _, werr := dst.Write(small[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			return ignoreEOF(err)
		}
		if n < len(small) {
			continue
		}
		if err := burst(dst, src); err != nil {
			return ignoreEOF(err)
		}
	}
}

// burst copies with a pooled buffer while reads fill at least half of it.
func burst(dst io.Writer, src io.Reader) error {
	buf := relay.CopyBuffers.Get()
	defer relay.CopyBuffers.Put(buf)
	for {
		n, err := src.Read(*buf)
		if n > 0 {
			if _, werr := dst.Write((*buf)[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
		if n < len(*buf)/2 {
			return nil
		}
	}
}

// ignoreEOF is nil for a side that closed (io.EOF): Relay reports it so.
func ignoreEOF(err error) error {
	if err == io.EOF {
		return nil
	}
	return err
}

// ErrNotTaken wraps Take's failure to take the connection from its
// server: nothing was written, and w can still answer.
var ErrNotTaken = errors.New("the connection could not be taken from its server")

// Take switches w's connection to the session: taken from its server
// (hijacked), without the door's deadlines (they were for the request),
// and answered with the 101 head with header h. It returns the connection
// and what reads it. An error wrapping ErrNotTaken leaves w to answer;
// any other has closed the connection.
func Take(w http.ResponseWriter, h http.Header) (net.Conn, *bufio.Reader, error) {
	near, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("%w (%v)", ErrNotTaken, err)
	}
	near.SetDeadline(time.Time{})
	if err := WriteHead(rw.Writer, h); err != nil {
		near.Close()
		return nil, nil, err
	}
	return near, rw.Reader, nil
}

// WriteHead writes a 101 Switching Protocols head with header h to w (a
// connection taken from its server), flushed.
func WriteHead(w *bufio.Writer, h http.Header) error {
	if _, err := fmt.Fprintf(w, "HTTP/1.1 101 Switching Protocols\r\n"); err != nil {
		return err
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			if _, err := fmt.Fprintf(w, "%s: %s\r\n", k, v); err != nil {
				return err
			}
		}
	}
	if _, err := io.WriteString(w, "\r\n"); err != nil {
		return err
	}
	return w.Flush()
}

// Request readies h (an app's request's header, stripped for the next
// hop already) to open a session: the Upgrade it asked for, and
// Connection: Upgrade.
func Request(h http.Header, upgrade string) {
	h.Set("Upgrade", upgrade)
	h.Set("Connection", "Upgrade")
}
