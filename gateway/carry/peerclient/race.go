package peerclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delta-roads/delta/gateway/roads"
)

// RoadConn is a connection that knows the candidate it was dialled for.
// It notes when bytes last moved on it and whether an exchange is using
// it (the quiet watch, WatchQuiet), and, once its road was dropped and it
// was closed for that (DropRoad, DropInterface), its reads and writes
// fail with a *CutError that says so.
type RoadConn struct {
	net.Conn
	Cand roads.Candidate
	// Lost are the better roads of a race that failed before this one
	// connected (refused, unreachable): nothing was written to them.
	Lost []Failure
	// Outrun are the better roads of a race whose connects were still
	// under way when this one won (roads.RaceLoser).
	Outrun []roads.Candidate
	// OnClose, if not nil, is called once when the connection is closed.
	OnClose func()
	once    sync.Once

	cut    atomic.Pointer[error] // why its road was dropped, once it was
	moved  atomic.Int64          // when bytes last moved (Unix ns), or it began
	busy   atomic.Bool           // an exchange is using it (SetBusy)
	client *Client               // told when it becomes busy, for the quiet watch
}

// Read reads, noting that bytes moved; a connection closed because its
// road was dropped fails with a *CutError.
func (c *RoadConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.moved.Store(time.Now().UnixNano())
	}
	if err != nil {
		err = c.cutError(err)
	}
	return n, err
}

// Write writes, as Read reads.
func (c *RoadConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.moved.Store(time.Now().UnixNano())
	}
	if err != nil {
		err = c.cutError(err)
	}
	return n, err
}

func (c *RoadConn) cutError(err error) error {
	if why := c.cut.Load(); why != nil {
		return &CutError{Road: c.Cand.Road, Why: *why, Err: err}
	}
	return err
}

// SetBusy is told by the HTTP client (h1) when an exchange takes the
// connection and when it gives it back. A connection that is never given
// back (a call's, a session's) stays busy until it closes.
func (c *RoadConn) SetBusy(busy bool) {
	if c.busy.Swap(busy) == busy {
		return
	}
	if busy {
		c.moved.Store(time.Now().UnixNano())
		if c.client != nil && c.client.quietIdle.CompareAndSwap(true, false) {
			// The quiet watch sleeps with nothing to watch: wake it. (When
			// it watches already, its next look is no later than this
			// connection could have gone quiet: no wake, on the hot path.)
			c.client.quiet.Notify()
		}
	}
}

// drop closes the connection because its road was dropped on why.
func (c *RoadConn) drop(why error) {
	c.cut.CompareAndSwap(nil, &why)
	// Closing is the point; an error means it was closed already.
	_ = c.Close()
}

// CutError is an exchange's failure because this Delta closed its
// connection: the road was dropped on evidence (Why: a *roads.DropError,
// or a roads.InterfaceLostError).
type CutError struct {
	Road roads.Road
	Why  error
	Err  error // what the read or write returned
}

func (e *CutError) Error() string {
	return fmt.Sprintf("the %s road was dropped (%v), and its connections closed", e.Road, e.Why)
}

func (e *CutError) Unwrap() []error { return []error{e.Why, e.Err} }

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
				rc := &RoadConn{Conn: r.conn, Cand: cands[r.i]}
				for i := range r.i {
					if i < started && !failed(fails, cands[i]) {
						rc.Outrun = append(rc.Outrun, cands[i])
					}
				}
				return rc, time.Since(start), fails, nil
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

// failed reports whether c is among fails.
func failed(fails []Failure, c roads.Candidate) bool {
	for _, f := range fails {
		if f.Cand.Road == c.Road && f.Cand.Address == c.Address && f.Cand.Interface == c.Interface {
			return true
		}
	}
	return false
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
