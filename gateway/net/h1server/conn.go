package h1server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/delta-roads/delta/gateway/net/rawsock"
)

// testHookWatching, if set (by a test, before any server starts), is
// called when a hang-up watch begins to read.
var testHookWatching func()

// aLongTimeAgo is a deadline that ends a pending read at once.
var aLongTimeAgo = time.Unix(1, 0)

// conn is one connection served here, on its own goroutine (serve).
type conn struct {
	s        *Server
	rwc      net.Conn
	ctx      context.Context // the connection's (BaseContext, ConnContext)
	remote   string
	tlsState *tls.ConnectionState

	cr   connReader
	br   *bufio.Reader // over cr
	bw   *bufio.Writer // over rwc, noting a failed write
	bw2k *bufio.Writer // each answer's buffer before chunking
	hbr  bytes.Reader  // a head, as read ...
	hr   *bufio.Reader // ... and parsed
	werr error         // the first write that failed

	handedOff bool
	hijacked  bool // taken by a handler (response.Hijack)

	// The hang-up watch of the request being served (startWatch, watch,
	// stopWatch). The timer is not set again for every request: once set,
	// it stays set until it fires, and then either starts the watch of the
	// request being served, if that one began WatchAfter ago, or is set for
	// the rest of that time, or, between requests, lapses. A timer set or
	// moved wakes another thread of the Go runtime when it becomes the
	// earliest of its processor's, and this one would be on every read.
	timer   *time.Timer
	armed   bool               // a request is being served (written under wmu)
	cancel  context.CancelFunc // the request's context
	wmu     sync.Mutex
	pending bool      // the timer is set (under wmu)
	since   time.Time // when the request being served began (under wmu)
	wstate  int       // (under wmu)
	wdone   chan struct{}

	// idleSet: the read deadline in force is idleUntil, set by awaitNext
	// (zero: none); false once another is set (the head's, a watch's, a
	// handler's).
	idleSet   bool
	idleUntil time.Time
}

// The hang-up watch's states.
const (
	watchNone     = iota // not started
	watchReading         // reading the connection
	watchStopping        // stopped by the request's end
	watchDone            // its read returned
)

// The connections' buffers, kept between connections (as net/http keeps
// its own): a call's connection, handed over at its first bytes, would
// otherwise leave 14 KiB behind on every hop.
var (
	readers   = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	writers   = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
	writers2k = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bufferBeforeChunking) }}
)

// putBuffers gives the connection's buffers back once it is closed or
// handed over.
func (c *conn) putBuffers() {
	for _, r := range []**bufio.Reader{&c.br, &c.hr} {
		if *r != nil {
			(*r).Reset(nil)
			readers.Put(*r)
			*r = nil
		}
	}
	for _, w := range []struct {
		w    **bufio.Writer
		pool *sync.Pool
	}{{&c.bw, &writers}, {&c.bw2k, &writers2k}} {
		if *w.w != nil {
			(*w.w).Reset(nil)
			w.pool.Put(*w.w)
			*w.w = nil
		}
	}
}

// connReader reads the connection, first the byte a watch read, and
// then, once a watch has seen it fail, its failure.
type connReader struct {
	c       *conn
	hasByte bool
	byteBuf [1]byte
	err     error
}

func (cr *connReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if cr.hasByte {
		p[0] = cr.byteBuf[0]
		cr.hasByte = false
		return 1, nil
	}
	if cr.err != nil {
		return 0, cr.err
	}
	return cr.c.rwc.Read(p)
}

// errWriter writes to the connection and notes its first failure.
type errWriter struct{ c *conn }

func (w errWriter) Write(p []byte) (int, error) {
	n, err := w.c.rwc.Write(p)
	if err != nil {
		w.c.noteWriteErr(err)
	}
	return n, err
}

func (c *conn) noteWriteErr(err error) {
	if err != nil && c.werr == nil {
		c.werr = err
		if c.cancel != nil {
			c.cancel() // as net/http: a client that cannot be written to is gone
		}
	}
}

// fail ends the connection after a failed write.
func (c *conn) fail(err error) {
	c.noteWriteErr(err)
	c.rwc.Close()
}

