package h1server

import (
	"bufio"
	"bytes"
	"io"
	"time"

	"golang.org/x/net/http2"
)

// isH2Preface reports whether what br holds begins with HTTP/2's client
// preface ("PRI * HTTP/2.0"): a client that speaks HTTP/2 with prior
// knowledge.
func isH2Preface(br *bufio.Reader) bool {
	b, _ := br.Peek(min(br.Buffered(), len(http2.ClientPreface)))
	return len(b) >= len("PRI * HTTP/2.0") && bytes.HasPrefix([]byte(http2.ClientPreface), b)
}

// RefusedHTTP2 is the debug data of the GOAWAY that a door which speaks
// HTTP/1.1 only answers an HTTP/2 preface with.
const RefusedHTTP2 = "this door speaks HTTP/1.1 only, and no request on this connection was read or carried out; an app's HTTP/2 (gRPC, h2c) goes to its own Delta's local API or a forward"

// refuseHTTP2 answers an HTTP/2 client on a door that speaks HTTP/1.1
// only in the client's own protocol, so that it can say what happened
// rather than fail to parse an HTTP/1.1 answer: the server's SETTINGS,
// then GOAWAY with HTTP_1_1_REQUIRED, no stream processed (last stream
// 0: nothing was carried out, and a client may retry elsewhere), and
// RefusedHTTP2 as its debug data. Then the connection is closed.
func (c *conn) refuseHTTP2() {
	c.rwc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	bw := bufio.NewWriter(c.rwc)
	fr := http2.NewFramer(bw, nil)
	fr.WriteSettings()
	fr.WriteGoAway(0, http2.ErrCodeHTTP11Required, []byte(RefusedHTTP2))
	bw.Flush()
	// What the client sent after its preface (its settings, its first
	// request) is read and dropped before the close, for a second at
	// most: a socket closed with unread bytes sends a reset, which can
	// reach the client before the GOAWAY and lose it.
	if hc, ok := c.rwc.(interface{ CloseWrite() error }); ok {
		hc.CloseWrite()
	}
	c.rwc.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, io.LimitReader(io.MultiReader(c.br, c.rwc), 1<<20))
	c.s.logf("http2: refused an HTTP/2 client from %s on a door that speaks HTTP/1.1 only", c.remote)
}
