package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/delta-roads/delta/gateway/localapi"
	"github.com/delta-roads/delta/gateway/peerclient"
	"github.com/delta-roads/delta/gateway/proto"
	"github.com/delta-roads/delta/gateway/roads"
)

// pingTimeout bounds the answer to one ping once connected.
const pingTimeout = 5 * time.Second

// Ping (POST /v1/ping/{peer}, `delta ping`) asks peer's Delta on each of its roads, one after another, on a
// connection of its own (a pooled one would say nothing of the road), and
// tells the router what it learned. A road held down is not dialled: its
// result says until when. Nothing reaches an app.
func (g *Gateway) Ping(ctx context.Context, peer string) ([]localapi.PingRoad, error) {
	if !g.router.Known(peer) {
		return nil, fmt.Errorf("%s: %w", roads.UnknownPeer(peer, roads.PeerNames(g.router)), roads.ErrUnknownPeer)
	}
	var known []roads.Road
	for _, p := range g.router.Peers() {
		if p.Name == peer {
			for _, r := range p.Roads {
				known = append(known, roads.Road(r.Road))
			}
		}
	}
	var out []localapi.PingRoad
	for _, road := range known {
		out = append(out, g.pingRoad(ctx, peer, road))
	}
	return out, nil
}

func (g *Gateway) pingRoad(ctx context.Context, peer string, road roads.Road) localapi.PingRoad {
	res := localapi.PingRoad{Road: string(road)}
	cand, err := g.router.Choose(ctx, peer, road)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	cand.Next = nil // this road alone
	res.Address, res.Interface = cand.Address, cand.Interface
	for renew := false; ; renew = true {
		status, connect, answer, err := g.pingOnce(ctx, cand, renew)
		switch {
		case err != nil:
			res.Error = err.Error()
		case status == http.StatusUnauthorized && !renew && cand.NeedsTicket:
			continue // a stale ticket: renew it once, as calls do
		case status != http.StatusNoContent:
			res.Error = fmt.Sprintf("%s's Delta answered the ping %d %s", peer, status, http.StatusText(status))
		default:
			res.OK = true
		}
		res.ConnectMillis, res.AnswerMillis = millis(connect), millis(answer)
		return res
	}
}

// pingOnce connects to cand (reported to the router, as every dial is) and
// sends GET /delta/v1/ping on that connection.
func (g *Gateway) pingOnce(ctx context.Context, cand roads.Candidate, renew bool) (status int, connect, answer time.Duration, err error) {
	tk := ""
	if cand.NeedsTicket {
		if tk, err = g.ticket.Ticket(ctx, cand.Peer, renew); err != nil {
			return 0, 0, 0, fmt.Errorf("no ticket for %s: %w", cand.Peer, err)
		}
	}
	start := time.Now()
	rc, err := g.pc.Dial(ctx, cand)
	connect = time.Since(start)
	if err != nil {
		return 0, connect, 0, fmt.Errorf("connect to %s failed: %w", cand, err)
	}
	actx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	start = time.Now()
	reply, err := peerclient.Ping(actx, peerclient.Try{Cand: cand, Ticket: tk}, rc)
	answer = time.Since(start)
	if err != nil {
		return 0, connect, answer, fmt.Errorf("%s connected but did not answer the ping: %w", cand, err)
	}
	return reply.Status, connect, answer, nil
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (g *Gateway) handlePing(w http.ResponseWriter, r *http.Request) {
	peer := r.PathValue("peer")
	if err := proto.CheckName("peer", peer); err != nil {
		localError(w, proto.BadRequest, err.Error())
		return
	}
	res, err := g.Ping(r.Context(), peer)
	if errors.Is(err, roads.ErrUnknownPeer) {
		localError(w, proto.NotFound, err.Error())
		return
	}
	proto.WriteJSON(w, http.StatusOK, map[string]any{"peer": peer, "roads": res})
}
