package peerclient

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/roads"
)

// A connect in flight is joined, not repeated: a caller that needs a road
// while a connect on that same road (peer, road, address, interface) is
// under way waits for that connect's verdict instead of dialling its own.
// On failure every waiter fails at that moment with the same cause, and
// the connect that ran is reported to the router as it fails (which arms
// the hold-down once, at once). On success each waiter dials its own connection, at
// once: the road is known to be up, and a call never goes out on another
// call's connection.

// verdictGrace is how long a failed connect's verdict is handed to
// callers that arrive after it (see joinDial).
const verdictGrace = 250 * time.Millisecond

// flight is one connect in flight.
type flight struct {
	done chan struct{}
	err  error
	// abandoned: the connect ended because its own caller's context did,
	// which says nothing of the road; waiters connect for themselves.
	abandoned bool
	waiting   int // callers waiting on it (under flights.mu)
}

// flights are the connects in flight, by road.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

func flightKey(c roads.Candidate) string {
	return c.Peer + "\x00" + string(c.Road) + "\x00" + c.Address + "\x00" + c.Interface
}

// JoinedError is the failure of a connect in flight that this caller
// joined instead of dialling. It says the same as the connect's own error.
type JoinedError struct{ Err error }

func (e *JoinedError) Error() string { return e.Err.Error() }
func (e *JoinedError) Unwrap() error { return e.Err }

// joined returns cand (and the roads it races) with each Dial joining a
// connect already in flight on that road.
func (c *Client) joined(cand roads.Candidate) roads.Candidate {
	cand.Dial = c.joinDial(cand)
	if len(cand.Next) > 0 {
		next := make([]roads.Candidate, len(cand.Next))
		for i, n := range cand.Next {
			n.Dial = c.joinDial(n)
			next[i] = n
		}
		cand.Next = next
	}
	return cand
}

func (c *Client) joinDial(cand roads.Candidate) func(ctx context.Context) (net.Conn, error) {
	dial, key, road := cand.Dial, flightKey(cand), cand.Road
	return func(ctx context.Context) (net.Conn, error) {
		for {
			c.fl.mu.Lock()
			if f := c.fl.m[key]; f != nil {
				f.waiting++
				c.fl.mu.Unlock()
				select {
				case <-f.done:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				if f.abandoned {
					continue // not a verdict on the road: try for ourselves
				}
				if f.err != nil {
					c.cfg.OnConnect(road, true)
					return nil, &JoinedError{Err: f.err}
				}
				c.cfg.OnConnect(road, false)
				return dial(ctx) // the road is up: a connection of our own
			}
			f := &flight{done: make(chan struct{})}
			if c.fl.m == nil {
				c.fl.m = map[string]*flight{}
			}
			c.fl.m[key] = f
			c.fl.mu.Unlock()
			c.cfg.OnConnect(road, false)
			conn, err := dial(ctx)
			f.err, f.abandoned = err, err != nil && ctx.Err() != nil
			if err != nil && !f.abandoned {
				// Told at once, not when a race that raced it ends: a
				// timeout arms the road's hold-down for the callers still
				// to come. A connect its caller stopped waiting for is no
				// verdict on the road (DESIGN §2c).
				c.cfg.Router.Report(cand, 0, err)
			}
			close(f.done)
			if err == nil || f.abandoned {
				c.fl.mu.Lock()
				delete(c.fl.m, key)
				c.fl.mu.Unlock()
				return conn, err
			}
			// A failure's verdict stands a moment longer: a caller that
			// chose this road just before the router heard of the failure
			// gets the verdict instead of dialling again.
			time.AfterFunc(verdictGrace, func() {
				c.fl.mu.Lock()
				if c.fl.m[key] == f {
					delete(c.fl.m, key)
				}
				c.fl.mu.Unlock()
			})
			return conn, err
		}
	}
}

// waiting is how many callers wait on the connect in flight to cand (for
// tests).
func (c *Client) waiting(cand roads.Candidate) int {
	c.fl.mu.Lock()
	defer c.fl.mu.Unlock()
	if f := c.fl.m[flightKey(cand)]; f != nil {
		return f.waiting
	}
	return 0
}

// inFlight reports whether a connect (or a failed one's verdict) to cand
// is in the table (for tests).
func (c *Client) inFlight(cand roads.Candidate) bool {
	c.fl.mu.Lock()
	defer c.fl.mu.Unlock()
	return c.fl.m[flightKey(cand)] != nil
}
