package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// soakApp is the fault soak's owner app: what a call does is in its path,
// /MODE/ID, and its own log of effects (by request id) is the judge.
//
//	fast         acts, answers 201
//	slow-before  waits 0-3 s, acts, answers 201 (past a 2 s timeout: unknown)
//	slow-after   acts, waits 0-3 s, answers 201
//	reset        acts, then resets the connection (no answer)
//	fail         answers 500 without acting
//	big          acts, answers 201: its body is 3 MiB (it streams)
//	cut          the calling app abandons its 4 MiB upload half-way: the
//	             owner app must never see it (it would act)
type soakApp struct {
	URL string

	mu       sync.Mutex
	effects  map[string]int
	requests map[string]int
}

var soakModes = []string{"fast", "fast", "slow-before", "slow-after", "reset", "fail", "big", "cut"}

// startSoakApp serves the soak's owner app on ln (nil: a new listener on
// loopback).
func startSoakApp(t *testing.T, ln net.Listener) *soakApp {
	t.Helper()
	a := &soakApp{effects: map[string]int{}, requests: map[string]int{}}
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	srv := &http.Server{Handler: http.HandlerFunc(a.serve)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	a.URL = "http://" + ln.Addr().String()
	return a
}

func (a *soakApp) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	mode, id, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	a.mu.Lock()
	a.requests[id]++
	a.mu.Unlock()
	act := func() { a.mu.Lock(); a.effects[id]++; a.mu.Unlock() }
	pause := func() { time.Sleep(time.Duration(rand.IntN(3000)) * time.Millisecond) } // the fault itself
	switch mode {
	case "slow-before":
		pause()
		act()
	case "slow-after":
		act()
		pause()
	case "reset":
		act()
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
		return
	case "fail":
		http.Error(w, "the app failed and did nothing", http.StatusInternalServerError)
		return
	default:
		act()
	}
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, "done %s", id)
}

// cutUpload starts a call of a 4 MiB body through c and abandons it
// half-way (the connection reset). It fails only when the local Delta
// could not be reached.
func cutUpload(c *gatewaytest.Client, path, id string) error {
	dial := c.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(context.Background(), "tcp", strings.TrimPrefix(c.URL, "http://"))
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nX-Delta-Request-Id: %s\r\nX-Delta-App: soak\r\nContent-Length: %d\r\n\r\n",
		path, c.Token, id, 4<<20); err != nil {
		return err
	}
	conn.Write(bytes.Repeat([]byte("C"), 2<<20)) // what it got to send before it went
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	return nil
}

func (a *soakApp) counts(id string) (effects, requests int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.effects[id], a.requests[id]
}

// soakDuration is how long a fault soak makes calls: DELTA_SOAK (a Go
// duration; make soak sets it), else def, the version in make test.
func soakDuration(t *testing.T, def time.Duration) time.Duration {
	if v := os.Getenv("DELTA_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("DELTA_SOAK=%q is not a duration: %v", v, err)
		}
		return d
	}
	if testing.Short() {
		t.Skip("the fault soak runs for a minute; -short skips it")
	}
	return def
}

// TestFaultSoak: apps make calls with request ids through laptop to studio
// (static mode, on loopback) while faults are injected at random: the
// owner app slow before or after its effect, resetting after reading,
// answering 500; either Delta SIGKILLed and restarted; the owner's journal
// emptied. The lab's version (TestFaultSoakLab) adds roads pulled.
func TestFaultSoak(t *testing.T) {
	run := soakDuration(t, 30*time.Second)
	laptop, studio := twoProcs(t)
	laptop.args = append(laptop.args, "--listen", freeAddr(t)) // apps find a restarted Delta where they left it
	studio.start(t)
	laptop.start(t)
	app := startSoakApp(t, nil)
	studio.register(t, "notes", app.URL)
	faultSoak(t, soakSetup{run: run, laptop: laptop, studio: studio, app: app})
}

