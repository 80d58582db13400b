package gateway_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/roads"
)

// TestStaticSilentThunderbolt: a static peer whose thunderbolt road is
// silent (its connects go unanswered) and whose lan road works. Static
// mode keeps its roads in the route book, as tailnet mode does: the
// connect that times out (a caller's or a probe's, 2 s) holds thunderbolt
// down, and every call after it goes straight to lan, with no connect to
// thunderbolt and no race (no stagger), until the hold-down ends.
func TestStaticSilentThunderbolt(t *testing.T) {
	checkNoLeaks(t)
	silent := gatewaytest.SilentAddr(t)
	laptop, studio := pair(t, func(n *node) {
		if n.name == "laptop" {
			n.peers(map[string]map[string]string{"studio": {"thunderbolt": silent, "lan": n.otherAddr}})
		}
	})
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	call := func(i int) *localapi.Call {
		t.Helper()
		id := fmt.Sprintf("silent-thunderbolt-%d", i)
		r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/n/"+id, []byte("note"), "X-Delta-Request-Id", id)
		if r.Status/100 != 2 || r.Outcome() != "answered" {
			t.Fatalf("call %d: %d %q %s", i, r.Status, r.Outcome(), r.Body)
		}
		return laptop.c.GetCall(t, id, 0)
	}
	status := func() localapi.Status {
		t.Helper()
		var st localapi.Status
		if err := json.Unmarshal(laptop.c.Must(t, "GET", "/v1/status", nil).Body, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	heldFor := func(st localapi.Status) time.Duration {
		for _, p := range st.Peers {
			for _, r := range p.Roads {
				if p.Name == "studio" && r.Road == string(roads.Thunderbolt) {
					return time.Until(r.HeldDownUntil)
				}
			}
		}
		return 0
	}
	races := func(st localapi.Status) (n uint64) {
		for _, w := range st.Routes.RacesWon {
			n += w
		}
		return n
	}

	call(0) // the first caller: thunderbolt is tried, or already held down
	var before localapi.Status
	gatewaytest.WaitFor(t, 20*time.Second, "thunderbolt held down after its connect timed out", func() bool {
		before = status()
		return heldFor(before) > 2*time.Second
	})
	calls := 0
	for i := 1; i <= 5 && heldFor(status()) > time.Second; i++ {
		c := call(i)
		calls++
		if len(c.Attempts) != 1 || c.Attempts[0].Road != string(roads.LAN) {
			t.Errorf("call %d while thunderbolt is held down: attempts %+v, want one, on lan", i, c.Attempts)
		}
	}
	if calls == 0 {
		t.Fatal("the hold-down ended before a call could be made")
	}
	after := status()
	for _, k := range []string{"road_connects_thunderbolt", "road_connects_joined_thunderbolt"} {
		if after.Counters.Counters[k] != before.Counters.Counters[k] {
			t.Errorf("%s went from %d to %d over %d calls while thunderbolt was held down: a dead road was dialled",
				k, before.Counters.Counters[k], after.Counters.Counters[k], calls)
		}
	}
	if races(after) != races(before) {
		t.Errorf("races won went from %d to %d over %d calls: the calls raced (and paid the stagger) instead of going straight to lan", races(before), races(after), calls)
	}
	if after.Counters.Counters["road_connects_lan"] < before.Counters.Counters["road_connects_lan"]+uint64(calls) {
		t.Errorf("road_connects_lan went from %d to %d over %d calls", before.Counters.Counters["road_connects_lan"], after.Counters.Counters["road_connects_lan"], calls)
	}
}

// TestLostRaceReads: while a silent thunderbolt road's first connect is
// still under way (2 s), the reads after the first one, which raced it and
// was won by lan, take lan first: none of them dials or joins a connect to
// thunderbolt or races again, paying the 150 ms stagger each (issue 62,
// item 7: five reads took 0.15 s each). A read that lost a race is not
// tried first until it has proved itself.
func TestLostRaceReads(t *testing.T) {
	checkNoLeaks(t)
	silent := gatewaytest.SilentAddr(t)
	laptop, studio := pair(t, func(n *node) {
		if n.name == "laptop" {
			n.peers(map[string]map[string]string{"studio": {"thunderbolt": silent, "lan": n.otherAddr}})
		}
	})
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	status := func() localapi.Status {
		t.Helper()
		var st localapi.Status
		if err := json.Unmarshal(laptop.c.Must(t, "GET", "/v1/status", nil).Body, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	for i := range 5 {
		r := laptop.c.Must(t, "GET", fmt.Sprintf("/v1/peers/studio/notes/lost-race/%d", i), nil)
		if r.Status != 200 || r.Outcome() != "answered" || r.Header.Get("X-Delta-Route") != "lan" {
			t.Fatalf("read %d: %d %q via %q %s", i, r.Status, r.Outcome(), r.Header.Get("X-Delta-Route"), r.Body)
		}
	}
	st := status()
	if n := st.Counters.Counters["road_connects_joined_thunderbolt"]; n != 0 {
		t.Errorf("%d reads joined thunderbolt's pending connect, after the first read had lost the race to lan; want none", n)
	}
	if n := st.Counters.Counters["road_connects_thunderbolt"]; n > 1 {
		t.Errorf("thunderbolt was dialled %d times for five reads, want once at most", n)
	}
	if n := st.Routes.RacesWon[string(roads.LAN)]; n > 1 {
		t.Errorf("lan won %d races over five reads: the reads after the first raced again, each paying the stagger", n)
	}
}
