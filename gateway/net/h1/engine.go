package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/delta-roads/delta/gateway/wire/proto"
)

// The engine under both policies: how an answer's head is read (under
// proto.MaxHeadBytes, set by the caller's HeadLimit, and max1xx interim
// answers), how a context's end stops an exchange, and what a failure
// is called.

// max1xx bounds the interim answers read before the final one. Go's own
// transport allows 5; a server may send 102 every few seconds of a long
// call, so more are allowed here, but not without end.
const max1xx = 1000

// IdleTimeout is how long a pooled connection is kept idle: below the
// door's keep-alive (90 s, gateway's door limits, held by a test there),
// so that the client gives a connection up before the server closes it
// under a request that is being written.
const IdleTimeout = 45 * time.Second

// aLongTimeAgo is a deadline that unblocks every read and write at once.
var aLongTimeAgo = time.Unix(1, 0)

// tcpOf is the TCP connection beneath c (through TLS and wrappers that
// name theirs, NetConn), or nil.
func tcpOf(c net.Conn) *net.TCPConn {
	for range 4 {
		switch x := c.(type) {
		case *net.TCPConn:
			return x
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// readHead reads the final answer's head, telling got1xx (if not nil) each
// interim answer (1xx other than 101) in order; with until100, a 100
// Continue is returned too (the go-ahead for a body held back). A 101 is
// returned as the final answer: whether it may be is the policy's. An
// error from got1xx ends the exchange.
func readHead(br *bufio.Reader, req *http.Request, got1xx func(int, http.Header) error, until100 bool) (*http.Response, error) {
	for range max1xx + 1 {
		resp, err := http.ReadResponse(br, req)
		if err == nil {
			err = proto.CheckStatus(resp.StatusCode)
		}
		if err != nil {
			return nil, err
		}
		if until100 && resp.StatusCode == http.StatusContinue {
			return resp, nil
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			if got1xx != nil {
				if err := got1xx(resp.StatusCode, resp.Header); err != nil {
					return nil, err
				}
			}
			continue
		}
		return resp, nil
	}
	return nil, fmt.Errorf("more than %d interim (1xx) answers and no final one", max1xx)
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
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrIdle) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
