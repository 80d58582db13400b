package peerclient

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/roads"
)

// KeptPings is a road keeper's probes of its lan and thunderbolt roads
// with their connection kept between probes: one a road (peer, road,
// address, interface), reused while it lasts (h1.Transport, whose idle
// limit, 45 s, is above the 30 s between two probes of a road believed up
// and below the door's 90 s).
//
// A ping answered on the kept connection is the road's check: it crossed
// the road both ways, as a new connection's would have. Any failure on it
// says nothing of the road (the peer's door closed it, this computer
// slept): the probe then goes as every probe went before, on a new
// connection whose verdict stands: dialled by the road's own dial (so
// reported to the router), told in PingWith's words (connectFailed,
// pingUnanswered, with the cause the Transport gives), a timeout still a
// timeout (the road held down). That connection is the one kept when it
// answers. So a road that dies between two probes is found by a new
// connection, as before, at most keptWait later.
//
// Why: a new connection a probe, both ways every 30 s between two idle
// Deltas, was about a quarter of an idle Delta's CPU on the lan road (a
// TCP and a TLS handshake on each side, 21 ms of CPU for the pair each
// time; with a kept connection, 9 ms: docs/benchmarks.md, "Probes on a
// kept connection…"). The tailnet road is probed every 5 minutes, longer
// than a connection is kept, and a connection closed 45 s after its
// probe would wake the tailnet again: its probes go on a connection of
// their own (Probe), closed at once.
type KeptPings struct {
	t h1.Transport

	mu     sync.Mutex
	closed bool
}

// keptWait bounds the wait for a ping's answer on a kept connection: a
// lan or thunderbolt peer answers in milliseconds; one that has not
// within a second is asked again on a new connection, whose verdict
// stands.
const keptWait = time.Second

// NewKeptPings returns a road keeper's probes with nothing kept yet.
func NewKeptPings() *KeptPings {
	k := &KeptPings{}
	k.t.MaxIdlePerHost = 1
	k.t.Dial = func(ctx context.Context, _ string) (net.Conn, error) {
		dial, _ := ctx.Value(keptDialKey{}).(func(context.Context) (net.Conn, error))
		if dial == nil {
			return nil, errNotKept
		}
		c, err := dial(ctx)
		if err != nil {
			return nil, &keptConnectError{err}
		}
		return c, nil
	}
	return k
}

// keptDialKey carries the dial of a probe's new connection to the
// Transport's Dial; without it, a probe takes a kept connection or none.
type keptDialKey struct{}

// errNotKept is a probe that found no kept connection for its road.
var errNotKept = errors.New("no connection kept for this road")

// keptConnectError is a probe's failure to connect (PingWith's "connect
// to … failed").
type keptConnectError struct{ err error }

func (e *keptConnectError) Error() string { return e.err.Error() }
func (e *keptConnectError) Unwrap() error { return e.err }

// Close closes the kept connections; a probe after it goes on a
// connection of its own, closed at once (Probe).
func (k *KeptPings) Close() {
	k.mu.Lock()
	k.closed = true
	k.mu.Unlock()
	k.t.CloseIdleConnections()
}

// keeps reports whether cand's probes keep their connection.
func (k *KeptPings) keeps(cand roads.Candidate) bool {
	if cand.Road == roads.Tailnet {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.closed
}

// Probe is peerclient.Probe with the road's connection kept (KeptPings):
// nil when cand's Delta answered 204, else why not. dial makes a new
// connection to cand and reports it to the router, as Probe's does.
func (k *KeptPings) Probe(ctx context.Context, cand roads.Candidate, tickets Tickets, dial func(context.Context) (net.Conn, error)) error {
	if !k.keeps(cand) {
		return Probe(ctx, cand, tickets, dial)
	}
	return probeVerdict(renewingOnce(cand, func(renew bool) (int, error) { return k.pingOnce(ctx, cand, tickets, dial, renew) }))
}

// pingOnce pings cand on its kept connection, else on a new one (which
// is kept when it answers), and returns the answer's status.
func (k *KeptPings) pingOnce(ctx context.Context, cand roads.Candidate, tickets Tickets, dial func(context.Context) (net.Conn, error), renew bool) (int, error) {
	tk, err := pingTicket(ctx, cand, tickets, renew)
	if err != nil {
		return 0, err
	}
	try := Try{Cand: cand, Ticket: tk}
	kctx, cancel := context.WithTimeout(ctx, keptWait)
	status, err := k.send(kctx, try)
	cancel()
	if err == nil {
		return status, nil
	}
	// Nothing kept, or the kept connection failed: a new connection's
	// verdict, in PingWith's words.
	status, err = k.send(context.WithValue(ctx, keptDialKey{}, dial), try)
	var ce *keptConnectError
	switch {
	case errors.As(err, &ce):
		return 0, connectFailed(cand, ce.err)
	case err != nil:
		return 0, pingUnanswered(cand, err)
	}
	return status, nil
}

// send pings try's road through the Transport, pooled under the road's
// own key: on a kept connection, or, with a dial in ctx (keptDialKey), on
// a new one when none is kept. The answer's body (none, or a refusal's
// few words) is read, so that its connection is kept.
func (k *KeptPings) send(ctx context.Context, try Try) (int, error) {
	req, err := PingRequest(ctx, try)
	if err != nil {
		return 0, err
	}
	req.Host = try.Cand.Address
	req.URL.Host = keptKey(try.Cand)
	resp, err := k.t.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	// The status is the answer; a body cut short only costs the
	// connection (the Transport does not keep it then).
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxSaid))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// keptKey is the key cand's kept connection is pooled under: its road,
// interface and address (the Transport takes a host with a port; the
// address ends with one).
func keptKey(cand roads.Candidate) string {
	return string(cand.Road) + "." + cand.Interface + "." + cand.Address
}
