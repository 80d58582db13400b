package routes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"delta/gateway/roads"
)

// RoadConn is a connection that knows the candidate it was dialled for.
type RoadConn struct {
	net.Conn
	Cand roads.Candidate
}

// Failure is one candidate that did not connect in a race.
type Failure struct {
	Cand roads.Candidate
	Err  error
	Took time.Duration
}

// Race connects to ch.First and, if it has not connected within stagger
// (or failed sooner), to each of ch.Next in turn as well: the first
// connection wins and the others are closed as they arrive (RFC 8305,
// across roads instead of address families). A connect carries nothing,
// so racing is safe for calls too. It returns the winner, how long it
// took, and every candidate that failed.
func Race(ctx context.Context, ch Choice, stagger time.Duration) (*RoadConn, time.Duration, []Failure, error) {
	cands := append([]roads.Candidate{ch.First}, ch.Next...)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		i    int
		conn net.Conn
		err  error
		took time.Duration
	}
	results := make(chan result, len(cands))
	start := time.Now()
	started := 0
	launch := func() {
		i := started
		started++
		go func() {
			t := time.Now()
			c, err := cands[i].Dial(ctx)
			results <- result{i: i, conn: c, err: err, took: time.Since(t)}
		}()
	}
	launch()
	timer := time.NewTimer(stagger)
	defer timer.Stop()
	var fails []Failure
	pending := 1
	for {
		select {
		case <-timer.C:
			if started < len(cands) {
				launch()
				pending++
				timer.Reset(stagger)
			}
		case r := <-results:
			pending--
			if r.err == nil {
				// Close the losers that connect later.
				go func(n int) {
					for ; n > 0; n-- {
						if l := <-results; l.conn != nil {
							l.conn.Close()
						}
					}
				}(pending)
				return &RoadConn{Conn: r.conn, Cand: cands[r.i]}, time.Since(start), fails, nil
			}
			fails = append(fails, Failure{Cand: cands[r.i], Err: r.err, Took: r.took})
			if started < len(cands) {
				launch() // a failure starts the next at once
				pending++
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
