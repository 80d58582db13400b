// Package oneshot sends one HTTP/1.1 request on one new connection, exactly
// once, and reports as a fact whether any byte of it was written.
//
// It is the only way Delta sends a call, on every hop. It does not use
// net/http's Transport, which may resend a request on a fresh connection
// when a reused one fails (and treats Idempotency-Key as permission to).
// Here there is no pool and no second write: the request is written to the
// connection it was dialled for, the answer is read from it, and the
// connection is closed.
//
// "Nothing was sent" is decided by a wrapped net.Conn that records the first
// call to Write, never by an error's type. Whatever dial returns must have
// finished any handshake (TLS), so that its first write is the request's.
package oneshot

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
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

// Response is a complete answer.
type Response struct {
	*http.Response        // Body is closed; use Bytes
	Bytes          []byte // the whole body
}

// Do dials, writes req once, and reads the whole answer (at most maxBody
// bytes of body). ctx's deadline bounds the whole exchange, connect
// included; dial should apply its own connect timeout. req.Body, if any,
// must be re-readable from the start only once: it is written at most once.
func Do(ctx context.Context, dial func(context.Context) (net.Conn, error), req *http.Request, maxBody int64) (*Response, error) {
	raw, err := dial(ctx)
	if err != nil {
		return nil, &Error{Op: "connect", Err: err, Timeout: IsTimeout(err)}
	}
	conn := &recordingConn{Conn: raw}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	req.Close = true // one request per connection: Connection: close
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(conn)
	defer func() { bw.Reset(nil); writers.Put(bw) }()
	werr := req.Write(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	// The answer is read whole before Do returns (read), so the reader is
	// free again then.
	br := readers.Get().(*bufio.Reader)
	br.Reset(conn)
	defer func() { br.Reset(nil); readers.Put(br) }()
	if werr != nil {
		if !conn.wrote.Load() {
			return nil, &Error{Op: "send the request", Err: werr, Timeout: IsTimeout(werr)}
		}
		// Some bytes left. The peer may have answered before reading all of
		// them (a refusal at its door); take that answer if it is whole.
		if resp, err := read(br, req, maxBody); err == nil {
			return resp, nil
		}
		return nil, &Error{Op: "send the request", Sent: true, Err: werr, Timeout: IsTimeout(ctxErr(ctx, werr))}
	}
	resp, err := read(br, req, maxBody)
	if err != nil {
		err = ctxErr(ctx, err)
		return nil, &Error{Op: "read the answer", Sent: true, Err: err, Timeout: IsTimeout(err)}
	}
	return resp, nil
}

// writers and readers are the buffers of exchanges, lent for one each (a
// call made two 32 KiB writers and two 4 KiB readers of garbage: half of
// what a call through two Deltas allocated).
var (
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
)

func read(br *bufio.Reader, req *http.Request, maxBody int64) (*Response, error) {
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("answer (%d) broke off after %d bytes of body: %w", resp.StatusCode, len(body), err)
	}
	if int64(len(body)) > maxBody {
		return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, maxBody)
	}
	return &Response{Response: resp, Bytes: body}, nil
}

// ctxErr prefers the context's reason when the context ended the exchange.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return fmt.Errorf("%w (%v)", os.ErrDeadlineExceeded, err)
		}
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}

// IsTimeout reports whether err is a deadline passing.
func IsTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// recordingConn records whether Write was ever called with bytes. It is set
// before the write: a write that fails may still have put bytes on the wire.
type recordingConn struct {
	net.Conn
	wrote atomic.Bool
}

func (c *recordingConn) Write(p []byte) (int, error) {
	if len(p) > 0 {
		c.wrote.Store(true)
	}
	return c.Conn.Write(p)
}
