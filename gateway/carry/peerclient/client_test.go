package peerclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/roads/routes"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// TestFallBackSkipsPassed: a road held down when a read began is not
// dialled by its fall-back, even when its hold-down ran out while the read
// waited on the other roads (a sleeping peer: CI saw two callers of
// sixteen connect to thunderbolt a second time and wait longer than the
// first attempt); unless it has answered since.
func TestFallBackSkipsPassed(t *testing.T) {
	tb := roads.Candidate{Peer: "studio", Road: roads.Thunderbolt, Address: "169.254.3.2:7422", Interface: "bridge0"}
	cands := []roads.Candidate{
		{Peer: "studio", Road: roads.Tailnet, Address: "100.64.0.2:7421"},
		{Peer: "studio", Road: roads.LAN, Address: "192.168.1.20:7422", Interface: "en0"},
		tb,
	}
	timeout := fmt.Errorf("dial tcp: %w", os.ErrDeadlineExceeded)
	for _, answered := range []bool{false, true} {
		t.Run(fmt.Sprintf("answered since: %v", answered), func(t *testing.T) {
			clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			book := routes.New(clk.now, nil)
			book.Set("studio", cands)
			c := New(Config{Router: routes.NewRouter(book, nil, nil)})
			book.Report(tb, 0, timeout) // thunderbolt held down
			var tried [][]roads.Road
			err := c.Do(context.Background(), Read, "studio", "", func(try Try) Result {
				rs := RacedRoads(try.Cand)
				tried = append(tried, rs)
				if len(tried) > 1 {
					return Result{Verdict: Done, Road: try.Cand.Road}
				}
				if !slices.Equal(try.Cand.Passed, []roads.Road{roads.Thunderbolt}) {
					t.Errorf("first choice passed over %v, want [thunderbolt]", try.Cand.Passed)
				}
				// The other roads take longer than the hold-down to fail.
				clk.add(roads.Tailnet.ConnectTimeout() + routes.Stagger)
				if answered {
					book.Report(tb, time.Millisecond, nil) // a probe found it up meanwhile
				}
				return Result{Verdict: Failed, RoadFault: true, Road: try.Cand.Road, Tried: rs, Reason: errors.New("silent")}
			})
			if answered {
				if err != nil || len(tried) != 2 || !slices.Equal(tried[1], []roads.Road{roads.Thunderbolt}) {
					t.Fatalf("a passed road that answered since: attempts %v, %v; want the fall-back on thunderbolt", tried, err)
				}
				return
			}
			var nr *Unattempted
			if !errors.As(err, &nr) || !nr.FellBack || len(tried) != 1 {
				t.Fatalf("attempts %v, %v; want one attempt (lan, tailnet) and no road after the fall-back", tried, err)
			}
		})
	}
}