func (s *Server) newConn(rw net.Conn, base context.Context) *conn {
	c := &conn{s: s, rwc: rw, wdone: make(chan struct{}, 1)}
	c.cr.c = c
	if ra := rw.RemoteAddr(); ra != nil {
		c.remote = ra.String()
	}
	ctx := context.WithValue(base, http.LocalAddrContextKey, rw.LocalAddr())
	if s.srv.ConnContext != nil {
		ctx = s.srv.ConnContext(ctx, rw)
		if ctx == nil {
			panic("ConnContext returned nil")
		}
	}
	c.ctx = ctx
	s.mu.Lock()
	s.conns[c] = true
	s.mu.Unlock()
	return c
}

func (c *conn) serve() {
	s := c.s
	defer func() {
		if err := recover(); err != nil && err != http.ErrAbortHandler {
			const size = 64 << 10
			buf := make([]byte, size)
			buf = buf[:runtime.Stack(buf, false)]
			s.logf("http: panic serving %v: %v\n%s", c.remote, err, buf)
		}
		if c.timer != nil {
			c.timer.Stop() // a lapse that would find no request
		}
		if c.handedOff {
			c.putBuffers()
			return
		}
		if c.hijacked {
			return // its reader and writer are the hijacker's now
		}
		if c.armed {
			c.rwc.Close() // ends a watch's read
			c.stopWatch()
		}
		if c.cancel != nil {
			c.cancel()
		}
		if c.bw != nil && c.werr == nil {
			c.bw.Flush()
		}
		c.rwc.Close()
		c.putBuffers()
		s.forget(c)
		s.setState(c.rwc, http.StateClosed)
	}()

	if tc, ok := c.rwc.(*tls.Conn); ok {
		if !c.handshake(tc) {
			return
		}
	}
	c.br = readers.Get().(*bufio.Reader)
	c.br.Reset(&c.cr)

	if c.tlsState != nil && c.tlsState.NegotiatedProtocol != "" && c.tlsState.NegotiatedProtocol != "http/1.1" {
		c.handOff()
		return
	}
	for first := true; ; first = false {
		if !first {
			s.setIdle(c, true)
			c.awaitNext()
			if _, err := c.br.Peek(4); err != nil {
				return // as net/http: fewer than 4 bytes before an end get no answer
			}
		}
		if buf, _ := c.br.Peek(c.br.Buffered()); headEnd(buf) == 0 {
			// The head is still to be read: bounded. (One already here
			// is not read again; the deadline stays as it was.)
			var hdr time.Time
			if d := c.headerTimeout(); d > 0 {
				hdr = time.Now().Add(d)
			}
			c.rwc.SetReadDeadline(hdr)
			c.idleSet = false
		}
		n, err := c.findHead()
		if err != nil {
			var ne net.Error
			if c.br.Buffered() == 0 || errors.As(err, &ne) && ne.Timeout() {
				return // gone, or too slow: no answer, as net/http
			}
			n = 0 // a head cut short: net/http answers it (400)
		}
		var req *http.Request
		if n > 0 {
			if c.bw == nil { // the first request served here: its buffers
				c.bw = writers.Get().(*bufio.Writer)
				c.bw.Reset(errWriter{c})
				c.bw2k = writers2k.Get().(*bufio.Writer)
				c.hr = readers.Get().(*bufio.Reader)
			}
			req = c.parse(n)
		}
		if req == nil {
			if first && isH2Preface(c.br) && (s.srv.Protocols == nil || !s.srv.Protocols.UnencryptedHTTP2()) {
				c.refuseHTTP2()
				return
			}
			c.handOff()
			return
		}
		if first {
			rawsock.On(c.rwc) // a read's connection (rawsock.On says why only these)
		}
		s.setIdle(c, false)
		s.setState(c.rwc, http.StateActive)
		if s.shutting.Load() {
			return
		}
		c.br.Discard(n)
		w := c.serveOne(req)
		if c.hijacked || !w.reusable() || c.cr.err != nil {
			return
		}
		s.setState(c.rwc, http.StateIdle)
		if s.shutting.Load() {
			return
		}
	}
}

