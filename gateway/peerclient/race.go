package peerclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/roads"
)

// RoadConn is a connection that knows the candidate it was dialled for.
type RoadConn struct {
	net.Conn
	Cand roads.Candidate
	// Lost are the better roads of a race that failed before this one
	// connected (refused, unreachable): nothing was written to them.
	Lost []Failure
	// OnClose, if not nil, is called once when the connection is closed.
	OnClose func()
	once    sync.Once
}

// PoolKey is where the connection goes, its road's address: h1 pools it
// under that, not under the address its first request asked for (a raced
// dial may have been won by another road).
func (rc *RoadConn) PoolKey() string { return rc.Cand.Address }

// NetConn is the connection beneath (for what only it can set, such as
// TCP keepalive).
func (c *RoadConn) NetConn() net.Conn { return c.Conn }

// Close closes the connection and calls OnClose once.
func (c *RoadConn) Close() error {
	c.once.Do(func() {
		if c.OnClose != nil {
			c.OnClose()
		}
	})
	return c.Conn.Close()
}

// Failure is one candidate that did not connect in a race.
type Failure struct {
	Cand roads.Candidate
	Err  error
	Took time.Duration
}

// Race connects to ch.First and, if it has not connected within stagger
// (or failed sooner), to each of ch.Next in turn as well: the first
// connection wins (RFC 8305, across roads instead of address families). A
// connect carries nothing, so racing is safe for calls too.
//
// Losers are not cancelled: each runs to its own connect timeout, so that a
// silent road is seen to time out (and held down) rather than cost every
// caller the stagger again; late is reported and closes what connects. The
// dials therefore must bound themselves (roads.Candidate.Dial does). Race
// returns the winner, how long it took, and the candidates that failed
// before it won.
func Race(ctx context.Context, ch roads.Choice, stagger time.Duration, late func(Failure, net.Conn)) (*RoadConn, time.Duration, []Failure, error) {
	cands := append([]roads.Candidate{ch.First}, ch.Next...)
	dialCtx := context.WithoutCancel(ctx)
	type result struct {
		i    int
		conn net.Conn
		err  error
		took time.Duration
	}
	results := make(chan result, len(cands))
	start := time.Now()
	started, pending := 0, 0
	launch := func() {
		i := started
		started++
		pending++
		go func() {
			t := time.Now()
			c, err := cands[i].Dial(dialCtx)
			results <- result{i: i, conn: c, err: err, took: time.Since(t)}
		}()
	}
	// drain hands the dials still under way to late.
	drain := func() {
		go func(n int) {
			for ; n > 0; n-- {
				r := <-results
				if r.conn != nil {
					r.conn.Close()
				}
				if late != nil {
					late(Failure{Cand: cands[r.i], Err: r.err, Took: r.took}, r.conn)
				}
			}
		}(pending)
	}
	launch()
	timer := time.NewTimer(stagger)
	defer timer.Stop()
	var fails []Failure
	for {
		select {
		case <-ctx.Done():
			drain()
			return nil, time.Since(start), fails, fmt.Errorf("connect abandoned: %w", ctx.Err())
		case <-timer.C:
			if started < len(cands) {
				launch()
				timer.Reset(stagger)
			}
		case r := <-results:
			pending--
			if r.err == nil {
				drain()
				return &RoadConn{Conn: r.conn, Cand: cands[r.i]}, time.Since(start), fails, nil
			}
			fails = append(fails, Failure{Cand: cands[r.i], Err: r.err, Took: r.took})
			if started < len(cands) {
				launch() // a failure starts the next at once
				if !timer.Stop() {
					select {
					case <-timer.C:
					default:
					}
				}
				timer.Reset(stagger)
			} else if pending == 0 {
				return nil, time.Since(start), fails, raceError(fails)
			}
		}
	}
}

func raceError(fails []Failure) error {
	if len(fails) == 1 {
		return fails[0].Err
	}
	var errs []error
	for _, f := range fails {
		errs = append(errs, fmt.Errorf("%s: %w", f.Cand, f.Err))
	}
	return errors.Join(errs...)
}