// soakSetup is what a fault soak runs on: the two Deltas (static mode or
// the lab's), the owner app on studio, how long, and faults of the setup's
// own (the lab's roads) besides those every soak has.
type soakSetup struct {
	run            time.Duration
	laptop, studio *proc
	app            *soakApp
	afterStart     func(p *proc) // after a restart, before calls resume (the lab waits for the tailnet)
	extra          map[string]func()
}

// faultSoak makes the calls and injects the faults, then, with the faults
// over, waits for every call to be reconciled and judges it against the
// owner app's own log of effects. An app whose local connection breaks
// sends the same request with the same id again at once.
func faultSoak(t *testing.T, s soakSetup) {
	const apps = 16
	laptop, studio, app, run := s.laptop, s.studio, s.app, s.run
	var mu sync.Mutex // guards the clients, which change at each restart
	clients := map[*proc]*gatewaytest.Client{laptop: laptop.c, studio: studio.c}
	client := func(p *proc) *gatewaytest.Client { mu.Lock(); defer mu.Unlock(); return clients[p] }

	type result struct {
		id, mode, told, detail string
		status                 int
		resent                 int
	}
	var (
		results []result
		resMu   sync.Mutex
		stop    atomic.Bool
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for a := range apps {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				id := fmt.Sprintf("soak-%d-%d", a, i)
				mode := soakModes[rand.IntN(len(soakModes))]
				r := result{id: id, mode: mode}
				deadline := time.Now().Add(2 * time.Minute)
				body := []byte("write " + id)
				if mode == "big" {
					body = bytes.Repeat([]byte("B"), 3<<20)
				}
				for mode == "cut" {
					// Abandoned half-way, as an app that crashed: never
					// sent again.
					if err := cutUpload(client(laptop), "/v1/peers/studio/notes/"+mode+"/"+id, id); err != nil {
						if time.Now().Before(deadline) && ctx.Err() == nil {
							r.resent++
							time.Sleep(20 * time.Millisecond)
							continue
						}
					}
					r.told = "cut by the app"
					break
				}
				for mode != "cut" {
					resp, err := client(laptop).Do("POST", "/v1/peers/studio/notes/"+mode+"/"+id, body,
						"X-Delta-Request-Id", id, "X-Delta-Timeout", "2", "X-Delta-App", "soak")
					if err == nil {
						r.told, r.detail, r.status = resp.Outcome(), resp.Err.Detail, resp.Status
						break
					}
					if time.Now().After(deadline) || ctx.Err() != nil {
						r.told = "no answer: " + err.Error()
						break
					}
					r.resent++ // the local Delta is down or was killed mid-call: the same id again
					time.Sleep(20 * time.Millisecond)
				}
				resMu.Lock()
				results = append(results, r)
				resMu.Unlock()
				if r.told != "answered" && r.told != "outcome_unknown" {
					// As an app would: not at once again after "nothing
					// was sent" (the peer is down), so that such calls
					// do not crowd out the ones that reach it.
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}

	// The faults, at random every 1-4 s, until the run ends.
	faults := map[string]int{}
	restart := func(p *proc) {
		p.kill(t)
		p.start(t)
		if s.afterStart != nil {
			s.afterStart(p)
		}
		mu.Lock()
		clients[p] = p.c
		mu.Unlock()
	}
	end := time.Now().Add(run)
	emptied := false
	for time.Now().Before(end) {
		time.Sleep(time.Duration(1000+rand.IntN(3000)) * time.Millisecond) // the faults' own pace, not a wait for a condition
		switch {
		case !emptied && time.Now().After(end.Add(-run/2)):
			// Once, past half-way: what a copy or a backup of delta.db
			// alone gives. The app registry goes with it.
			studio.kill(t)
			loseJournal(studio.dir, "emptied")
			studio.start(t)
			if s.afterStart != nil {
				s.afterStart(studio)
			}
			studio.register(t, "notes", app.URL)
			mu.Lock()
			clients[studio] = studio.c
			mu.Unlock()
			emptied = true
			faults["owner's journal emptied (killed, delta.db and its WAL removed)"]++
		default:
			kinds := []string{"caller's Delta SIGKILLed and restarted", "owner's Delta SIGKILLed and restarted"}
			for k := range s.extra {
				kinds = append(kinds, k)
			}
			sort.Strings(kinds) // a stable list, then a random pick
			k := kinds[rand.IntN(len(kinds))]
			switch k {
			case "caller's Delta SIGKILLed and restarted":
				restart(laptop)
			case "owner's Delta SIGKILLed and restarted":
				restart(studio)
			default:
				s.extra[k]()
			}
			faults[k]++
		}
	}
	stop.Store(true)
	wg.Wait()

	// Judge every call, once it has settled, against the effect log.
	told, settled := map[string]int{}, map[string]int{}
	byMode := map[string]int{}
	var dup, falseNotSent, lost, unsettled, wrong, resent, reached int
	for _, r := range results {
		byMode[r.mode]++
		told[r.told]++
		resent += r.resent
		// The call settles first: an app may still be acting on a call
		// whose caller has given up (slow-before acts up to 3 s after it
		// got the call), and its effect is counted once it has answered.
		resp, err := client(laptop).Do("GET", "/v1/calls/"+r.id+"?wait=120", nil)
		if err != nil {
			t.Fatalf("ask laptop about %s: %v", r.id, err)
		}
		effects, requests := app.counts(r.id)
		if requests > 0 {
			reached++
		}
		if effects > 1 || requests > 1 {
			dup++
			t.Errorf("DUPLICATE: %s (%s) reached the app %d times and acted %d times", r.id, r.mode, requests, effects)
		}
		if (r.told == "unavailable" || r.told == "forbidden" || r.told == "not_found") && effects != 0 {
			falseNotSent++
			t.Errorf("FALSE NOTHING WAS SENT: %s (%s) was told %s (%s) but acted %d times", r.id, r.mode, r.told, r.detail, effects)
		}
		if resp.Status == http.StatusNotFound {
			// Only a call refused before it was recorded may be unknown
			// to the journal (or one its app cut before it left); it must
			// have been told so and not acted.
			if r.told != "unavailable" && r.mode != "cut" || effects != 0 {
				lost++
				t.Errorf("LOST: %s (%s) was told %s, acted %d times, and laptop has no record of it", r.id, r.mode, r.told, effects)
			}
			settled["(not recorded)"]++
			continue
		}
		var c localapi.Call
		if err := json.Unmarshal(resp.Body, &c); err != nil {
			t.Fatalf("%s: %v: %s", r.id, err, resp.Body)
		}
		settled[c.State]++
		ok := true
		switch c.State {
		case "answered", "carried_out":
			ok = effects == 1 && r.mode != "cut" || r.mode == "fail" && effects == 0 && c.Answer != nil && c.Answer.Status == 500
		case "unavailable", "not_carried_out":
			ok = effects == 0
			if !ok {
				falseNotSent++
			}
		case "needs_person":
			// Explicit: a person checks. Allowed only where the owner
			// could not vouch: the call was interrupted by its restart,
			// the app's connection broke, or its journal was emptied.
		default:
			unsettled++
			ok = false
		}
		if !ok {
			wrong++
			t.Errorf("%s (%s): settled %s (owner said %q: %s) but acted %d times", r.id, r.mode, c.State, c.OwnerState, c.Detail, effects)
		}
	}
	keys := func(m map[string]int) string {
		var ks []string
		for k, v := range m {
			ks = append(ks, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(ks)
		return strings.Join(ks, ", ")
	}
	t.Logf("FAULT SOAK: %d calls in %s from %d apps (%s), %d of them reached the owner app; faults: %s; prompt re-sends %d; apps were told: %s; settled: %s; "+
		"duplicates %d, false nothing-was-sent %d, lost %d, unsettled %d, settled against the effect log %d",
		len(results), run, apps, keys(byMode), reached, keys(faults), resent, keys(told), keys(settled), dup, falseNotSent, lost, unsettled, wrong)
	if len(results) < 100 {
		t.Errorf("only %d calls in %s", len(results), run)
	}
}
