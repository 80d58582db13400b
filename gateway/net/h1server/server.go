// Package h1server is the HTTP/1.1 server of Delta's doors (the local API
// and every peer listener). It serves a request without a body on its
// connection's own goroutine and hands everything else, with the bytes
// it has read, to a net/http server made from the same configuration.
//
// Why: net/http starts a goroutine for every request to watch for the
// client hanging up (connReader.startBackgroundRead), and stops it when
// the handler returns; on a small read that is most of the thread
// wake-ups a Delta pays (docs/benchmarks.md, "A read beside the Go
// floor"). Here, a request's hang-up watch starts only once its handler
// has run for WatchAfter: a quick answer never starts one, and a slow
// one (a long-poll, a read waiting for its owner) is still cancelled when
// its client goes away.
//
// What is served here: an HTTP/1.1 GET or HEAD in origin form, with one
// valid Host header, valid header names and values, no body (no
// Content-Length but 0, no Transfer-Encoding), no Expect and no Upgrade,
// whose head fits in the connection's 4 KiB buffer. Its answer is framed
// exactly as net/http frames it (response.go). Anything else (another
// method, so every call, handed over as soon as its method is read; a
// body, a 100-continue, an upgrade, HTTP/1.0, a malformed head) is served
// by net/http from then on, for the rest of its connection, so net/http's
// own checks and errors apply unchanged. A handed connection keeps its
// ConnState and ConnContext (the hooks see the connection accepted, a
// plain TCP one as rawsock.Wrap makes it, not the wrapper net/http gets)
// and its TLS state (Request.TLS).
package h1server

import (
	"context"
	"crypto/tls"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delta-roads/delta/gateway/net/rawsock"
)

// WatchAfter is how long a handler runs before its connection is watched
// for the client hanging up (which ends the request's context).
const WatchAfter = 10 * time.Millisecond

// Server serves HTTP/1.1 as its http.Server would: its Handler,
// ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout, ErrorLog,
// ConnState, ConnContext and BaseContext.
type Server struct {
	srv    *http.Server
	handed *http.Server // serves the connections handed over

	shutting atomic.Bool

	mu        sync.Mutex
	listeners map[*net.Listener]struct{}
	conns     map[*conn]bool // each connection served here: idle (waiting for a request)?
}

// New makes the server that serves as srv would. srv itself is not
// started; its fields are read as the server needs them.
func New(srv *http.Server) *Server {
	s := &Server{srv: srv, listeners: map[*net.Listener]struct{}{}, conns: map[*conn]bool{}}
	s.handed = &http.Server{Handler: srv.Handler, ReadHeaderTimeout: srv.ReadHeaderTimeout, ReadTimeout: srv.ReadTimeout,
		WriteTimeout: srv.WriteTimeout, IdleTimeout: srv.IdleTimeout, MaxHeaderBytes: srv.MaxHeaderBytes, ErrorLog: srv.ErrorLog,
		DisableGeneralOptionsHandler: srv.DisableGeneralOptionsHandler, BaseContext: srv.BaseContext,
		// HTTP/2 with prior knowledge, where the door speaks it, is
		// net/http's too: its preface is never a request served here.
		Protocols: srv.Protocols,
		// A handed connection is the one accepted here, to the hooks:
		// counted new once (here), closed once (by net/http).
		ConnState: func(c net.Conn, st http.ConnState) {
			if st != http.StateNew && srv.ConnState != nil {
				srv.ConnState(accepted(c), st)
			}
		},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if srv.ConnContext != nil {
				return srv.ConnContext(ctx, accepted(c))
			}
			return ctx
		}}
	return s
}

