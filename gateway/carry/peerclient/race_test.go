package peerclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/roads/routes"
)

var errTimeout = fmt.Errorf("dial tcp: %w", os.ErrDeadlineExceeded)

// dialer is a candidate whose connect takes d, then succeeds or fails.
// closed receives its road when its connection is closed.
func dialer(road roads.Road, d time.Duration, fail error, closed chan<- roads.Road) roads.Candidate {
	return roads.Candidate{Peer: "studio", Road: road, Address: string(road), Dial: func(ctx context.Context) (net.Conn, error) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if fail != nil {
			return nil, fail
		}
		a, b := net.Pipe()
		go func() {
			buf := make([]byte, 1)
			b.Read(buf) // returns when a is closed
			closed <- road
		}()
		return a, nil
	}}
}

func TestRace(t *testing.T) {
	closed := make(chan roads.Road, 8)
	lates := make(chan Failure, 8)
	late := func(f Failure, _ net.Conn) { lates <- f }
	// The best road connects within the stagger: nothing else starts.
	rc, _, fails, err := Race(context.Background(), routes.Choice{First: dialer(roads.Thunderbolt, 0, nil, closed), Next: []roads.Candidate{dialer(roads.LAN, 0, nil, closed)}}, 50*time.Millisecond, late)
	if err != nil || rc.Cand.Road != roads.Thunderbolt || len(fails) != 0 {
		t.Fatalf("fast first: %v %v %v", rc, fails, err)
	}
	rc.Close()
	<-closed
	// A silent best road: the next one starts after the stagger and wins;
	// the loser is closed when it connects.
	// (Silent for 2 s: far past the 50 ms stagger even on a loaded machine;
	// which road won is the check, not how long it took.)
	rc, took, _, err := Race(context.Background(), routes.Choice{First: dialer(roads.Thunderbolt, 2*time.Second, nil, closed), Next: []roads.Candidate{dialer(roads.LAN, 0, nil, closed)}}, 50*time.Millisecond, late)
	if err != nil || rc.Cand.Road != roads.LAN {
		t.Fatalf("silent first: %v after %v: %v", rc, took, err)
	}
	if r := <-closed; r != roads.Thunderbolt {
		t.Errorf("closed %s, want the losing thunderbolt connection, closed when it connected", r)
	}
	if l := <-lates; l.Cand.Road != roads.Thunderbolt || l.Err != nil {
		t.Errorf("late: %+v, want thunderbolt connecting late", l)
	}
	rc.Close()
	<-closed
	// A refusal starts the next road at once.
	rc, _, fails, err = Race(context.Background(), routes.Choice{First: dialer(roads.Thunderbolt, 0, syscall.ECONNREFUSED, closed), Next: []roads.Candidate{dialer(roads.Tailnet, 0, nil, closed)}}, time.Hour, late)
	if err != nil || rc.Cand.Road != roads.Tailnet || len(fails) != 1 || !errors.Is(fails[0].Err, syscall.ECONNREFUSED) {
		t.Fatalf("refused first: %v %v %v", rc, fails, err)
	}
	rc.Close()
	<-closed
	// Everything fails: the errors, joined.
	_, _, fails, err = Race(context.Background(), routes.Choice{First: dialer(roads.LAN, 0, syscall.ECONNREFUSED, closed), Next: []roads.Candidate{dialer(roads.Tailnet, 0, errTimeout, closed)}}, time.Millisecond, late)
	if err == nil || len(fails) != 2 || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("all fail: %v %v", fails, err)
	}
}

// A silent loser is seen to time out: late reports it, so it can be held
// down.
func TestRaceReportsSilentLoser(t *testing.T) {
	closed := make(chan roads.Road, 8)
	lates := make(chan Failure, 8)
	rc, _, _, err := Race(context.Background(), routes.Choice{First: dialer(roads.LAN, 200*time.Millisecond, errTimeout, closed), Next: []roads.Candidate{dialer(roads.Tailnet, 0, nil, closed)}},
		20*time.Millisecond, func(f Failure, _ net.Conn) { lates <- f })
	if err != nil || rc.Cand.Road != roads.Tailnet {
		t.Fatalf("%v %v", rc, err)
	}
	rc.Close()
	if l := <-lates; l.Cand.Road != roads.LAN || !h1.IsTimeout(l.Err) {
		t.Errorf("late: %+v, want the lan connect timing out", l)
	}
}
