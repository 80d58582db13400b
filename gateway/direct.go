package gateway

import (
	"context"
	"reflect"
	"time"

	"github.com/delta-roads/delta/gateway/localapi"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/statedir"
)

// DirectReads is what a mode offers so that apps can read from a peer
// while this computer's Delta is down (its Tickets implement it): each
// peer's lan and thunderbolt roads as the kit dials them, and read
// tickets. Writes never go around Delta.
type DirectReads interface {
	// DirectRoads returns the peers with a lan or thunderbolt road, each
	// road with its address, local interface and certificate pin, and the
	// client certificate's files (tailnet mode; empty for plain TCP).
	DirectRoads() (peers []localapi.DirectPeer, cert, key string)
	// ReadTicket returns a ticket for peer that admits reads only.
	ReadTicket(ctx context.Context, peer string) (string, time.Time, error)
}

// DirectRenew is how long before its expiry a read ticket in direct.json
// is renewed: tickets live ticket.Lifetime (10 minutes), so each is
// renewed every 5 minutes.
const DirectRenew = 5 * time.Minute

// keepDirect keeps <state>/direct.json while the gateway runs: written at
// start, when the peers or their roads change (at most every 2 s), and
// when a read ticket is due for renewal. It is not removed at a stop: a
// clean stop (a person's Quit, an upgrade) is when apps need it, and its
// tickets' expiry bounds it.
func (g *Gateway) keepDirect(src DirectReads) {
	held := map[string]localapi.DirectPeer{} // the tickets held, by peer
	var last []localapi.DirectPeer           // what was written last
	refresh := func() {
		peers, cert, key := src.DirectRoads()
		d := localapi.Direct{Written: g.now(), Self: g.Self().Name, ClientCert: cert, ClientKey: key, Peers: []localapi.DirectPeer{}}
		for _, p := range peers {
			if len(p.Roads) == 0 {
				continue
			}
			h := held[p.Name]
			if h.Expires.Sub(g.now()) < DirectRenew {
				ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
				t, exp, err := src.ReadTicket(ctx, p.Name)
				cancel()
				switch {
				case err == nil:
					h = localapi.DirectPeer{Ticket: t, Expires: exp}
				case h.Expires.After(g.now()):
					g.log.Warn("could not renew a read ticket for direct reads; the one held stays until it expires", "peer", p.Name, "expires", h.Expires, "err", err)
				default:
					g.log.Warn("could not get a read ticket for direct reads", "peer", p.Name, "err", err)
					h = localapi.DirectPeer{}
				}
				held[p.Name] = h
			}
			p.Ticket, p.Expires = h.Ticket, h.Expires
			d.Peers = append(d.Peers, p)
		}
		if last != nil && reflect.DeepEqual(last, d.Peers) {
			return // nothing new to write
		}
		if err := statedir.WriteDirect(g.cfg.StateDir, d); err != nil {
			if g.ctx.Err() == nil {
				g.log.Error("could not write direct.json; apps cannot read around this Delta while it is down", "err", err)
			}
			return
		}
		last = d.Peers
	}
	changed := func() <-chan struct{} { return nil }
	if w, ok := g.router.(roads.Watchable); ok {
		changed = w.Changed
	}
	refresh()
	due := time.NewTicker(time.Minute) // tickets due for renewal
	defer due.Stop()
	var lastAt time.Time
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-due.C:
		case <-changed():
		case <-g.directKick:
		}
		if wait := 2*time.Second - g.now().Sub(lastAt); wait > 0 {
			select {
			case <-g.ctx.Done():
				return
			case <-time.After(wait): // a burst of changes is one look
			}
		}
		lastAt = g.now()
		refresh()
	}
}

// kickDirect asks keepDirect to write direct.json soon (a road came up).
func (g *Gateway) kickDirect() {
	select {
	case g.directKick <- struct{}{}:
	default:
	}
}