// Serve accepts connections on ln until Shutdown or Close (then it
// returns http.ErrServerClosed) or until ln fails.
func (s *Server) Serve(ln net.Listener) error {
	orig := ln
	ln = &onceCloseListener{Listener: ln}
	defer ln.Close() // as net/http's: a listener served is closed when Serve returns
	if !s.track(&ln, true) {
		return http.ErrServerClosed
	}
	defer s.track(&ln, false)
	base := context.Background()
	if s.srv.BaseContext != nil {
		base = s.srv.BaseContext(orig)
	}
	base = context.WithValue(base, http.ServerContextKey, s.srv)
	var delay time.Duration // after a temporary failure to accept, as net/http
	for {
		rw, err := ln.Accept()
		if err != nil {
			if s.shutting.Load() {
				return http.ErrServerClosed
			}
			if te, ok := err.(interface{ Temporary() bool }); ok && te.Temporary() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.logf("http: Accept error: %v; retrying in %v", err, delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		rw = rawsock.Wrap(rw)
		c := s.newConn(rw, base)
		s.setState(rw, http.StateNew)
		go c.serve()
	}
}

// Shutdown stops accepting, closes idle connections, and waits for the
// others to finish their requests and close, or for ctx to end (its
// error). Connections handed to net/http are shut down by it.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutting.Store(true)
	s.closeListeners()
	handed := make(chan error, 1)
	go func() { handed <- s.handed.Shutdown(ctx) }()
	wait := time.Millisecond
	t := time.NewTimer(wait)
	defer t.Stop()
	for !s.closeIdle() {
		select {
		case <-ctx.Done():
			<-handed
			return ctx.Err()
		case <-t.C:
			wait = min(2*wait, 500*time.Millisecond)
			t.Reset(wait)
		}
	}
	return <-handed
}

// Close closes the listeners and every connection at once.
func (s *Server) Close() error {
	s.shutting.Store(true)
	s.closeListeners()
	s.mu.Lock()
	for c := range s.conns {
		c.rwc.Close()
	}
	s.mu.Unlock()
	return s.handed.Close()
}

func (s *Server) track(ln *net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.shutting.Load() {
			return false
		}
		s.listeners[ln] = struct{}{}
	} else {
		delete(s.listeners, ln)
	}
	return true
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ln := range s.listeners {
		(*ln).Close()
	}
}

// closeIdle closes the connections waiting for a request and reports
// whether none is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, idle := range s.conns {
		if idle {
			c.rwc.Close()
		}
	}
	return len(s.conns) == 0
}

func (s *Server) setIdle(c *conn, idle bool) {
	s.mu.Lock()
	if _, ok := s.conns[c]; ok {
		s.conns[c] = idle
	}
	s.mu.Unlock()
	if s.shutting.Load() && idle {
		c.rwc.Close()
	}
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (s *Server) setState(c net.Conn, st http.ConnState) {
	if s.srv.ConnState != nil {
		s.srv.ConnState(c, st)
	}
}

func (s *Server) logf(format string, args ...any) {
	if s.srv.ErrorLog != nil {
		s.srv.ErrorLog.Printf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}

// onceCloseListener closes its listener once, however many close it.
type onceCloseListener struct {
	net.Listener
	once sync.Once
	err  error
}

func (l *onceCloseListener) Close() error {
	l.once.Do(func() { l.err = l.Listener.Close() })
	return l.err
}

// oneConn is the listener of one connection handed to net/http: its
// Serve, run on the connection's own goroutine, takes the connection and
// returns at the next Accept (no goroutine of the server's is woken to
// take it; net/http starts the connection's own).
type oneConn struct {
	c     net.Conn
	taken bool
}

var errOneConn = errors.New("h1server: one connection handed over")

func (l *oneConn) Accept() (net.Conn, error) {
	if l.taken {
		return nil, errOneConn
	}
	l.taken = true
	return l.c, nil
}

func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return l.c.LocalAddr() }

// handedConn is a connection handed to net/http: what was read of it
// already, then the connection.
type handedConn struct {
	net.Conn
	pre []byte
}

func (h *handedConn) Read(p []byte) (int, error) {
	if len(h.pre) > 0 {
		n := copy(p, h.pre)
		h.pre = h.pre[n:]
		return n, nil
	}
	return h.Conn.Read(p)
}

// CloseWrite is net/http's way to end a connection after an error answer
// while the client may still write.
func (h *handedConn) CloseWrite() error {
	if cw, ok := h.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// handedTLS is a handed TLS connection: net/http takes Request.TLS from
// ConnectionState.
type handedTLS struct {
	*handedConn
	tls *tls.Conn
}

func (h handedTLS) ConnectionState() tls.ConnectionState { return h.tls.ConnectionState() }

func hand(c net.Conn, pre []byte) net.Conn {
	h := &handedConn{Conn: c, pre: pre}
	if tc, ok := c.(*tls.Conn); ok {
		return handedTLS{h, tc}
	}
	return h
}

// accepted is the connection accepted here beneath one handed to net/http.
func accepted(c net.Conn) net.Conn {
	switch h := c.(type) {
	case *handedConn:
		return h.Conn
	case handedTLS:
		return h.Conn
	}
	return c
}
