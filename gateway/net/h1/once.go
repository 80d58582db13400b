// The once-only policy: one request on one connection, exactly once, with
// a recorded fact of whether any byte of it was written.
//
// It is the only way Delta sends a call, and opens a session, on every
// hop. It does not pool and never writes twice (net/http's Transport may
// resend a request on a fresh connection when a reused one fails, and
// treats Idempotency-Key as permission to): the request is written to the
// connection it is handed, the answer is read from it, and the connection
// is closed (or kept by a session, Answer.Switched).
//
// "Nothing was sent" is decided by a wrapped net.Conn that records the first
// call to Write, never by an error's type. Whatever the caller dialled must
// have finished any handshake (TLS), so that its first write is the
// request's.
//
// A body moves under an idle limit, not a whole-transfer one: a big body
// is written and read as long as it makes progress (DESIGN §2a).

package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delta-roads/delta/gateway/wire/proto"
)

// Error is a failed exchange.
type Error struct {
	// Op is the stage that failed: "connect", "send the request" or "read the answer".
	Op string
	// Sent reports whether any byte of the request was written.
	Sent bool
	// Timeout reports whether the failure was a deadline passing.
	Timeout bool
	// Err is the cause.
	Err error
}

func (e *Error) Error() string { return e.Op + ": " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// ErrTooLarge is the cause when the answer's body is over the limit.
var ErrTooLarge = errors.New("answer body is over the limit")

// ErrIdle is the cause when a body made no progress for Options.Idle.
var ErrIdle = errors.New("no progress")

// Response is a complete answer.
type Response struct {
	*http.Response        // Body is closed; use Bytes
	Bytes          []byte // the whole body
}

// Options adjust an exchange. The zero value bounds it by the context
// alone.
type Options struct {
	// Idle ends the exchange when writing the request makes no progress
	// for this long (a body that stops moving, DESIGN §2a). If 0, only the
	// context bounds it. The answer's body has no such limit: once its
	// head is in, a quiet answer lives as long as the context (DESIGN
	// §2c).
	Idle time.Duration
	// Wait is how long the answer's head may take once the request is
	// written whole. If 0, only the context bounds it.
	Wait time.Duration
	// Got1xx, if not nil, is told each interim answer (1xx other than
	// 101), in order, before the final answer. If nil, they are dropped.
	Got1xx func(code int, h http.Header)
	// Written, if not nil, is called once the whole request is written,
	// before its answer is read.
	Written func()
	// QuickAck acknowledges the answer's first segment at once
	// (quickAck), for a hop to an app (Transport.QuickAck).
	QuickAck bool
	// Continue sends the request's head with Expect: 100-continue and its
	// body only after the peer's 100 Continue (within Idle): a peer that
	// refuses at once does so before any of the body is sent. Delta's own
	// hop between Deltas uses it for a body that streams; an app's Expect
	// is never forwarded.
	Continue bool
	// Duplex, if not nil, writes the request's body (with Continue's
	// 100-continue) while the answer is read: Once returns at the
	// answer's head and the body goes on (Duplex). Idle bounds the wait
	// for 100 Continue, and writes have no idle limit: a flowing call's
	// silence is its app's.
	Duplex *Duplex
}

func (o Options) got1xx() func(int, http.Header) error {
	if o.Got1xx == nil {
		return nil
	}
	return func(code int, h http.Header) error { o.Got1xx(code, h); return nil }
}

// DialOnce dials, writes req once, and reads the whole answer (at most
// maxBody bytes of body). ctx's deadline bounds the whole exchange,
// connect included; dial should apply its own connect timeout.
func DialOnce(ctx context.Context, dial func(context.Context) (net.Conn, error), req *http.Request, maxBody int64) (*Response, error) {
	raw, err := dial(ctx)
	if err != nil {
		return nil, ConnectError(err)
	}
	return OnceWhole(ctx, raw, req, maxBody, Options{})
}

// ConnectError is a failure to connect, before anything was sent.
func ConnectError(err error) *Error {
	return &Error{Op: "connect", Err: err, Timeout: IsTimeout(err)}
}

// OnceWhole writes req once on conn (open already, its handshake done)
// and reads the whole answer, at most maxBody bytes of body. conn is
// closed when it returns.
func OnceWhole(ctx context.Context, conn net.Conn, req *http.Request, maxBody int64, opt Options) (*Response, error) {
	a, err := Once(ctx, conn, req, opt)
	if err != nil {
		return nil, err
	}
	defer a.Body.Close()
	body, err := io.ReadAll(io.LimitReader(a.Body, maxBody+1))
	if err != nil {
		err = ctxErr(ctx, err)
		return nil, &Error{Op: "read the answer", Sent: true, Timeout: IsTimeout(err),
			Err: fmt.Errorf("answer (%d) broke off after %d bytes of body: %w", a.StatusCode, len(body), err)}
	}
	if int64(len(body)) > maxBody {
		return nil, &Error{Op: "read the answer", Sent: true, Err: fmt.Errorf("%w of %d bytes", ErrTooLarge, maxBody)}
	}
	return &Response{Response: a.Response, Bytes: body}, nil
}

// Answer is an answer whose body streams. Reading Body past the head is
// bounded by the exchange's context alone; closing Body closes the
// connection. Every error from Body is an *Error (the request was sent).
type Answer struct {
	*http.Response
	conn *onceConn
	br   *bufio.Reader
}

// Buffered is how many bytes of the answer have arrived past its head and
// wait to be read from Body.
func (a *Answer) Buffered() int { return a.br.Buffered() }

// ReadSmall reads the body whole when its length is known and at most
// limit bytes; otherwise what has arrived already (ReadAhead). whole
// reports whether that is all of it: a small answer is taken whole, and a
// long one or a stream is passed on from what was read.
func (a *Answer) ReadSmall(limit int) (data []byte, whole bool, err error) {
	if a.ContentLength >= 0 && a.ContentLength <= int64(limit) {
		data, err = io.ReadAll(a.Body)
		return data, err == nil, err
	}
	return a.ReadAhead(limit)
}

// ReadAhead reads of the body what has arrived already, and no more than
// limit bytes, without waiting for more: whole reports whether that is all
// of it (an answer written in one piece, as most small ones are). What is
// left is read from Body as usual. It lets a small answer of unknown
// length be taken whole, and one that trickles (an event stream) be
// passed on as it comes.
func (a *Answer) ReadAhead(limit int) (data []byte, whole bool, err error) {
	// What is buffered bounds what can be read without waiting (a chunked
	// body's framing makes it a little more than the body).
	buf := make([]byte, 0, min(limit, max(a.br.Buffered(), 512)))
	for {
		if a.ContentLength >= 0 && int64(len(buf)) == a.ContentLength {
			return buf, true, nil
		}
		if a.br.Buffered() == 0 || len(buf) >= limit {
			return buf, false, nil
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := a.Body.Read(buf[len(buf):min(cap(buf), limit)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, true, nil
		}
		if err != nil {
			return buf, false, err
		}
	}
}

// Switched returns, for a 101 answer, the connection and what was read of
// it past the head: the session's bytes, for a relay (the caller owns the
// connection then, and Body must not be used). It lifts the exchange's
// deadlines.
func (a *Answer) Switched() (net.Conn, *bufio.Reader) {
	a.conn.stop()
	a.conn.Conn.SetDeadline(time.Time{})
	a.conn.brMu.Lock()
	a.conn.br = nil // the session keeps it
	a.conn.brMu.Unlock()
	return a.conn.Conn, a.br
}

// Once writes req once on raw (whose handshake is done) and reads the
// answer's head, past interim answers; the body is read from the returned
// Answer's Body as it arrives. On an error raw is closed.
func Once(ctx context.Context, raw net.Conn, req *http.Request, opt Options) (*Answer, error) {
	c := &onceConn{Conn: raw, idle: opt.Idle}
	if opt.Duplex != nil {
		c.idle = 0
	}
	c.head = &proto.HeadLimit{R: c}
	c.head.Limit(proto.MaxHeadBytes)
	if dl, ok := ctx.Deadline(); ok {
		c.hard = dl
	}
	c.stop = context.AfterFunc(ctx, c.kill)
	fail := func(e *Error) (*Answer, error) {
		c.stop()
		c.close()
		return nil, e
	}

	// One request per connection: Connection: close; but a session's
	// opening says Connection: Upgrade and nothing that contradicts it
	// (aiohttp refuses an upgrade that also says close, DESIGN §2a). Its
	// connection is the session's, or closed after a declined opening.
	req.Close = !proto.IsUpgrade(req.Header)
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(c)
	br := readers.Get().(*bufio.Reader)
	br.Reset(c.head)
	c.br = br
	if opt.Duplex != nil && req.Body != nil && req.Body != http.NoBody {
		return onceDuplex(ctx, c, bw, br, req, opt, fail)
	}
	var g *gate
	var src *source
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil { // not one held in memory, which cannot break
			src = &source{rc: req.Body}
			req.Body = src
		}
		if opt.Continue {
			req.Header.Set("Expect", "100-continue")
			g = &gate{body: req.Body, bw: bw, br: br, c: c, req: req, opt: opt}
			req.Body = g
		}
	}
	c.setWrite()
	werr := req.Write(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	bw.Reset(nil)
	writers.Put(bw)
	if g != nil && g.early != nil {
		// Refused before the body: its answer is the answer.
		c.bodyBegins()
		return answer(g.early, c, br), nil
	}
	if src != nil && src.err != nil {
		// The request's own body broke (the app's upload): what left is
		// short, and the peer must see it end so, not wait for the rest.
		return fail(&Error{Op: "send the request", Sent: c.wrote.Load(), Err: src.err})
	}
	if werr != nil {
		werr = c.cause(ctx, werr)
		if !c.wrote.Load() {
			return fail(&Error{Op: "send the request", Err: werr, Timeout: IsTimeout(werr)})
		}
		// Some bytes left. The peer may have answered before reading all of
		// them (a refusal at its door, no room for the body); take that
		// answer if it comes.
		c.setRead(opt.Idle, true)
		if resp, err := readHead(br, req, opt.got1xx(), false); err == nil {
			c.bodyBegins()
			return answer(resp, c, br), nil
		}
		return fail(&Error{Op: "send the request", Sent: true, Err: werr, Timeout: IsTimeout(werr)})
	}
	if opt.Written != nil {
		opt.Written()
	}
	if opt.QuickAck {
		quickAck(raw) // an app's answer in two sends is not held 40 ms
	}
	c.setRead(opt.Wait, true)
	resp, err := readHead(br, req, opt.got1xx(), false)
	if err != nil {
		err = c.cause(ctx, err)
		return fail(&Error{Op: "read the answer", Sent: true, Err: err, Timeout: IsTimeout(err)})
	}
	c.bodyBegins()
	return answer(resp, c, br), nil
}

// gate holds a request's body back until the peer's 100 Continue: its
// first Read sends the head and waits.
type gate struct {
	body   io.ReadCloser
	bw     *bufio.Writer
	br     *bufio.Reader
	c      *onceConn
	req    *http.Request
	opt    Options
	opened bool
	early  *http.Response // the final answer that came instead of 100
}

// errRefusedEarly ends the writing of a body the peer answered before
// asking for it.
var errRefusedEarly = errors.New("the peer answered before asking for the body")

func (g *gate) Read(p []byte) (int, error) {
	if !g.opened {
		g.opened = true
		if err := g.bw.Flush(); err != nil {
			return 0, err
		}
		g.c.setRead(g.opt.Idle, true)
		resp, err := readHead(g.br, g.req, g.opt.got1xx(), true)
		if err != nil {
			return 0, fmt.Errorf("waiting for 100 Continue: %w", err)
		}
		if resp.StatusCode != http.StatusContinue {
			g.early = resp
			return 0, errRefusedEarly
		}
		g.c.setWrite()
	}
	return g.body.Read(p)
}

func (g *gate) Close() error { return g.body.Close() }

// WriteTo writes the body to w (net/http's chunked writer, when the body
// streams) in pieces of up to bigPiece: a body that keeps coming goes in
// chunks as big as what arrived, not in io.Copy's 32 KiB ones, so that
// the peer reads, sums and writes it in a few large pieces (an owner's
// spool, docs/benchmarks.md). What is read is written as it comes: a
// piece is never waited for to fill.
func (g *gate) WriteTo(w io.Writer) (int64, error) {
	bp := bigPieces.Get().(*[]byte)
	defer bigPieces.Put(bp)
	buf := *bp
	var n int64
	for {
		m, rerr := g.Read(buf)
		if m > 0 {
			wm, werr := w.Write(buf[:m])
			n += int64(wm)
			if werr != nil {
				return n, werr
			}
			if wm < m {
				return n, io.ErrShortWrite
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// bigPiece is the most a streamed body's piece holds (gate.WriteTo): at
// 256 KiB a 1 GiB call's upload reached its owner's spool 1.2x as fast
// as in io.Copy's 32 KiB pieces; 128 KiB and 1 MiB were level with it,
// 64 KiB no faster than 32 (docs/benchmarks.md).
const bigPiece = 256 << 10

var bigPieces = sync.Pool{New: func() any { b := make([]byte, bigPiece); return &b }}

// source is a request's body, with the error it broke with (not EOF).
type source struct {
	rc  io.ReadCloser
	err error
}

func (s *source) Read(p []byte) (int, error) {
	n, err := s.rc.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

func (s *source) Close() error { return s.rc.Close() }

func answer(resp *http.Response, c *onceConn, br *bufio.Reader) *Answer {
	a := &Answer{Response: resp, conn: c, br: br}
	resp.Body = &onceBody{rc: resp.Body, c: c}
	return a
}

// onceBody is an answer's body: its errors say the request was sent, and
// closing it closes the connection.
type onceBody struct {
	rc     io.ReadCloser
	c      *onceConn
	closed atomic.Bool
}

func (b *onceBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		err = b.c.cause(context.Background(), err)
		err = &Error{Op: "read the answer", Sent: true, Timeout: IsTimeout(err), Err: err}
	}
	return n, err
}

func (b *onceBody) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	b.c.stop()
	return b.c.close()
}

// writers and readers are the buffers of exchanges, lent for one each (a
// call made two 32 KiB writers and two 4 KiB readers of garbage): a
// writer until the request is written, a reader until the connection is
// closed (or switched to a session, which keeps it).
var (
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
)

// onceConn records whether Write was ever called with bytes (set before the
// write: a write that fails may still have put bytes on the wire), and
// keeps the exchange's deadlines: an idle limit renewed by each write, and
// by each read of the body once the head is in; a hard one from the
// context; and a kill when the context ends.
type onceConn struct {
	net.Conn
	wrote atomic.Bool
	idle  time.Duration
	hard  time.Time // the context's deadline; zero if none
	// head sits under the reader: it bounds the answer's head, interim
	// answers included, until the body begins (bodyBegins).
	head   *proto.HeadLimit
	killed atomic.Bool
	// limit is the limit behind the last deadline set: 0 the context's
	// (or none), else a duration of Options.Idle or Options.Wait, as
	// waiting says.
	limit   atomic.Int64
	waiting atomic.Bool
	stop    func() bool
	// br is the reader lent for this connection's answers, given back
	// when it closes (nil once given back, or kept by a session).
	brMu sync.Mutex
	br   *bufio.Reader
}

// close closes the connection and gives its reader back.
func (c *onceConn) close() error {
	err := c.Conn.Close()
	c.brMu.Lock()
	if br := c.br; br != nil {
		c.br = nil
		br.Reset(nil)
		readers.Put(br)
	}
	c.brMu.Unlock()
	return err
}

func (c *onceConn) until(d time.Duration) (time.Time, time.Duration) {
	if c.killed.Load() {
		return time.Unix(1, 0), 0
	}
	var t time.Time
	limit := time.Duration(0)
	if d > 0 {
		t, limit = time.Now().Add(d), d
	}
	if !c.hard.IsZero() && (t.IsZero() || c.hard.Before(t)) {
		t, limit = c.hard, 0
	}
	return t, limit
}

func (c *onceConn) setWrite() {
	t, limit := c.until(c.idle)
	c.limit.Store(int64(limit))
	c.waiting.Store(false)
	c.Conn.SetWriteDeadline(t)
	if c.killed.Load() { // a kill between until and the set
		c.Conn.SetDeadline(time.Unix(1, 0))
	}
}

// setRead sets the read deadline d from now; waiting reports whether d
// is the wait for the head rather than an idle limit.
func (c *onceConn) setRead(d time.Duration, waiting bool) {
	t, limit := c.until(d)
	c.limit.Store(int64(limit))
	c.waiting.Store(waiting)
	c.Conn.SetReadDeadline(t)
	if c.killed.Load() {
		c.Conn.SetDeadline(time.Unix(1, 0))
	}
}

func (c *onceConn) Write(p []byte) (int, error) {
	if len(p) > 0 {
		c.wrote.Store(true)
	}
	if c.idle > 0 {
		c.setWrite()
	}
	return c.Conn.Write(p)
}

// bodyBegins ends the head: its bound is lifted, and so is the wait for
// it: the body's reads are bounded by the context alone.
func (c *onceConn) bodyBegins() {
	c.head.Unlimit()
	c.setRead(0, false)
}

func (c *onceConn) kill() {
	c.killed.Store(true)
	c.Conn.SetDeadline(time.Unix(1, 0))
}

// cause names a deadline that passed: the wait for the head, the idle
// limit (ErrIdle), or the context's reason.
func (c *onceConn) cause(ctx context.Context, err error) error {
	if limit := time.Duration(c.limit.Load()); IsTimeout(err) && limit > 0 && !c.killed.Load() {
		if c.waiting.Load() {
			return fmt.Errorf("no answer within %s (%w)", limit, err)
		}
		return fmt.Errorf("%w for %s (%v)", ErrIdle, limit, err)
	}
	return ctxErr(ctx, err)
}
