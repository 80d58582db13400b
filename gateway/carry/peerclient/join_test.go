package peerclient

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
)

// reports is a router that only records what it is told.
type reports struct {
	mu   sync.Mutex
	errs []error
	oks  int
}

func (r *reports) Known(string) bool { return true }
func (r *reports) Choose(context.Context, string, roads.Road, ...roads.Road) (roads.Candidate, error) {
	return roads.Candidate{}, errors.New("unused")
}
func (r *reports) Report(_ roads.Candidate, _ time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs = append(r.errs, err)
	} else {
		r.oks++
	}
}
func (r *reports) Invalidate(string, roads.Road, error) {}
func (r *reports) Peers() []localapi.PeerStatus         { return nil }

// gated is a candidate whose connects wait for the gate, then fail with
// fail (or succeed); dials counts the connects that ran.
func gated(gate <-chan struct{}, fail error, dials *atomic.Int32) roads.Candidate {
	return roads.Candidate{Peer: "studio", Road: roads.LAN, Address: "192.0.2.20:7422", Dial: func(ctx context.Context) (net.Conn, error) {
		dials.Add(1)
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if fail != nil {
			return nil, fail
		}
		a, b := net.Pipe()
		b.Close()
		return a, nil
	}}
}

// waitDials waits until n connects have started.
func waitDials(t *testing.T, dials *atomic.Int32, n int32) {
	t.Helper()
	waitFor(t, "connects to start", func() bool { return dials.Load() >= n })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestJoinFailure: sixteen callers of one road while its connect is in
// flight make one connect; when it fails all sixteen fail with its cause,
// and the router hears of it once.
func TestJoinFailure(t *testing.T) {
	r := &reports{}
	c := New(Config{Router: r})
	gate := make(chan struct{})
	var dials atomic.Int32
	cause := errors.New("dial tcp 192.0.2.20:7422: i/o timeout")
	cand := gated(gate, cause, &dials)
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			_, err := c.Dial(context.Background(), cand)
			errs <- err
		}()
	}
	waitDials(t, &dials, 1)
	// Every caller is either the connect or waiting on it: none of them
	// dials while it is in flight.
	waitFor(t, "15 callers waiting on the connect", func() bool { return c.waiting(cand) == 15 })
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d connects for one road in flight, want 1", n)
	}
	close(gate)
	for range 16 {
		if err := <-errs; err == nil || err.Error() != cause.Error() || !errors.Is(err, cause) {
			t.Fatalf("a caller got %v, want the connect's own %v", err, cause)
		}
	}
	if len(r.errs) != 1 || r.oks != 0 {
		t.Fatalf("the router heard %d failures and %d successes, want the one connect's failure", len(r.errs), r.oks)
	}
	// Just after, the verdict still stands: a caller that chose the road
	// before the router heard of the failure gets it without dialling.
	var je *JoinedError
	if _, err := c.Dial(context.Background(), cand); !errors.As(err, &je) || !errors.Is(err, cause) || dials.Load() != 1 {
		t.Fatalf("just after the verdict: %v, %d connects", err, dials.Load())
	}
	// Once it has passed, the next caller connects for itself.
	waitFor(t, "the verdict to pass", func() bool { return !c.inFlight(cand) })
	if _, err := c.Dial(context.Background(), cand); errors.As(err, &je) || !errors.Is(err, cause) || dials.Load() != 2 {
		t.Fatalf("after the verdict: %v, %d connects", err, dials.Load())
	}
}

// TestJoinSuccess: when the connect in flight succeeds, each waiter gets a
// connection of its own.
func TestJoinSuccess(t *testing.T) {
	r := &reports{}
	c := New(Config{Router: r})
	gate := make(chan struct{})
	var dials atomic.Int32
	cand := gated(gate, nil, &dials)
	conns := make(chan *RoadConn, 4)
	for range 4 {
		go func() {
			rc, err := c.Dial(context.Background(), cand)
			if err != nil {
				t.Error(err)
			}
			conns <- rc
		}()
	}
	waitDials(t, &dials, 1)
	close(gate)
	seen := map[net.Conn]bool{}
	for range 4 {
		rc := <-conns
		if rc == nil || seen[rc.Conn] {
			t.Fatal("two callers share one connection")
		}
		seen[rc.Conn] = true
		rc.Close()
	}
	if dials.Load() != 4 || r.oks != 4 {
		t.Fatalf("%d connects, %d reported up; want 4 (one each, after the first said the road is up)", dials.Load(), r.oks)
	}
}

// TestJoinAbandoned: a connect that ended because its own caller gave up
// says nothing of the road: the waiter connects for itself.
func TestJoinAbandoned(t *testing.T) {
	c := New(Config{Router: &reports{}})
	gate := make(chan struct{})
	var dials atomic.Int32
	cand := gated(gate, nil, &dials)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.Dial(ctx, cand)
		first <- err
	}()
	waitDials(t, &dials, 1)
	second := make(chan error, 1)
	go func() {
		rc, err := c.Dial(context.Background(), cand)
		if rc != nil {
			rc.Close()
		}
		second <- err
	}()
	waitFor(t, "the second caller to join", func() bool { return c.waiting(cand) == 1 })
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("the first caller: %v", err)
	}
	waitDials(t, &dials, 2) // the second connects for itself
	close(gate)
	if err := <-second; err != nil {
		t.Fatalf("the second caller inherited the first's cancellation: %v", err)
	}
}

// TestJoinRace: a race across roads joins each road's connect in flight.
func TestJoinRace(t *testing.T) {
	r := &reports{}
	c := New(Config{Router: r})
	gate := make(chan struct{})
	var lanDials atomic.Int32
	lan := gated(gate, errors.New("connection refused"), &lanDials)
	tail := dialer(roads.Tailnet, 0, nil, make(chan roads.Road, 4))
	raced := lan
	raced.Next = []roads.Candidate{tail}
	done := make(chan error, 2)
	go func() {
		_, err := c.Dial(context.Background(), lan) // a read pinned to lan
		done <- err
	}()
	waitDials(t, &lanDials, 1)
	go func() {
		rc, err := c.Dial(context.Background(), raced) // a call racing lan, then the tailnet
		if err == nil {
			if rc.Cand.Road != roads.Tailnet {
				t.Errorf("won by %s", rc.Cand.Road)
			}
			rc.Close()
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatalf("the race: %v", err)
	}
	close(gate)
	if err := <-done; err == nil {
		t.Fatal("the pinned lan connect succeeded")
	}
	if n := lanDials.Load(); n != 1 {
		t.Fatalf("%d lan connects, want 1 (the race joined the one in flight)", n)
	}
}
