package main

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/tailnet/tailnettest"
)

// TestResendSoak: apps make calls through laptop, each with its own request
// id, while laptop's Delta is SIGKILLed and restarted; an app whose
// connection breaks sends the same request with the same id again at once
// (the restart window is where a restarted Delta does not know its peer's
// roads yet). Then every call is settled and checked against the owner
// app's own count of effects: none twice, none that was told "nothing was
// sent", every "answered" and "carried out" exactly once, every "not
// carried out" never, and no call is told its peer is unknown.
func TestResendSoak(t *testing.T) {
	const apps, callsPerApp, restarts = 8, 30, 3
	c := tailnettest.Start(t, tailnettest.Options{})
	laptop, studio := tailnetPair(t, c)
	// A fixed local address, so apps find the restarted Delta where they
	// left it (the last --listen wins).
	laptop.args = append(laptop.args, "--listen", freeAddr(t))
	laptop.kill(t)
	laptop.start(t)
	laptop.waitPeer(t, "studio")
	owner := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", owner.URL)

	var mu sync.Mutex
	client := laptop.c
	current := func() *gatewaytest.Client { mu.Lock(); defer mu.Unlock(); return client }

	type result struct {
		id, path, outcome, detail string
		status                    int
	}
	var done, resends atomic.Int64
	results := make(chan result, apps*callsPerApp)
	var wg sync.WaitGroup
	for a := range apps {
		wg.Go(func() {
			for i := range callsPerApp {
				id := fmt.Sprintf("soak-%d-%d", a, i)
				path := "/answer/" + id
				deadline := time.Now().Add(60 * time.Second)
				for {
					r, err := current().Do("POST", "/v1/peers/studio/notes"+path, []byte("write "+id),
						"X-Delta-Request-Id", id, "X-Delta-Timeout", "10", "X-Delta-App", "soak")
					if err == nil {
						results <- result{id: id, path: path, outcome: r.Outcome(), detail: r.Err.Detail, status: r.Status}
						break
					}
					if time.Now().After(deadline) {
						results <- result{id: id, path: path, outcome: "no answer in 60 s: " + err.Error()}
						break
					}
					resends.Add(1) // the local Delta is down: at once again
					time.Sleep(5 * time.Millisecond)
				}
				done.Add(1)
			}
		})
	}
	for k := 1; k <= restarts; k++ {
		gatewaytest.WaitFor(t, 90*time.Second, fmt.Sprintf("%d calls before restart %d", k*apps*callsPerApp/(restarts+1), k),
			func() bool { return done.Load() >= int64(k*apps*callsPerApp/(restarts+1)) })
		laptop.kill(t)
		laptop.start(t)
		mu.Lock()
		client = laptop.c
		mu.Unlock()
	}
	wg.Wait()
	close(results)

	counts := map[string]int{}
	var all []result
	for r := range results {
		all = append(all, r)
		counts[r.outcome]++
		effects := owner.Effects(r.path)
		switch r.outcome {
		case "answered":
			if r.status != 201 || effects != 1 {
				t.Errorf("%s was answered %d, and its effect happened %d times", r.id, r.status, effects)
			}
		case "unavailable", "forbidden":
			if !strings.Contains(r.detail, "nothing was sent") {
				t.Errorf("%s: %s without saying nothing was sent: %s", r.id, r.outcome, r.detail)
			}
			if effects != 0 {
				t.Errorf("FALSE NOTHING WAS SENT: %s was told %q but its effect happened %d times", r.id, r.detail, effects)
			}
		case "outcome_unknown":
			// settled below
		default:
			t.Errorf("%s got %q (%d): %s", r.id, r.outcome, r.status, r.detail)
		}
	}
	// Every call settles as its effect says.
	settled := map[string]int{}
	for _, r := range all {
		call := current().GetCall(t, r.id, 60)
		settled[call.State]++
		effects := owner.Effects(r.path)
		switch call.State {
		case "answered", "carried_out":
			if effects != 1 {
				t.Errorf("%s is %s but its effect happened %d times", r.id, call.State, effects)
			}
		case "unavailable", "not_carried_out":
			if effects != 0 {
				t.Errorf("%s is %s but its effect happened %d times", r.id, call.State, effects)
			}
		case "needs_person":
			// Allowed only when the owner cannot vouch for it: studio's
			// journal is minutes old, and a call it never saw, made within
			// the clock skew of its birth, is one it cannot say never
			// arrived (docs/protocol.md, "Journal continuity").
			if call.OwnerState != "expired" || effects != 0 {
				t.Errorf("%s needs a person, though the owner said %q and its effect happened %d times", r.id, call.OwnerState, effects)
			}
		default:
			t.Errorf("%s did not settle: %s (%s)", r.id, call.State, call.Detail)
		}
		if n := owner.RequestsFor(r.id); n > 1 {
			t.Errorf("%s reached the owner app %d times", r.id, n)
		}
	}
	t.Logf("%d calls from %d apps, %d restarts of the caller's Delta, %d prompt re-sends; the apps were told %v; settled %v",
		len(all), apps, restarts, resends.Load(), counts, settled)
	if resends.Load() == 0 {
		t.Errorf("no app re-sent a call: the restarts missed every call")
	}
}
