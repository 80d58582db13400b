// Package h1 is Delta's one HTTP/1.1 client engine, under two policies.
//
//   - Transport, pooled and replayable: the reads of the hops whose two
//     ends Delta knows (one Delta to another, the owner Delta to its app).
//     An http.RoundTripper on pooled connections like net/http's
//     Transport, but smaller: a request is written and its answer read in
//     the caller's goroutine (no reader and writer goroutine a connection,
//     no channels between them), and a connection is pooled under the
//     road it went on, not the address it was asked for.
//   - Once, once-only: calls and sessions. One request on one connection,
//     written at most once, with the first byte written recorded as a fact.
//
// Both write a request as net/http does (Request.Write) and read its
// answer's head with one reader (http.ReadResponse): the head is bounded
// (proto.MaxHeadBytes, interim answers included) and so are interim
// answers (1,000); a 1xx other than 101 is never the answer; a context's
// end stops the exchange at once. docs/architecture.md has the table of
// what each does on each kind of answer (conformance_test.go holds it).
package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"syscall"
	"time"

	"github.com/delta-roads/delta/gateway/net/rawsock"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// Transport is a pool of HTTP/1.1 connections by where each one goes: a
// request URL's Host takes a connection pooled under that key. A
// connection whose Dial returned a net.Conn with a PoolKey is pooled under
// that key instead of the host it was dialled for: a dial may reach
// another address than the one asked (a raced dial won by another road),
// and the next request for the address asked must not take it (issue 35:
// a read pinned to lan went over the tailnet). It is safe for concurrent
// use.
type Transport struct {
	// Dial connects for a request, with its context. Required.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// MaxIdlePerHost bounds the idle connections kept for a host; 0
	// means 64.
	MaxIdlePerHost int
	// IdleTimeout closes a connection idle for that long; 0 means
	// h1.IdleTimeout (below the door's keep-alive).
	IdleTimeout time.Duration
	// QuickAck acknowledges each answer's first segment at once
	// (quickAck): for a hop to an app, which may answer in two sends with
	// Nagle's algorithm on. Delta's own doors never do (Go's sockets have
	// it off), so the hop between Deltas leaves it off.
	QuickAck bool

	mu   sync.Mutex
	idle map[string][]*conn // most recently used last
}

// PoolKeyer is a connection that says where it goes (its road's address):
// the key it is pooled under.
type PoolKeyer interface{ PoolKey() string }

// Busier is a connection told when an exchange takes it (true) and when
// the pool has it back (false): a road's watch of its quiet exchanges
// (peerclient.RoadConn).
type Busier interface{ SetBusy(bool) }

func setBusy(c net.Conn, busy bool) {
	if b, ok := c.(Busier); ok {
		b.SetBusy(busy)
	}
}

// conn is one connection and its buffers.
type conn struct {
	t    *Transport
	host string // the key it is pooled under: its PoolKey, else the host dialled
	nc   net.Conn
	br   *bufio.Reader
	hl   *proto.HeadLimit // under br: bounds a head
	bw   *bufio.Writer    // over wc
	wc   counter          // what of the request went to nc
	// idleTimer closes it once idle for IdleTimeout. It is not stopped
	// when the connection is taken, nor set again each time it is pooled
	// (a timer set wakes another thread of the Go runtime when it is the
	// earliest of its processor's): when it fires it closes the
	// connection if pooled since IdleTimeout ago, is set for the rest of
	// that time if pooled since, and lapses if in use; put sets it when
	// it has lapsed. The three fields below are under Transport.mu.
	idleTimer *time.Timer
	timerSet  bool
	pooled    bool      // in the Transport's idle list
	idleSince time.Time // when it was pooled
	closeOnce sync.Once
}

// The buffers of a connection: an answer's head and a small body are read
// in one call; a bigger body is read past the buffer, straight into the
// relay's.
const (
	readBufSize  = 16 << 10
	writeBufSize = 4 << 10
)

func (t *Transport) maxIdle() int {
	if t.MaxIdlePerHost > 0 {
		return t.MaxIdlePerHost
	}
	return 64
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleTimeout > 0 {
		return t.IdleTimeout
	}
	return IdleTimeout
}

// get takes an idle connection to host, or dials one; reused says which.
func (t *Transport) get(ctx context.Context, host string) (c *conn, reused bool, err error) {
	t.mu.Lock()
	for list := t.idle[host]; len(list) > 0; list = t.idle[host] {
		c = list[len(list)-1]
		t.idle[host] = list[:len(list)-1]
		c.pooled = false // its idle timer, if it fires now, lets it be
		t.mu.Unlock()
		if c.unsolicited() {
			c.close()
			t.mu.Lock()
			continue
		}
		setBusy(c.nc, true)
		return c, true, nil
	}
	t.mu.Unlock()
	nc, err := t.Dial(ctx, host)
	if err != nil {
		return nil, false, err
	}
	rawsock.On(nc) // a read's connection (rawsock.On says why only these)
	hl := &proto.HeadLimit{R: nc}
	key := host
	if k, ok := nc.(PoolKeyer); ok && k.PoolKey() != "" {
		key = k.PoolKey()
	}
	c = &conn{t: t, host: key, nc: nc, hl: hl, br: bufio.NewReaderSize(hl, readBufSize), wc: counter{w: nc}}
	c.bw = bufio.NewWriterSize(&c.wc, writeBufSize)
	c.idleTimer = time.AfterFunc(time.Hour, c.idleExpired)
	c.idleTimer.Stop()
	setBusy(nc, true)
	return c, false, nil
}