// handshake is net/http's TLS handshake of a connection: bounded by the
// server's shortest timeout, and a plain-HTTP client told so.
func (c *conn) handshake(tc *tls.Conn) bool {
	var d time.Duration
	for _, t := range []time.Duration{c.s.srv.ReadHeaderTimeout, c.s.srv.ReadTimeout, c.s.srv.WriteTimeout} {
		if t > 0 && (d == 0 || t < d) {
			d = t
		}
	}
	if d > 0 {
		dl := time.Now().Add(d)
		c.rwc.SetReadDeadline(dl)
		c.rwc.SetWriteDeadline(dl)
	}
	if err := tc.HandshakeContext(c.ctx); err != nil {
		reason := err.Error()
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
			io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
			re.Conn.Close()
			reason = "client sent an HTTP request to an HTTPS server"
		}
		c.s.logf("http: TLS handshake error from %s: %v", c.rwc.RemoteAddr(), reason)
		return false
	}
	if d > 0 {
		c.rwc.SetReadDeadline(time.Time{})
		c.rwc.SetWriteDeadline(time.Time{})
	}
	st := tc.ConnectionState()
	c.tlsState = &st
	return true
}

func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

func (c *conn) headerTimeout() time.Duration {
	if d := c.s.srv.ReadHeaderTimeout; d > 0 {
		return d
	}
	return c.s.srv.ReadTimeout
}

// awaitNext bounds the wait for the next request on the connection by
// the idle timeout: its read deadline is set to now plus that timeout,
// unless the deadline in force is already one set for that and at most
// a tenth of the timeout short of it. The deadline is not moved on every
// request: a deadline moved wakes another thread of the Go runtime. An
// idle connection is closed after 90 to 100 % of the timeout.
func (c *conn) awaitNext() {
	d := c.idleTimeout()
	now := time.Now()
	if c.idleSet {
		if d <= 0 && c.idleUntil.IsZero() || d > 0 && !c.idleUntil.IsZero() && c.idleUntil.Sub(now) >= d-d/10 {
			return
		}
	}
	c.idleUntil = time.Time{} // none: as net/http, the wait is not bounded then
	if d > 0 {
		c.idleUntil = now.Add(d)
	}
	c.idleSet = true
	c.rwc.SetReadDeadline(c.idleUntil)
}

func (c *conn) idleTimeout() time.Duration {
	if d := c.s.srv.IdleTimeout; d != 0 {
		return d
	}
	return c.s.srv.ReadTimeout
}

// findHead reads until the buffer holds a whole head, and returns its
// length: 0 if it does not fit the buffer or is not a read's (its method
// is neither GET nor HEAD: a call, handed over before its head is even
// whole), or with the read's error.
func (c *conn) findHead() (int, error) {
	for {
		buf, _ := c.br.Peek(c.br.Buffered())
		if len(buf) >= 5 && !bytes.HasPrefix(buf, []byte("GET ")) && !bytes.HasPrefix(buf, []byte("HEAD ")) {
			return 0, nil
		}
		if i := headEnd(buf); i > 0 {
			return i, nil
		}
		if len(buf) == c.br.Size() {
			return 0, nil
		}
		if _, err := c.br.Peek(len(buf) + 1); err != nil {
			return 0, err
		}
	}
}

// headEnd is the length of the head at b's start, through its first
// empty line (CRLF or a bare LF, as net/http's reader takes both), or 0.
func headEnd(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return 0
		}
		i += j + 1
		switch {
		case i < len(b) && b[i] == '\n':
			return i + 1
		case i+1 < len(b) && b[i] == '\r' && b[i+1] == '\n':
			return i + 2
		}
	}
}

// parse reads the head of n bytes at the buffer's start as a request to
// serve here, or returns nil (and leaves the bytes) for net/http.
func (c *conn) parse(n int) *http.Request {
	head, _ := c.br.Peek(n)
	c.hbr.Reset(head)
	c.hr.Reset(&c.hbr)
	req, err := http.ReadRequest(c.hr)
	if err != nil || c.hr.Buffered() != 0 || c.hbr.Len() != 0 || !servedHere(req, head) {
		return nil
	}
	req.RemoteAddr = c.remote
	req.TLS = c.tlsState
	return req
}

