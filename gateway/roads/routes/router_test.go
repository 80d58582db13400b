package routes

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
)

// The shared router probes what is due with the mode's ping, tells a peer
// that comes back, drops the roads over a lost interface and tells which
// peers had them, and stops probing with its context.
func TestRouterProbesAndTells(t *testing.T) {
	tb := roads.Candidate{Peer: "studio", Road: roads.Thunderbolt, Address: "169.254.3.2:7422", Interface: "bridge0", NeedsTicket: true}
	lan := roads.Candidate{Peer: "studio", Road: roads.LAN, Address: "192.168.1.20:7422", Interface: "en0", NeedsTicket: true}
	pinged := make(chan roads.Road, 16)
	ping := func(_ context.Context, c roads.Candidate) error {
		pinged <- c.Road
		if c.Road == roads.Thunderbolt {
			return &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
		}
		return nil
	}
	r := NewRouter(New(nil, nil), ping, nil)
	r.Book().Set("studio", []roads.Candidate{tb, lan})
	if c, err := r.Choose(t.Context(), "studio", ""); err != nil || c.Road != roads.Thunderbolt || len(c.Next) != 1 || c.Next[0].Road != roads.LAN {
		t.Fatalf("before any probe: %v %v, want thunderbolt with lan to race", c, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); r.Probe(ctx) }()
	defer func() { cancel(); <-done }()

	var seen []roads.Road
	for len(seen) < 2 {
		seen = append(seen, <-pinged)
	}
	if slices.Sort(seen); !slices.Equal(seen, []roads.Road{roads.LAN, roads.Thunderbolt}) {
		t.Errorf("probed %v, want each road once", seen)
	}
	// The refused road is told as lost (its exchanges are cut), the other
	// as up, in either order.
	lost, up := false, false
	for !lost || !up {
		switch e := <-r.Events(); {
		case e.Kind == roads.RoadUp && e.Peer == "studio":
			up = true
		case e.Kind == roads.RoadLost && e.Peer == "studio" && e.Road == roads.Thunderbolt && roads.EvidenceOf(e.Why) == roads.EvidenceProbe:
			lost = true
		default:
			t.Fatalf("event %+v, want studio's lan up and its thunderbolt lost to its probe", e)
		}
	}
	for {
		ps := r.Peers()
		if len(ps) == 1 && ps[0].Road == string(roads.LAN) && ps[0].Roads[0].State == localapi.RoadDown && ps[0].Roads[1].State == localapi.RoadUp {
			break
		}
		<-r.Changed()
	}
	if c, err := r.Choose(t.Context(), "studio", ""); err != nil || c.Road != roads.LAN || len(c.Next) != 0 {
		t.Errorf("after the probes: %v %v, want lan alone (thunderbolt refused)", c, err)
	}

	r.InterfaceLost("en0")
	for e := range r.Events() {
		if e.Kind == roads.InterfaceLost {
			if e.Interface != "en0" || !slices.Equal(e.Peers, []string{"studio"}) {
				t.Errorf("event %+v, want en0 lost with studio's road", e)
			}
			break
		}
	}
	if st := r.Peers()[0].Roads[1]; st.State != localapi.RoadDown || st.LastError != "its interface went: interface en0 went down or lost its address" ||
		st.DropEvidence != "netwatch" || st.DroppedWhy != st.LastError || st.DroppedAt.IsZero() {
		t.Errorf("lan after en0 went: %+v", st)
	}
	if got := r.RouteCounters().Invalidations["InterfaceDown"]; got != 1 {
		t.Errorf("invalidations by InterfaceDown: %d, want 1", got)
	}
	if got := r.RouteCounters().Drops["netwatch"]; got != 1 {
		t.Errorf("drops on netwatch's evidence: %d, want 1", got)
	}
}

// TestProberWakesForAChange: the prober sleeps until the book says a road
// falls due, but a change to the book brings it back within about a
// second. Here the peer's one road was just found up (due again in 30 s);
// then the book learns a second road, which is due at once, with no kick.
func TestProberWakesForAChange(t *testing.T) {
	lan := roads.Candidate{Peer: "studio", Road: roads.LAN, Address: "192.168.1.20:7422", Interface: "en0", NeedsTicket: true}
	tb := roads.Candidate{Peer: "studio", Road: roads.Thunderbolt, Address: "169.254.3.2:7422", Interface: "bridge0", NeedsTicket: true}
	pinged := make(chan roads.Road, 16)
	r := NewRouter(New(nil, nil), func(_ context.Context, c roads.Candidate) error { pinged <- c.Road; return nil }, nil)
	r.Book().Set("studio", []roads.Candidate{lan})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); r.Probe(ctx) }()
	defer func() { cancel(); <-done }()
	if road := <-pinged; road != roads.LAN {
		t.Fatalf("first probe on %s", road)
	}
	for r.Peers()[0].Roads[0].State != localapi.RoadUp {
		<-r.Changed()
	}
	r.Book().Set("studio", []roads.Candidate{lan, tb})
	select {
	case road := <-pinged:
		if road != roads.Thunderbolt {
			t.Errorf("probed %s, want the new thunderbolt road", road)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the road the book learned was not probed within 10 s: the prober slept through the change")
	}
}
