package main

import (
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// roadState reads what p believes of its road to peer.
func (p *proc) roadState(t *testing.T, peer, road string) string {
	for _, ps := range p.status(t).Peers {
		if ps.Name == peer {
			for _, r := range ps.Roads {
				if r.Road == road {
					return r.State
				}
			}
			return "absent"
		}
	}
	return "no peer"
}

func (p *proc) waitRoad(t *testing.T, peer, road, state string) {
	t.Helper()
	gatewaytest.WaitFor(t, 60*time.Second, fmt.Sprintf("%s's %s road to %s %s", p.name, road, peer, state), func() bool {
		s := p.roadState(t, peer, road)
		return s == state || state == "down" && s == "absent"
	})
}

// read sends one read and returns the answer and how long it took.
func read(t *testing.T, p *proc, path string) (*gatewaytest.Response, time.Duration) {
	start := time.Now()
	r, err := p.c.Do("GET", "/v1/peers/studio/notes"+path, nil, "Cache-Control", "no-cache")
	took := time.Since(start)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return r, took
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// TestLab pulls cables between two computers running Delta as real
// processes. Timings are logged (and written up in docs/benchmarks.md), not
// asserted: the assertions are about which road carried what, and that
// nothing was lost.
func TestLab(t *testing.T) {
	l := newLab(t)
	laptop := l.start("a", "laptop")
	studio := l.startWith("b", "studio", `{"wake_on_lan": true}`)
	var ln net.Listener
	if err := nsDo(l.ns("b"), func() (err error) { ln, err = net.Listen("tcp", "127.0.0.1:0"); return err }); err != nil {
		t.Fatal(err)
	}
	app := gatewaytest.StartOwnerAppOn(t, ln)
	studio.register(t, "notes", app.URL)
	laptop.waitRoad(t, "studio", "thunderbolt", "up")
	laptop.waitRoad(t, "studio", "lan", "up")

	baseline := func() time.Duration {
		var ds []time.Duration
		for range 10 {
			r, took := read(t, laptop, "/base")
			if r.Status != 200 {
				t.Fatalf("baseline read: %d %s", r.Status, r.Body)
			}
			ds = append(ds, took)
		}
		return median(ds)
	}

	t.Run("all roads up: thunderbolt", func(t *testing.T) {
		r, _ := read(t, laptop, "/x")
		if r.Status != 200 || r.Header.Get("X-Delta-Route") != "thunderbolt" {
			t.Fatalf("read: %d via %q", r.Status, r.Header.Get("X-Delta-Route"))
		}
		c := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/lab", []byte("x"))
		if c.Status != 201 || c.Header.Get("X-Delta-Route") != "thunderbolt" {
			t.Fatalf("call: %d via %q", c.Status, c.Header.Get("X-Delta-Route"))
		}
	})

	// Each scenario restores the lab when it ends, failed or not.
	restore := func(t *testing.T) {
		t.Cleanup(func() {
			exec.Command("ip", "netns", "exec", l.ns("b"), "nft", "delete", "table", "netdev", "silence").Run()
			for _, ifc := range []string{"thunderbolt0", "lan0", "wan0"} {
				exec.Command("ip", "netns", "exec", l.ns("b"), "nft", "delete", "table", "netdev", "silent"+ifc).Run()
			}
			l.cable(true)
		})
	}

	t.Run("the tailnet taken away", func(t *testing.T) {
		restore(t)
		l.wan("a", false)
		t.Cleanup(func() { l.wan("a", true) })
		// The lan and thunderbolt roads need no tailnet while the ticket
		// laptop holds is valid (10 min).
		r, _ := read(t, laptop, "/no-tailnet")
		c := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/no-tailnet", []byte("x"))
		if r.Status != 200 || r.Header.Get("X-Delta-Route") != "thunderbolt" || c.Status != 201 || c.Header.Get("X-Delta-Route") != "thunderbolt" {
			t.Fatalf("without the tailnet: read %d via %q, call %d via %q", r.Status, r.Header.Get("X-Delta-Route"), c.Status, c.Header.Get("X-Delta-Route"))
		}
	})

	t.Run("cable pulled while idle", func(t *testing.T) {
		restore(t)
		base := baseline()
		l.cable(false)
		laptop.waitRoad(t, "studio", "thunderbolt", "down") // the interface shows it
		r, took := read(t, laptop, "/after-pull")
		if r.Status != 200 || r.Header.Get("X-Delta-Route") != "lan" {
			t.Fatalf("first read after the pull: %d via %q", r.Status, r.Header.Get("X-Delta-Route"))
		}
		t.Logf("LAB first read after a pull the interface shows: %v (baseline %v, extra %v)", took, base, took-base)
		l.cable(true)
		t0 := time.Now()
		gatewaytest.WaitFor(t, 30*time.Second, "reads back on thunderbolt", func() bool {
			r, _ := read(t, laptop, "/back")
			return r.Header.Get("X-Delta-Route") == "thunderbolt"
		})
		t.Logf("LAB reads back on thunderbolt %v after the cable was plugged back", time.Since(t0))
	})

	t.Run("cable pulled during 50 reads a second", func(t *testing.T) {
		restore(t)
		laptop.waitRoad(t, "studio", "thunderbolt", "up")
		var failed, lanReads atomic.Int32
		var firstLAN atomic.Int64
		var pulledAt atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				r, err := laptop.c.Do("GET", "/v1/peers/studio/notes/stream", nil, "Cache-Control", "no-cache")
				if err != nil || r.Status != 200 {
					failed.Add(1)
					continue
				}
				if r.Header.Get("X-Delta-Route") == "lan" && pulledAt.Load() != 0 {
					lanReads.Add(1)
					firstLAN.CompareAndSwap(0, time.Now().UnixNano())
				}
			}
		})
		time.Sleep(time.Second) // reads flow on thunderbolt first
		pulledAt.Store(time.Now().UnixNano())
		l.cable(false)
		gatewaytest.WaitFor(t, 30*time.Second, "reads flowing on lan", func() bool { return lanReads.Load() >= 10 })
		close(stop)
		wg.Wait()
		if failed.Load() != 0 {
			t.Errorf("%d reads failed during the pull", failed.Load())
		}
		t.Logf("LAB reads lost during a pull: %d; reads on lan %v after the pull", failed.Load(), time.Duration(firstLAN.Load()-pulledAt.Load()))
		if m := laptop.c.Must(t, "GET", "/metrics", nil); !strings.Contains(string(m.Body), `delta_route_invalidations_total{cause="InterfaceDown"}`) {
			t.Errorf("metrics do not count the invalidation by its cause:\n%s", m.Body)
		}
		l.cable(true)
		laptop.waitRoad(t, "studio", "thunderbolt", "up")
	})

	t.Run("cable pulled and the peer silent on lan", func(t *testing.T) {
		restore(t)
		base := baseline()
		l.silence("b", "lan0", true)
		l.cable(false)
		laptop.waitRoad(t, "studio", "thunderbolt", "down")
		r, first := read(t, laptop, "/silent")
		if r.Status != 200 || r.Header.Get("X-Delta-Route") != "tailnet" {
			t.Fatalf("first read: %d via %q: %s", r.Status, r.Header.Get("X-Delta-Route"), r.Body)
		}
		// The lan connect runs to its timeout in the background and arms
		// the hold-down: later callers go straight to the tailnet.
		laptop.waitRoad(t, "studio", "lan", "down")
		var later []time.Duration
		for range 5 {
			r, took := read(t, laptop, "/later")
			if r.Header.Get("X-Delta-Route") != "tailnet" {
				t.Errorf("later read via %q", r.Header.Get("X-Delta-Route"))
			}
			later = append(later, took)
		}
		t.Logf("LAB silent lan: first caller %v (baseline %v on thunderbolt, extra %v); later callers median %v", first, base, first-base, median(later))
		l.silence("b", "lan0", false)
		l.cable(true)
		laptop.waitRoad(t, "studio", "thunderbolt", "up")
	})

	t.Run("a call in flight when its road dies", func(t *testing.T) {
		restore(t)
		laptop.waitRoad(t, "studio", "thunderbolt", "up")
		const id = "lab-inflight"
		done := make(chan *gatewaytest.Response, 1)
		go func() {
			r, err := laptop.c.Do("POST", "/v1/peers/studio/notes/hold/inflight", []byte("x"), "X-Delta-Request-Id", id, "X-Delta-Timeout", "2")
			if err != nil {
				t.Error(err)
			}
			done <- r
		}()
		app.WaitArrived(t, id)
		l.cable(false)
		r := <-done
		if r == nil || r.Outcome() != "outcome_unknown" || r.Header.Get("X-Delta-Route") != "thunderbolt" {
			t.Fatalf("call whose road died: %+v", r)
		}
		app.Release("/hold/inflight")
		call := laptop.c.GetCall(t, id, 60)
		if call.State != "carried_out" || app.RequestsFor(id) != 1 {
			t.Fatalf("settled %s (%s); the owner app saw %d", call.State, call.Detail, app.RequestsFor(id))
		}
		l.cable(true)
		laptop.waitRoad(t, "studio", "thunderbolt", "up")
	})

	t.Run("a sleeping peer", func(t *testing.T) {
		restore(t)
		sleepingPeer(t, l, laptop, studio)
	})
}
