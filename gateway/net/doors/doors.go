// Package doors is the plumbing of Delta's doors, the local API and every
// peer listener: the server each one is (Server: an h1server.Server over
// the http.Server it configures), its limits (a
// request's head, a whole request, an idle keep-alive, connections per
// source), a refused connection's last answer (RefuseAndClose), and the
// summarized log of refusals (RefusalLog).
package doors

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/net/h1server"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// Limits bound what a client may take of a listener.
type Limits struct {
	// Header is how long a client has for its request's headers; Request
	// for the whole request, its body included (a body announced and
	// never sent is dropped then). Idle closes a keep-alive connection no
	// request uses. The handler itself is not bounded: a call waiting for
	// its owner, a long-poll, an event stream run as long as their client
	// waits (DESIGN §2c: the server lifts the read deadline once the body
	// is read, and still sees a client that goes away).
	Header, Request, Idle time.Duration
	// PerSource caps the connections one source address holds at once
	// (0: no cap); one over it is answered Busy (nothing is carried out)
	// and closed, given BusyWithin to send its request's head, and
	// OnRefused told its remote address.
	PerSource int
	OnRefused func(remote string)
	// Busy writes the refusal of a connection over the cap (before it
	// the connection is marked to close). If nil, a 503 door_busy.
	Busy func(w http.ResponseWriter)
	// HTTP2: the door also speaks HTTP/2 in cleartext with prior
	// knowledge (h2c), as gRPC clients and curl --http2-prior-knowledge
	// do, beside HTTP/1.1 on the same port: the local API and the
	// forwards. A door without it answers an HTTP/2 preface with a
	// GOAWAY that says it speaks HTTP/1.1 only (h1server).
	HTTP2 bool
}

// CheckSecret says why an Authorization header does not carry secret, or
// "": "Bearer <secret>", or Basic credentials with the secret as the
// password and any user name (what restic's rest:http://delta:SECRET@…
// and a browser's prompt send). where names the secret for a person (the
// file that holds it, the command that shows it). The comparison takes
// the same time whatever matches.
func CheckSecret(auth, secret, where string) string {
	if auth == "" {
		return "the request has no Authorization header (Bearer <secret>, or Basic with the secret as the password; it is " + where + ")"
	}
	scheme, cred, _ := strings.Cut(auth, " ")
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		if !sameSecret(strings.TrimSpace(cred), secret) {
			return "the bearer token does not match " + where
		}
	case strings.EqualFold(scheme, "Basic"):
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
		if err != nil {
			return "the Authorization header's Basic credentials are not base64"
		}
		_, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return "the Authorization header's Basic credentials are not USER:PASSWORD"
		}
		if !sameSecret(pass, secret) {
			return "the Basic password does not match " + where + " (any user name, the secret as the password)"
		}
	default:
		return "the Authorization header is neither \"Bearer <secret>\" nor Basic credentials with the secret as the password"
	}
	return ""
}

func sameSecret(have, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(have), []byte(want)) == 1
}

// BusyWithin is how long a connection over its source's cap has to send
// its request's head, to be told it was refused.
const BusyWithin = 2 * time.Second

// Server is the server of each of Delta's doors (the local API, every
// peer listener, every forward), with its limits: h1server's, which
// serves a GET or HEAD without a body on its connection's goroutine and
// hands the rest to net/http, configured as this http.Server.
func Server(h http.Handler, errLog *log.Logger, l Limits) *h1server.Server {
	// OPTIONS * reaches the handler, which refuses it after its guard
	// (DESIGN §2a), instead of Go's general answer of 200.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: l.Header, ReadTimeout: l.Request, IdleTimeout: l.Idle, ErrorLog: errLog,
		DisableGeneralOptionsHandler: true}
	if l.HTTP2 {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	if l.PerSource > 0 {
		sc := &sourceCap{max: l.PerSource, refused: l.OnRefused, n: map[string]int{}, conns: map[net.Conn]string{}, over: map[net.Conn]bool{}}
		srv.ConnState = sc.state
		srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, capKey{}, &capHold{cap: sc, conn: c})
		}
		busy := l.Busy
		if busy == nil {
			busy = func(w http.ResponseWriter) {
				proto.WriteError(w, http.StatusServiceUnavailable, localapi.ErrorBody{Error: string(proto.PeerBusy), Detail: proto.NotCarriedOut(fmt.Sprintf("this door holds %d connections from one source at once, and this one is over", l.PerSource))}.With(localapi.NotCarried))
			}
		}
		srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hold, ok := r.Context().Value(capKey{}).(*capHold); ok && hold.cap.isOver(hold.conn) {
				RefuseAndClose(w)
				busy(w)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	return h1server.New(srv)
}

type capKey struct{}

// capHold is a connection of a door with a per-source cap, as its
// requests' contexts know it.
type capHold struct {
	cap  *sourceCap
	conn net.Conn
}

// HijackDone says that the connection a request of ctx came on, taken from
// its server for a session (Hijack), is closed: until then it counts
// against its source's cap, as it did while the server had it. A no-op
// for a connection not taken, or a door without a cap; call it once the
// session has ended (defer it before taking the connection).
func HijackDone(ctx context.Context) {
	if h, ok := ctx.Value(capKey{}).(*capHold); ok {
		h.cap.release(h.conn)
	}
}

// sourceCap counts each source's connections from the server's ConnState
// hook: counted when new, released when closed (once per connection), or,
// for one taken from the server for a session (hijacked), when the session
// says it closed (HijackDone); closed at once when over the cap. A hook rather
// than a wrapped listener keeps *tls.Conn visible to the server. The
// source is remembered per connection: a closed connection may no longer
// know its remote address (tsnet's do not).
type sourceCap struct {
	max     int
	refused func(string)

	mu    sync.Mutex
	n     map[string]int
	conns map[net.Conn]string
	over  map[net.Conn]bool // accepted over the cap: answered Busy, closed
}

// isOver reports whether conn was accepted over its source's cap.
func (c *sourceCap) isOver(conn net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.over[conn]
}

func (c *sourceCap) state(conn net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		remote := "unknown"
		if a := conn.RemoteAddr(); a != nil {
			remote = a.String()
		}
		src := remote
		if h, _, err := net.SplitHostPort(remote); err == nil {
			src = h
		}
		c.mu.Lock()
		c.conns[conn] = src
		c.n[src]++
		over := c.n[src] > c.max
		c.mu.Unlock()
		if over {
			// Answered Busy, not closed unanswered: a caller then knows
			// nothing was carried out. It has BusyWithin for its head.
			c.mu.Lock()
			c.over[conn] = true
			c.mu.Unlock()
			conn.SetDeadline(time.Now().Add(BusyWithin))
			if c.refused != nil {
				c.refused(remote)
			}
		}
	case http.StateClosed:
		c.release(conn)
	}
}

// release stops counting conn, once.
func (c *sourceCap) release(conn net.Conn) {
	c.mu.Lock()
	delete(c.over, conn)
	if src, ok := c.conns[conn]; ok {
		delete(c.conns, conn)
		if c.n[src]--; c.n[src] <= 0 {
			delete(c.n, src)
		}
	}
	c.mu.Unlock()
}

// RefuseAndClose makes the answer written to w the connection's last:
// Connection: close, and no wait for a body the client announced (the
// server would otherwise read up to 256 KiB of it first, and a body that
// never comes would hold the connection). Call it before writing.
func RefuseAndClose(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	// Past the answer, reads of the request body fail at once. An error
	// means the writer cannot set deadlines (a test recorder): nothing to
	// cut short.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}