// put pools c again, or closes it when the pool for its host is full or
// bytes came past the answer it just carried: an answer written past its
// length, a body to a HEAD or a 204, a stray interim answer. The next
// request would take them for its answer.
func (t *Transport) put(c *conn) {
	if c.br.Buffered() > 0 {
		c.close()
		return
	}
	t.mu.Lock()
	if t.idle == nil {
		t.idle = map[string][]*conn{}
	}
	if len(t.idle[c.host]) >= t.maxIdle() {
		t.mu.Unlock()
		c.close()
		return
	}
	t.idle[c.host] = append(t.idle[c.host], c)
	c.pooled, c.idleSince = true, time.Now()
	setBusy(c.nc, false)
	if !c.timerSet {
		c.timerSet = true
		c.idleTimer.Reset(t.idleTimeout())
	}
	t.mu.Unlock()
}

// unsolicited reports whether an idle connection has something to read
// (bytes nobody asked for, as net/http's "Unsolicited response" on an idle
// connection, or its end): it is not used again then. The look does not
// wait: what is buffered, and, on plain TCP, what the kernel holds
// (peeked). On TLS, bytes may be the server's own (a session ticket):
// only what put found past an answer counts there.
func (c *conn) unsolicited() bool {
	return c.br.Buffered() > 0 || pending(c.nc)
}

// pending reports whether c, or the plain TCP connection beneath it, has
// bytes to read or has been closed by the other end, without reading.
func pending(c net.Conn) bool {
	for range 4 {
		switch x := c.(type) {
		case *net.TCPConn:
			return peekTCP(x)
		case interface{ NetConn() net.Conn }:
			if _, isTLS := c.(*tls.Conn); isTLS {
				return false
			}
			c = x.NetConn()
		default:
			return false
		}
	}
	return false
}

// peekTCP looks at c's receive queue without taking from it or waiting.
func peekTCP(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return true
	}
	var n int
	var perr error
	if err := rc.Read(func(fd uintptr) bool {
		n, perr = rawsock.Peek(fd)
		return true // never wait for it
	}); err != nil {
		return true
	}
	switch {
	case errors.Is(perr, syscall.EAGAIN) || errors.Is(perr, syscall.EWOULDBLOCK):
		return false // nothing there: the common case
	case perr != nil:
		return true
	}
	return n >= 0 // bytes (n > 0), or the other end closed (n == 0)
}

func (c *conn) idleExpired() {
	t := c.t
	t.mu.Lock()
	if !c.pooled {
		c.timerSet = false // in use (or closed): put sets it again
		t.mu.Unlock()
		return
	}
	if rest := t.idleTimeout() - time.Since(c.idleSince); rest > 0 {
		c.idleTimer.Reset(rest)
		t.mu.Unlock()
		return
	}
	c.pooled, c.timerSet = false, false
	list := t.idle[c.host]
	for i, x := range list {
		if x == c {
			t.idle[c.host] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	t.mu.Unlock()
	c.close()
}

func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.idleTimer.Stop()
		c.nc.Close()
	})
}

// CloseIdleConnections closes every idle connection.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	var all []*conn
	for host, list := range t.idle {
		for _, c := range list {
			c.pooled = false
		}
		all = append(all, list...)
		delete(t.idle, host)
	}
	t.mu.Unlock()
	for _, c := range all {
		c.close()
	}
}

// replayable reports whether req may be sent again after a pooled
// connection turned out closed: a read (a safe method, proto.IsRead)
// without a body or with one it can get again (GetBody), which it then
// rewinds.
func replayable(req *http.Request) bool {
	if req.Method != "" && !proto.IsRead(req.Method) {
		return false
	}
	if req.Body == nil || req.Body == http.NoBody {
		return true
	}
	if req.GetBody == nil {
		return false
	}
	// A body held in memory (a PROPFIND's, a REPORT's) is sent again
	// from its start.
	b, err := req.GetBody()
	if err != nil {
		return false
	}
	req.Body = b
	return true
}

// errClosedIdle marks a pooled connection found closed by the other end
// before any of the answer came.
var errClosedIdle = errors.New("h1: the pooled connection was closed by the other end")

// RoundTrip sends req and returns the head of its answer; the body streams
// from the connection, which is pooled again once the body has been read
// to its end (or closed at its end) and closed otherwise.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	trace := httptrace.ContextClientTrace(ctx)
	host := req.URL.Host
	if req.URL.Port() == "" {
		host = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	for {
		c, reused, err := t.get(ctx, host)
		if err != nil {
			return nil, err
		}
		if trace != nil && trace.GotConn != nil {
			trace.GotConn(httptrace.GotConnInfo{Conn: c.nc, Reused: reused})
		}
		resp, err := c.roundTrip(ctx, req, trace, reused)
		if err == nil {
			return resp, nil
		}
		c.close()
		if reused && retriable(err) && ctx.Err() == nil && replayable(req) {
			continue
		}
		if cause := context.Cause(ctx); cause != nil {
			return nil, fmt.Errorf("%w (%v)", err, cause)
		}
		return nil, err
	}
}

