package owner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/relay"
	"github.com/delta-roads/delta/gateway/carry/session"
	"github.com/delta-roads/delta/gateway/carry/transfer"
	"github.com/delta-roads/delta/gateway/net/doors"
	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// ownerSession opens a session with the app (DESIGN §2a): the upgrade
// request is forwarded once, on a connection of its own; after the app's
// 101 the caller's connection is taken from the server and bytes are
// relayed both ways until either end closes. An app that does not switch
// gives its answer as a read would.
func (o *Owner) ownerSession(w http.ResponseWriter, r *http.Request, t ownerTarget) {
	if tr := o.cfg.Transfers; tr != nil {
		release, ok := tr.AdmitSession()
		if !ok {
			refuse(w, http.StatusServiceUnavailable, proto.PeerBusy, fmt.Sprintf("%s has %d sessions open, as many as it keeps at once", o.cfg.Self().Name, transfer.MaxSessions))
			return
		}
		defer release()
	}
	defer doors.HijackDone(r.Context()) // the caller's connection, once the session ends
	upgrade := r.Header.Get("Upgrade")
	ctx, cancel := context.WithCancel(o.cfg.Ctx)
	defer cancel()
	conn, err := appDialer.DialContext(r.Context(), "tcp", t.app.URL[len("http://"):])
	if err != nil {
		refuse(w, http.StatusServiceUnavailable, proto.PeerAppDown, fmt.Sprintf("app %s on %s is not listening (%v)", t.app.Name, o.cfg.Self().Name, err))
		return
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, t.app.URL+t.pathQuery, http.NoBody)
	if err != nil {
		conn.Close()
		refuse(w, http.StatusBadRequest, proto.PeerBadRequest, "the session does not make a request to the app ("+err.Error()+")")
		return
	}
	req.Header = proto.ForwardHeaders(r.Header)
	session.Request(req.Header, upgrade)
	o.appHeaders(req, t, t.timeout)
	a, err := h1.Once(ctx, conn, req, h1.Options{Wait: t.timeout, QuickAck: true})
	if err != nil {
		var oe *h1.Error
		if errors.As(err, &oe) && !oe.Sent {
			refuse(w, http.StatusServiceUnavailable, proto.PeerAppDown, fmt.Sprintf("app %s on %s did not take the session (%v)", t.app.Name, o.cfg.Self().Name, err))
			return
		}
		peerError(w, http.StatusBadGateway, proto.PeerUnknown, fmt.Sprintf("app %s on %s did not answer the session's opening (%v)", t.app.Name, o.cfg.Self().Name, err))
		return
	}
	h := a.Header.Clone()
	proto.StripDelta(h)
	if a.StatusCode != http.StatusSwitchingProtocols {
		// The app declined: its answer, as a read's.
		defer a.Body.Close()
		relay.Relay(w, relay.Answer{Status: a.StatusCode, Header: h, Length: a.ContentLength, Trailer: &a.Trailer, Method: r.Method,
			Set: []string{localapi.HeaderOutcome, string(proto.PeerAnswered)}, Ready: a.Buffered() > 0, Body: a.Body})
		return
	}
	appConn, appR := a.Switched()
	h.Set(localapi.HeaderOutcome, string(proto.PeerAnswered))
	near, nearR, err := session.Take(w, h)
	if err != nil {
		appConn.Close()
		if errors.Is(err, session.ErrNotTaken) {
			peerError(w, http.StatusInternalServerError, proto.PeerUnknown, fmt.Sprintf("%s could not take the caller's connection for the session (%v)", o.cfg.Self().Name, err))
		}
		return
	}
	var x *transfer.Transfer
	if o.cfg.Transfers != nil {
		x = o.cfg.Transfers.Start(localapi.TransferSession, t.visitor.Name, t.app.Name, t.pathQuery, "in")
		defer x.Done()
	}
	defer o.sessions.add(near)()
	// The app's side is the near one here; the caller's Delta is far.
	session.Relay(appConn, appR, near, nearR, x)
}

// sessions are the sessions open on this owner, by the interface their
// caller's connection came in on, so that a lost interface closes them at
// once (the caller's side sees it through netwatch; this side must too,
// or an idle session would wait for TCP to give up).
type sessions struct {
	mu   sync.Mutex
	open map[net.Conn]string // → interface name ("" for none: the tailnet)
}

// add registers conn as open and returns what unregisters it.
func (s *sessions) add(conn net.Conn) func() {
	iface := interfaceOf(conn.LocalAddr())
	s.mu.Lock()
	s.open[conn] = iface
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.open, conn)
		s.mu.Unlock()
	}
}

// interfaceOf names the local interface that holds addr's IP, or "".
func interfaceOf(addr net.Addr) string {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return ""
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if in, ok := a.(*net.IPNet); ok && in.IP.Equal(ta.IP) && !in.IP.IsLoopback() {
				return ifc.Name
			}
		}
	}
	return ""
}

// InterfaceLost closes the sessions that came in on iface, which went
// down, lost its address or vanished; it returns how many.
func (o *Owner) InterfaceLost(iface string) int {
	var drop []net.Conn
	o.sessions.mu.Lock()
	for c, name := range o.sessions.open {
		if name == iface {
			drop = append(drop, c)
		}
	}
	o.sessions.mu.Unlock()
	for _, c := range drop {
		// Closing is the point; an error means it was closed already.
		_ = c.Close()
	}
	return len(drop)
}

// CloseIdle closes the connections kept to apps that speak HTTP/2 (each
// has a reader of its own), when Delta stops.
func (o *Owner) CloseIdle() {
	o.h2Once.Do(func() {}) // after the first h2Transport, if any
	if o.h2 != nil {
		o.h2.CloseIdleConnections()
	}
}