// servedHere reports whether req (read from head) is one this server
// answers: see the package's doc.
func servedHere(req *http.Request, head []byte) bool {
	if req.ProtoMajor != 1 || req.ProtoMinor != 1 || req.Method != "GET" && req.Method != "HEAD" ||
		!strings.HasPrefix(req.RequestURI, "/") || req.ContentLength != 0 || len(req.TransferEncoding) != 0 || req.Body != http.NoBody {
		return false
	}
	if _, ok := req.Header["Expect"]; ok {
		return false
	}
	if _, ok := req.Header["Upgrade"]; ok {
		return false
	}
	if httpguts.HeaderValuesContainsToken(req.Header["Connection"], "upgrade") {
		return false
	}
	// http.ReadRequest takes the Host header away: it is counted in the
	// head, and must be one, and valid.
	if hostLines(head) != 1 || !httpguts.ValidHostHeader(req.Host) {
		return false
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// hostLines counts the head's lines that start "Host:", in any case.
func hostLines(head []byte) int {
	n := 0
	for line := range bytes.Lines(head) {
		if len(line) >= 5 && line[4] == ':' && bytes.EqualFold(line[:4], []byte("host")) {
			n++
		}
	}
	return n
}

// handOff gives the connection, and what was read of it, to net/http.
func (c *conn) handOff() {
	pre, _ := c.br.Peek(c.br.Buffered())
	pre = append([]byte(nil), pre...)
	if c.cr.hasByte {
		pre = append(pre, c.cr.byteBuf[0])
	}
	c.handedOff = true
	c.s.forget(c)
	// A connection that served reads here (rawsock.On) and now carries a
	// call goes back to net's own reads and writes, as a call's do.
	rawsock.Off(c.rwc)
	l := &oneConn{c: hand(c.rwc, pre)}
	c.s.handed.Serve(l)
	if !l.taken { // the server is shut down
		c.rwc.Close()
		c.s.setState(c.rwc, http.StateClosed)
	}
}

// serveOne runs the handler for req and ends its answer.
func (c *conn) serveOne(req *http.Request) *response {
	if d := c.s.srv.WriteTimeout; d > 0 {
		c.rwc.SetWriteDeadline(time.Now().Add(d))
		defer c.rwc.SetWriteDeadline(time.Time{})
	}
	ctx, cancel := context.WithCancel(c.ctx)
	req = req.WithContext(ctx)
	w := &response{c: c, req: req, handlerHeader: make(http.Header), contentLength: -1, wantsClose: req.Close}
	w.cw.res = w
	c.bw2k.Reset(&w.cw)
	w.w = c.bw2k
	c.cancel = cancel
	c.startWatch()
	c.s.srv.Handler.ServeHTTP(w, req)
	if c.armed {
		c.stopWatch()
	}
	cancel()
	c.cancel = nil
	if !c.hijacked {
		w.finish()
	}
	return w
}

// startWatch arms the request's hang-up watch: it starts (watch) if the
// handler is still running after WatchAfter.
func (c *conn) startWatch() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wstate = watchNone
	c.armed = true
	c.since = time.Now()
	if c.pending {
		return // it fires before this request's time and is set again then
	}
	c.pending = true
	if c.timer == nil {
		c.timer = time.AfterFunc(WatchAfter, c.watch)
		return
	}
	c.timer.Reset(WatchAfter)
}

// watch, when the timer fires, reads the connection while the handler
// of a request begun WatchAfter ago runs: the client's end (or failure)
// cancels the request's context; a byte (a pipelined request) is kept
// for the next read. For a request begun since, the timer is set for the
// rest of its time; between requests, it lapses.
func (c *conn) watch() {
	c.wmu.Lock()
	if !c.armed || c.wstate != watchNone {
		c.pending = false
		c.wmu.Unlock()
		return
	}
	if rest := WatchAfter - time.Since(c.since); rest > 0 {
		c.timer.Reset(rest)
		c.wmu.Unlock()
		return
	}
	c.pending = false
	c.wstate = watchReading
	c.rwc.SetReadDeadline(time.Time{})
	c.idleSet = false
	c.wmu.Unlock()
	if testHookWatching != nil {
		testHookWatching()
	}
	n, err := c.rwc.Read(c.cr.byteBuf[:])
	c.wmu.Lock()
	aborted := c.wstate == watchStopping
	c.wstate = watchDone
	c.wmu.Unlock()
	if n == 1 {
		c.cr.hasByte = true
	}
	var ne net.Error
	if err != nil && !(aborted && errors.As(err, &ne) && ne.Timeout()) {
		c.cr.err = err
		c.cancel()
	}
	c.wdone <- struct{}{}
}

// stopWatch ends the request's watch, if it started, and waits for it.
func (c *conn) stopWatch() {
	c.wmu.Lock()
	c.armed = false
	prev := c.wstate
	if prev == watchNone {
		c.wmu.Unlock()
		return // not started, and now it never will for this request
	}
	c.wstate = watchStopping
	if prev == watchReading {
		c.rwc.SetReadDeadline(aLongTimeAgo)
		c.idleSet = false
	}
	c.wmu.Unlock()
	<-c.wdone
}