func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// ErrClosedEarly is a new connection closed (or reset) by the other end
// before any of the answer came.
var ErrClosedEarly = errors.New("h1: the connection was closed before an answer came")

// errNothingWritten marks a request whose writing failed before any byte
// of it reached the connection (net/http's nothingWrittenError).
var errNothingWritten = errors.New("h1: nothing of the request was written")

// retriable reports whether a request that failed on a reused connection
// may go again on a new one: nothing of it was written (a connection
// reset while idle, found by the write), or nothing of an answer came
// before the connection ended (closed while idle, found by the read), as
// net/http's Transport retries (transport.go, shouldRetryRequest). Only a
// replayable read is (replayable).
func retriable(err error) bool {
	return errors.Is(err, errNothingWritten) || errors.Is(err, errClosedIdle)
}

// counter counts what was written through it.
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *conn) roundTrip(ctx context.Context, req *http.Request, trace *httptrace.ClientTrace, reused bool) (*http.Response, error) {
	// The context's end unblocks the connection, whatever it is doing;
	// the connection is not pooled again then.
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	c.wc.n = 0
	err := req.Write(c.bw)
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		stop()
		c.bw.Reset(&c.wc)
		if c.wc.n == 0 {
			return nil, fmt.Errorf("%w: %w", errNothingWritten, err)
		}
		return nil, err
	}
	if c.t.QuickAck {
		quickAck(c.nc) // an app's answer in two sends is not held 40 ms
	}
	// The head, interim answers included, is bounded (proto.MaxHeadBytes,
	// max1xx); the body is read as it comes.
	// The limit is lifted before the body is read, and before a
	// connection whose answer has no body goes back to the pool (finish),
	// where another request may take it at once.
	c.hl.Limit(proto.MaxHeadBytes)
	if _, err := c.br.Peek(1); err != nil {
		c.hl.Unlimit()
		stop()
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			if reused {
				return nil, fmt.Errorf("%w: %v", errClosedIdle, err)
			}
			return nil, fmt.Errorf("%w: %v", ErrClosedEarly, err)
		}
		return nil, err
	}
	var got1xx func(int, http.Header) error
	if trace != nil && trace.Got1xxResponse != nil {
		got1xx = func(code int, h http.Header) error { return trace.Got1xxResponse(code, textproto.MIMEHeader(h)) }
	}
	resp, err := readHead(c.br, req, got1xx, false)
	c.hl.Unlimit()
	if err != nil {
		stop()
		return nil, fmt.Errorf("h1: %w", err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		stop()
		return nil, errors.New("h1: the answer switched protocols (101), which this client does not carry")
	}
	b := &Body{c: c, rc: resp.Body, stop: stop, reusable: !resp.Close && !req.Close}
	if resp.ContentLength >= 0 && len(resp.TransferEncoding) == 0 {
		b.left = resp.ContentLength
	} else {
		b.left = -1
	}
	if resp.Body == http.NoBody || b.left == 0 {
		b.finish(true)
	}
	resp.Body = b
	return resp, nil
}

// Body is an answer's body on its connection.
type Body struct {
	c    *conn
	rc   io.ReadCloser
	stop func() bool
	// left is what is left of a body of known length; -1 when its length
	// is not known (chunked, or until the connection closes).
	left     int64
	reusable bool

	mu   sync.Mutex
	done bool
}

// Read reads the body.
func (b *Body) Read(p []byte) (int, error) {
	if b.isDone() {
		return 0, io.EOF
	}
	if b.left > 0 && int64(len(p)) > b.left {
		p = p[:b.left] // never past the body's end
	}
	n, err := b.rc.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
		if b.left == 0 && err == nil {
			err = io.EOF
		}
	}
	if err == io.EOF {
		b.finish(true)
	} else if err != nil {
		b.finish(false)
	}
	return n, err
}

// Buffered is how many bytes of the answer have arrived and wait to be
// read (its body's, and a chunked body's framing): a Read now takes them
// without waiting. 0 once the body has ended.
func (b *Body) Buffered() int {
	if b.isDone() {
		return 0
	}
	return b.c.br.Buffered()
}

func (b *Body) isDone() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done
}

// Close ends the body: its connection is pooled again if the body was
// read to its end, and closed otherwise.
func (b *Body) Close() error {
	b.finish(false)
	return nil
}

// finish hands the connection back (pooled if the body ended and the
// connection may carry another exchange, else closed), once.
func (b *Body) finish(atEnd bool) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	b.done = true
	b.mu.Unlock()
	// stop is false when the context ended (and set a deadline in the
	// past): the connection is not used again then.
	if b.stop() && atEnd && b.reusable {
		b.c.t.put(b.c)
		return
	}
	b.c.close()
}
