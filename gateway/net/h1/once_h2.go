package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// errHeadWait is the cause when an HTTP/2 answer's head took longer than
// Options.Wait.
var errHeadWait = fmt.Errorf("%w: the answer's head took longer than its wait", os.ErrDeadlineExceeded)

// OnceH2 is Once for an app that speaks HTTP/2 in cleartext with prior
// knowledge (a gRPC server; docs/protocol.md §1c): req is written once,
// as the one stream of a connection of its own (raw, open already), and
// never again (net/http's ClientConn, which does not retry a request;
// its Transport would). Its answer streams, and an answer's
// trailers are in Trailer once its body has ended. Options' Wait bounds
// the head once the request is written whole, Got1xx is told interim
// answers; Idle, Continue and QuickAck are HTTP/1.1's and not used. Every
// error is an *Error: Sent is false only when no byte of the request's
// stream was written (the connection's preface and settings are not the
// request), so a failure after that is never said to have sent nothing.
// Closing the answer's Body closes the connection.
func OnceH2(ctx context.Context, raw net.Conn, req *http.Request, opt Options) (*Answer, error) {
	cw := &countingConn{Conn: raw}
	tr := &http.Transport{DisableCompression: true, Protocols: new(http.Protocols),
		DialContext: func(context.Context, string, string) (net.Conn, error) { return cw, nil }}
	tr.Protocols.SetUnencryptedHTTP2(true)
	cc, err := tr.NewClientConn(ctx, "http", raw.RemoteAddr().String())
	if err != nil {
		raw.Close()
		return nil, &Error{Op: "connect", Err: fmt.Errorf("HTTP/2 connection preface: %w", err), Timeout: IsTimeout(err)}
	}
	before := cw.written.Load() // the preface and settings: not the request
	ctx, cancel := context.WithCancelCause(ctx)
	var timer *time.Timer
	var tmu sync.Mutex
	stopTimer := func() {
		tmu.Lock()
		if timer != nil {
			timer.Stop()
		}
		tmu.Unlock()
	}
	if opt.Wait > 0 || opt.Written != nil {
		written := func() {
			if opt.Written != nil {
				opt.Written()
			}
			if opt.Wait > 0 {
				tmu.Lock()
				timer = time.AfterFunc(opt.Wait, func() { cancel(errHeadWait) })
				tmu.Unlock()
			}
		}
		if req.Body == nil || req.Body == http.NoBody {
			req = req.Clone(ctx)
			req.Body = http.NoBody
			written()
		} else {
			req = req.Clone(ctx)
			req.Body = &endBody{ReadCloser: req.Body, end: written}
		}
	}
	if opt.Got1xx != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			opt.Got1xx(code, http.Header(h))
			return nil
		}})
	}
	resp, err := cc.RoundTrip(req.WithContext(ctx))
	stopTimer()
	if err != nil {
		cause := context.Cause(ctx)
		cancel(nil)
		cc.Close()
		if cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%v)", cause, err)
		}
		op := "send the request"
		if cw.written.Load() > before {
			op = "read the answer"
		}
		return nil, &Error{Op: op, Sent: cw.written.Load() > before, Timeout: IsTimeout(err), Err: err}
	}
	resp.Body = &h2Body{ReadCloser: resp.Body, ctx: ctx, close: func() { cancel(nil); cc.Close() }}
	// Nothing of an HTTP/2 body is counted as arrived with its head:
	// ReadAhead takes none, and an answer of unknown length streams.
	return &Answer{Response: resp, br: bufio.NewReaderSize(strings.NewReader(""), 16)}, nil
}

// countingConn counts the bytes written to a connection.
type countingConn struct {
	net.Conn
	written atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// endBody calls end once its reader has ended (the request written whole).
type endBody struct {
	io.ReadCloser
	end  func()
	once sync.Once
}

func (b *endBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.end)
	}
	return n, err
}

// h2Body is an HTTP/2 answer's body: its errors are *Error (the request
// was sent), and closing it closes the connection.
type h2Body struct {
	io.ReadCloser
	ctx   context.Context
	close func()
	once  sync.Once
}

func (b *h2Body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = ctxErr(b.ctx, err)
		err = &Error{Op: "read the answer", Sent: true, Timeout: IsTimeout(err), Err: err}
	}
	return n, err
}

func (b *h2Body) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.close)
	return err
}
