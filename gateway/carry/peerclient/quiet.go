package peerclient

import (
	"context"
	"time"

	"github.com/delta-roads/delta/gateway/roads"
)

// QuietCheck is how long a connection that an exchange is using may carry
// nothing before its road is probed; it is probed again each QuietCheck
// while it stays so.
const QuietCheck = 10 * time.Second

// WatchQuiet watches, until ctx ends, the connections that exchanges are
// using (reads waiting for a head or a long-poll's body, an event stream,
// a call waiting for its owner, a session): when one has carried nothing
// for QuietCheck, its road is probed at once (roads.Suspecter), and again
// each QuietCheck while it stays quiet. A quiet answer is never evidence
// (DESIGN §2c): the exchange goes on, and only the probe's failure drops
// the road, which then cuts every exchange on it (roads.RoadLost). TCP
// keepalive (roadfacts.KeepAlive) watches the lan's and the cable's
// connections themselves; the probe is what finds a tailnet road gone
// (its userspace TCP keeps nothing alive) and a peer's Delta that hangs
// (its kernel answers keepalives).
//
// It sleeps while no connection is busy, and wakes when one becomes so.
func (c *Client) WatchQuiet(ctx context.Context) {
	s, ok := c.cfg.Router.(roads.Suspecter)
	if !ok {
		return
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	asked := map[quietRoad]time.Time{}
	for {
		wake := c.quiet.C() // taken before the look: a connection busy since wakes it
		next := c.lookQuiet(time.Now(), s, asked)
		if next <= 0 {
			c.quietIdle.Store(true)
			if c.anyBusy() { // became busy between the look and the flag
				c.quietIdle.Store(false)
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-wake:
				continue
			}
		}
		t.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// anyBusy reports whether an exchange uses one of the connections.
func (c *Client) anyBusy() bool {
	c.liveMu.Lock()
	defer c.liveMu.Unlock()
	for rc := range c.live {
		if rc.busy.Load() {
			return true
		}
	}
	return false
}

// quietRoad is one peer's road.
type quietRoad struct {
	peer string
	road roads.Road
}

// lookQuiet has the roads of the busy connections quiet for QuietCheck at
// now probed (each at most once a QuietCheck: asked), and returns how
// long until it should look again: 0 when no connection is busy.
func (c *Client) lookQuiet(now time.Time, s roads.Suspecter, asked map[quietRoad]time.Time) time.Duration {
	quiet := map[quietRoad]bool{}
	var next time.Duration
	soonest := func(d time.Duration) {
		if next == 0 || d < next {
			next = d
		}
	}
	c.liveMu.Lock()
	for rc := range c.live {
		if !rc.busy.Load() {
			continue
		}
		idle := now.Sub(time.Unix(0, rc.moved.Load()))
		if idle >= QuietCheck {
			quiet[quietRoad{rc.Cand.Peer, rc.Cand.Road}] = true
			soonest(QuietCheck)
		} else {
			soonest(QuietCheck - idle)
		}
	}
	c.liveMu.Unlock()
	for k := range quiet {
		if last, ok := asked[k]; ok && now.Sub(last) < QuietCheck {
			soonest(QuietCheck - now.Sub(last))
			continue
		}
		asked[k] = now
		s.Suspect(k.peer, k.road, "an exchange on it has carried nothing for "+QuietCheck.String())
	}
	for k, last := range asked {
		if !quiet[k] && now.Sub(last) >= QuietCheck {
			delete(asked, k)
		}
	}
	if next > 0 {
		next = max(next, 10*time.Millisecond)
	}
	return next
}
