package peerclient

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
)

// pingTimeout bounds the answer to one ping once connected.
const pingTimeout = 5 * time.Second

// PingPeer (POST /v1/ping/{peer}, `delta ping`) asks peer's Delta on each
// of its roads, one after another, on a connection of its own (a pooled
// one would say nothing of the road), and tells the router what it
// learned (every dial is reported). A road held down is not dialled: its
// result says until when. Nothing reaches an app.
func (c *Client) PingPeer(ctx context.Context, peer string) ([]localapi.PingRoad, error) {
	router := c.cfg.Router
	if !router.Known(peer) {
		return nil, fmt.Errorf("%s: %w", roads.UnknownPeer(peer, roads.PeerNames(router)), roads.ErrUnknownPeer)
	}
	var out []localapi.PingRoad
	for _, p := range router.Peers() {
		if p.Name != peer {
			continue
		}
		for _, r := range p.Roads {
			out = append(out, c.pingRoad(ctx, peer, roads.Road(r.Road)))
		}
	}
	return out, nil
}

func (c *Client) pingRoad(ctx context.Context, peer string, road roads.Road) localapi.PingRoad {
	res := localapi.PingRoad{Road: string(road)}
	cand, err := c.cfg.Router.Choose(ctx, peer, road)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	cand.Next = nil // this road alone
	res.Address, res.Interface = cand.Address, cand.Interface
	status, connect, answer, err := c.Ping(ctx, cand)
	switch {
	case err != nil:
		res.Error = err.Error()
	case status != http.StatusNoContent:
		res.Error = fmt.Sprintf("%s's Delta answered the ping %d %s", peer, status, http.StatusText(status))
	default:
		res.OK = true
	}
	res.ConnectMillis, res.AnswerMillis = millis(connect), millis(answer)
	return res
}

// Ping connects to cand on a connection of its own (Dial: reported to
// the router) and pings it (PingWith).
func (c *Client) Ping(ctx context.Context, cand roads.Candidate) (status int, connect, answer time.Duration, err error) {
	return PingWith(ctx, cand, c.cfg.Tickets, func(ctx context.Context) (net.Conn, error) { return c.Dial(ctx, cand) })
}

// PingWith is the one ping of every mode and every asker (`delta ping`,
// the road keepers' probes): it connects with dial and sends GET
// /delta/v1/ping on that connection, with a ticket from tickets when
// cand's road needs one; a 401 (a stale ticket) renews it once and pings
// again, as calls do. It returns the answer's status and how long the
// connect and the answer took.
func PingWith(ctx context.Context, cand roads.Candidate, tickets Tickets, dial func(context.Context) (net.Conn, error)) (status int, connect, answer time.Duration, err error) {
	status, err = renewingOnce(cand, func(renew bool) (int, error) {
		var err error
		status, connect, answer, err = pingOnce(ctx, cand, tickets, dial, renew)
		return status, err
	})
	return status, connect, answer, err
}

// renewingOnce pings with ping, and once more with the ticket renewed
// when the peer refused it (401) on a road that needs one.
func renewingOnce(cand roads.Candidate, ping func(renew bool) (int, error)) (int, error) {
	status, err := ping(false)
	if err == nil && status == http.StatusUnauthorized && cand.NeedsTicket {
		status, err = ping(true)
	}
	return status, err
}

// pingTicket is the ticket a ping on cand carries: none on a road that
// needs none, else tickets', renewed when renew.
func pingTicket(ctx context.Context, cand roads.Candidate, tickets Tickets, renew bool) (string, error) {
	if !cand.NeedsTicket {
		return "", nil
	}
	tk, err := tickets.Ticket(ctx, cand.Peer, renew)
	if err != nil {
		return "", fmt.Errorf("no ticket for %s: %w", cand.Peer, err)
	}
	return tk, nil
}

// A ping's two failures, in the words of every ping: the connect, and
// no answer on a connection made.
func connectFailed(cand roads.Candidate, err error) error {
	return fmt.Errorf("connect to %s failed: %w", cand, err)
}

func pingUnanswered(cand roads.Candidate, err error) error {
	return fmt.Errorf("%s connected but did not answer the ping: %w", cand, err)
}

// Probe is PingWith for a road keeper's probe: nil when cand's Delta
// answered 204, else why not.
func Probe(ctx context.Context, cand roads.Candidate, tickets Tickets, dial func(context.Context) (net.Conn, error)) error {
	status, _, _, err := PingWith(ctx, cand, tickets, dial)
	return probeVerdict(status, err)
}

// probeVerdict is a probe's: nil for a 204, else why not.
func probeVerdict(status int, err error) error {
	if err == nil && status != http.StatusNoContent {
		err = fmt.Errorf("ping answered %d %s", status, http.StatusText(status))
	}
	return err
}

func pingOnce(ctx context.Context, cand roads.Candidate, tickets Tickets, dial func(context.Context) (net.Conn, error), renew bool) (status int, connect, answer time.Duration, err error) {
	tk, err := pingTicket(ctx, cand, tickets, renew)
	if err != nil {
		return 0, 0, 0, err
	}
	start := time.Now()
	rc, err := dial(ctx)
	connect = time.Since(start)
	if err != nil {
		return 0, connect, 0, connectFailed(cand, err)
	}
	actx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	start = time.Now()
	reply, err := Ping(actx, Try{Cand: cand, Ticket: tk}, rc)
	answer = time.Since(start)
	if err != nil {
		return 0, connect, answer, pingUnanswered(cand, err)
	}
	return reply.Status, connect, answer, nil
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
