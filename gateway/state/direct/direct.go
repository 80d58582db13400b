// Package direct keeps <state>/direct.json while Delta runs: each peer's
// lan and thunderbolt roads as the kits dial them, with read tickets, so
// that apps can read from a peer while this computer's Delta is down.
// Writes never go around Delta.
package direct

import (
	"context"
	"log/slog"
	"reflect"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/api/roadfacts"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/statedir"
)

// Reads is what a mode offers so that apps can read from a peer
// while this computer's Delta is down (its Tickets implement it): each
// peer's lan and thunderbolt roads as the kit dials them, and read
// tickets. Writes never go around Delta.
type Reads interface {
	// DirectRoads returns the peers with a lan or thunderbolt road, each
	// road with its address, local interface and certificate pin, and the
	// client certificate's files (tailnet mode; empty for plain TCP).
	DirectRoads() (peers []localapi.DirectPeer, cert, key string)
	// ReadTicket returns a ticket for peer that admits reads only.
	ReadTicket(ctx context.Context, peer string) (string, time.Time, error)
}

// Renew is how long before its expiry a read ticket in direct.json
// is renewed: tickets live ticket.Lifetime (10 minutes), so each is
// renewed every 5 minutes.
const Renew = 5 * time.Minute

// Config is what a Keeper works with. Every field is required.
type Config struct {
	// StateDir is where direct.json is written.
	StateDir string
	// Source is the mode's roads and read tickets.
	Source Reads
	// Router tells when the roads change (when it is
	// roads.StateWatchable).
	Router roads.Router
	// Self names this computer.
	Self func() localapi.Self
	Now  func() time.Time
	Log  *slog.Logger
}

// Keeper keeps direct.json (Keep), written again soon after Kick.
type Keeper struct {
	cfg  Config
	kick chan struct{}
}

// New returns a keeper over cfg; Keep runs it.
func New(cfg Config) *Keeper { return &Keeper{cfg: cfg, kick: make(chan struct{}, 1)} }

// Keep keeps <state>/direct.json until ctx ends: written at
// start, when the peers or their roads change (at most every 2 s), and
// when a read ticket is due for renewal. It is not removed at a stop: a
// clean stop (a person's Quit, an upgrade) is when apps need it, and its
// tickets' expiry bounds it.
func (k *Keeper) Keep(ctx context.Context) {
	src, log, now := k.cfg.Source, k.cfg.Log, k.cfg.Now
	held := map[string]localapi.DirectPeer{} // the tickets held, by peer
	var last []localapi.DirectPeer           // what was written last
	refresh := func() {
		peers, cert, key := src.DirectRoads()
		d := localapi.Direct{Written: now(), Self: k.cfg.Self().Name, ClientCert: cert, ClientKey: key, Peers: []localapi.DirectPeer{}}
		for _, p := range peers {
			if len(p.Roads) == 0 {
				continue
			}
			h := held[p.Name]
			if h.Expires.Sub(now()) < Renew {
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				t, exp, err := src.ReadTicket(ctx, p.Name)
				cancel()
				switch {
				case err == nil:
					h = localapi.DirectPeer{Ticket: t, Expires: exp}
				case h.Expires.After(now()):
					log.Warn("could not renew a read ticket for direct reads; the one held stays until it expires", "peer", p.Name, "expires", h.Expires, "err", err)
				default:
					log.Warn("could not get a read ticket for direct reads", "peer", p.Name, "err", err)
					h = localapi.DirectPeer{}
				}
				held[p.Name] = h
			}
			p.Ticket, p.Expires = h.Ticket, h.Expires
			for i := range p.Roads { // the kits connect as Delta does
				p.Roads[i].ConnectTimeoutMS = roadfacts.Road(p.Roads[i].Road).ConnectTimeout().Milliseconds()
			}
			d.Peers = append(d.Peers, p)
		}
		if last != nil && reflect.DeepEqual(last, d.Peers) {
			return // nothing new to write
		}
		if err := statedir.WriteDirect(k.cfg.StateDir, d); err != nil {
			if ctx.Err() == nil {
				log.Error("could not write direct.json; apps cannot read around this Delta while it is down", "err", err)
			}
			return
		}
		last = d.Peers
	}
	changed := func() <-chan struct{} { return nil }
	if w, ok := k.cfg.Router.(roads.StateWatchable); ok {
		changed = w.StateChanged // direct.json has no round trips
	}
	refresh()
	due := time.NewTicker(time.Minute) // tickets due for renewal
	defer due.Stop()
	var lastAt time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-due.C:
		case <-changed():
		case <-k.kick:
		}
		if wait := 2*time.Second - now().Sub(lastAt); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait): // a burst of changes is one look
			}
		}
		lastAt = now()
		refresh()
	}
}

// Kick asks Keep to write direct.json soon (a road came up).
func (k *Keeper) Kick() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}
