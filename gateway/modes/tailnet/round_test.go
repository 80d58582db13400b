package tailnet_test

import (
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/tailnet"
	"github.com/delta-roads/delta/gateway/roads"
)

// upkeep is what nd sent its peers only to keep its roads known, by kind.
func upkeep(nd *tnode) map[string]localapi.Traffic { return nd.n.RouteCounters().Upkeep }

// TestUpkeepRounds: the tailnet's upkeep goes in rounds (round.go). A
// probe of the tailnet road that answers takes along hello and the
// tickets that would fall due before the next round; a peer's upkeep
// arriving brings this Delta's round forward when its own last check is
// older than the slack, and not when it is recent.
func TestUpkeepRounds(t *testing.T) {
	if tailnet.RoundEvery != roads.Tailnet.BeliefLifetime() {
		t.Fatalf("a round every %s, but the tailnet road's belief lives %s: the round rides on its probe", tailnet.RoundEvery, roads.Tailnet.BeliefLifetime())
	}
	// Restored last, once the nodes are down (cleanups run in reverse).
	t.Cleanup(tailnet.SetRoundSlack(2 * time.Second))
	_, laptop, studio, _ := labPair(t)
	waitPeer(t, studio, laptop)
	waitRoadUp(t, laptop, studio, "lan")
	waitRoadUp(t, laptop, studio, "tailnet")
	waitRoadUp(t, studio, laptop, "tailnet")
	// The lan probes hold a lan ticket; the direct-read keeper, a read
	// ticket (studio's lan address is on loopback: a direct road).
	gatewaytest.WaitFor(t, 30*time.Second, "laptop to hold both tickets for studio", func() bool {
		lan, read := laptop.n.HeldTickets("studio")
		return !lan.IsZero() && !read.IsZero()
	})

	t.Run("a probe takes the round along", func(t *testing.T) {
		before, rounds := upkeep(laptop), laptop.rounds.Load()
		laptop.n.AgeUpkeep("studio")
		if !laptop.n.RoundNow("studio") {
			t.Fatal("laptop's tailnet road to studio is not believed up")
		}
		gatewaytest.WaitFor(t, 30*time.Second, "a hello and two tickets with the probe", func() bool {
			now := upkeep(laptop)
			return now[roads.UpkeepHello].Requests > before[roads.UpkeepHello].Requests &&
				now[roads.UpkeepTicket].Requests >= before[roads.UpkeepTicket].Requests+2
		})
		// A request is counted as it leaves; its ticket is held once its
		// answer is in.
		gatewaytest.WaitFor(t, 30*time.Second, "both tickets renewed by the round", func() bool {
			lan, read := laptop.n.HeldTickets("studio")
			soon := time.Now().Add(9 * time.Minute)
			return !lan.Before(soon) && !read.Before(soon)
		})
		// Once what rode along returned, the round is said to be done
		// (the app glances at its memory then).
		gatewaytest.WaitFor(t, 30*time.Second, "laptop's node to say its round is done", func() bool {
			return laptop.rounds.Load() > rounds
		})
	})

	t.Run("a peer's round brings this one forward", func(t *testing.T) {
		// laptop's last check of its tailnet road must be older than the
		// slack (2 s here, a minute in use).
		gatewaytest.WaitFor(t, 30*time.Second, "laptop's tailnet check older than the slack", func() bool {
			return time.Since(tailnetCheckedAt(t, laptop, "studio")) > 2*time.Second
		})
		was := tailnetCheckedAt(t, laptop, "studio")
		studioWas, studioRounds := tailnetCheckedAt(t, studio, "laptop"), studio.n.Rounds()
		if !studio.n.RoundNow("laptop") {
			t.Fatal("studio's tailnet road to laptop is not believed up")
		}
		// laptop's probe (and what rides along) reaches studio's door,
		// where studio decides on its own round, before laptop's check
		// is recorded.
		gatewaytest.WaitFor(t, 30*time.Second, "laptop to check its tailnet road as studio's round arrives, and studio's own check to end", func() bool {
			return tailnetCheckedAt(t, laptop, "studio").After(was) && tailnetCheckedAt(t, studio, "laptop").After(studioWas)
		})
		// studio had just checked its own road (or was checking it) when
		// laptop's round came: its round is not brought forward again.
		if n := studio.n.Rounds() - studioRounds; n != 1 || studio.n.RoundDue("laptop") {
			t.Errorf("studio probed its tailnet road %d times and has another due: %t; want once, none due", n, studio.n.RoundDue("laptop"))
		}
	})
}

// tailnetCheckedAt is when nd last checked its tailnet road to peer.
func tailnetCheckedAt(t *testing.T, nd *tnode, peer string) time.Time {
	t.Helper()
	for _, p := range nd.n.Peers() {
		for _, r := range p.Roads {
			if p.Name == peer && r.Road == string(roads.Tailnet) {
				return r.CheckedAt
			}
		}
	}
	t.Fatalf("%s has no tailnet road to %s", nd.name, peer)
	return time.Time{}
}
