package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// Apps that wait (issue 62, DESIGN §2c): silence is the app's, death is
// the road's. Two Deltas run as processes; the clients are real ones
// (curl, Go's and Python's) given only a forward's URL, as a new user
// would give them; the owner apps answer late, long-poll, stream events
// with long quiet gaps, and block before their head as Consul's ?wait=
// does.

// waitApp is an owner app whose answers take their time.
type waitApp struct {
	*httptest.Server
	// gone counts requests whose client went away before their answer;
	// effects the calls it carried out (each once it answered).
	gone, effects atomic.Int32
	// arrived has each request's path as it arrives.
	arrived chan string
	mu      sync.Mutex
	bodyAt  map[string]time.Time // when /longpoll?id= wrote its body
}

// startWaitApp serves:
//
//	GET|POST /slow?ms=N       its answer after N ms (a call's effect then)
//	GET /fast                 at once, never cached (no-store)
//	GET /longpoll?ms=N&id=I   its head at once, its body ([]) after N ms
//	GET /events?quiet=N       an event stream: 1, then N ms of silence, 2, 3
//	GET|POST /blocking?ms=N   no head for N ms, then its answer
func startWaitApp(t *testing.T) *waitApp { return startWaitAppOn(t, nil) }

// startWaitAppOn is startWaitApp on ln (a lab namespace's), or on a port
// of its own when ln is nil.
func startWaitAppOn(t *testing.T, ln net.Listener) *waitApp {
	a := &waitApp{bodyAt: map[string]time.Time{}, arrived: make(chan string, 64)}
	ms := func(r *http.Request) time.Duration {
		n, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		return time.Duration(n) * time.Millisecond
	}
	// wait waits d, or until its client went away (false).
	wait := func(r *http.Request, d time.Duration) bool {
		select {
		case <-time.After(d): // the app's own time: the point of the app
			return true
		case <-r.Context().Done():
			a.gone.Add(1)
			return false
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		ok := wait(r, ms(r))
		if r.Method == http.MethodPost {
			if !ok {
				// The app acts anyway, as most do once a request is in:
				// its answer is recorded by the owner's Delta.
				time.Sleep(ms(r) / 2)
			}
			a.effects.Add(1)
		}
		io.WriteString(w, "slow")
	})
	mux.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "fast")
	})
	mux.HandleFunc("/longpoll", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		if !wait(r, ms(r)) {
			return
		}
		a.mu.Lock()
		a.bodyAt[r.URL.Query().Get("id")] = time.Now()
		a.mu.Unlock()
		io.WriteString(w, "[]")
	})
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		quiet, _ := strconv.Atoi(r.URL.Query().Get("quiet"))
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		io.WriteString(w, "data: 1\n\n")
		f.Flush()
		if !wait(r, time.Duration(quiet)*time.Millisecond) {
			return
		}
		for _, ev := range []string{"2", "3"} {
			io.WriteString(w, "data: "+ev+"\n\n")
			f.Flush()
		}
	})
	mux.HandleFunc("/blocking", func(w http.ResponseWriter, r *http.Request) {
		if !wait(r, ms(r)) {
			return
		}
		io.WriteString(w, "done")
	})
	a.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read whole first, so that a client that goes away is seen
		// (net/http watches for it once the body is read).
		io.Copy(io.Discard, r.Body)
		select {
		case a.arrived <- r.URL.Path:
		default:
		}
		mux.ServeHTTP(w, r)
	}))
	if ln != nil {
		a.Listener.Close()
		a.Listener = ln
	}
	a.Start()
	t.Cleanup(a.Close)
	return a
}

// waitArrived waits for a request to path to reach the app.
func (a *waitApp) waitArrived(t *testing.T, path string) {
	t.Helper()
	for {
		select {
		case p := <-a.arrived:
			if p == path {
				return
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no request to %s reached the app in 30 s", path)
		}
	}
}

// waitStatus is what the tests read of /v1/status about roads dropped
// and exchanges given up.
type waitStatus struct {
	Peers []struct {
		Name  string
		Roads []struct {
			Road, State  string
			DroppedAt    time.Time `json:"dropped_at"`
			DroppedWhy   string    `json:"dropped_why"`
			DropEvidence string    `json:"drop_evidence"`
		}
	}
	Routes struct {
		Drops map[string]uint64
	}
	Counters localapi.Counters
}

func (p *proc) waitStatus(t *testing.T) waitStatus {
	t.Helper()
	var st waitStatus
	r := p.c.Must(t, "GET", "/v1/status", nil)
	if err := json.Unmarshal(r.Body, &st); err != nil {
		t.Fatalf("status: %v: %s", err, r.Body)
	}
	return st
}

// noDrops fails t if p dropped a road: in its status, its counters or its
// log.
func (p *proc) noDrops(t *testing.T) {
	t.Helper()
	st := p.waitStatus(t)
	for _, peer := range st.Peers {
		for _, rd := range peer.Roads {
			if !rd.DroppedAt.IsZero() {
				t.Errorf("%s dropped its %s road to %s at %s: %s", p.name, rd.Road, peer.Name, rd.DroppedAt, rd.DroppedWhy)
			}
		}
	}
	if len(st.Routes.Drops) != 0 {
		t.Errorf("%s's roads dropped, by evidence: %v", p.name, st.Routes.Drops)
	}
	if p.log.Contains("route dropped") {
		t.Errorf("%s's log says a route was dropped", p.name)
	}
}

// TestAppsThatWait: through two Deltas as processes and a forward, a
// client that gives up ends its own exchange and nothing else, a
// long-poll's head arrives at once and its body when it comes, an event
// stream quiet for 40 s loses nothing, an app that sends no head for 60 s
// is answered (the forward has no timeout of its own), and a call that
// waits 40 s for its owner gets its answer. No road is dropped by any of
// it.
func TestAppsThatWait(t *testing.T) {
	t.Parallel() // its minute of waiting runs beside the other long tests
	need(t, "curl", "python3")
	laptop, studio := twoProcs(t)
	studio.start(t)
	laptop.start(t)
	app, other := startWaitApp(t), startWaitApp(t)
	studio.register(t, "wait", app.URL)
	studio.register(t, "other", other.URL)
	fwd := forwardURL(t, laptop, "wait")
	otherFwd := forwardURL(t, laptop, "other")

	t.Run("a client that gives up", func(t *testing.T) {
		// curl gives up on a read that the app answers after 6 s.
		out, err := exec.Command("curl", "-sS", "-m", "2", fwd+"slow?ms=6000").CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 28 {
			t.Fatalf("curl -m 2 on a 6 s read: %v %s, want exit 28 (its own timeout)", err, out)
		}
		gatewaytest.WaitFor(t, 10*time.Second, "the owner app to see its client go", func() bool { return app.gone.Load() >= 1 })
		// Then, for the next second and a half, another app's reads on
		// the same peer are answered, fresh: not stale, not refused.
		tick := time.NewTicker(50 * time.Millisecond) // a pace, not a wait for something
		defer tick.Stop()
		n := 0
		for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); <-tick.C {
			resp, err := http.Get(otherFwd + "fast")
			if err != nil {
				t.Fatalf("another app's read after the give-up: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("X-Delta-Outcome") != "answered" || string(b) != "fast" {
				t.Fatalf("another app's read %d after the give-up: %d %s %q", n, resp.StatusCode, resp.Header.Get("X-Delta-Outcome"), b)
			}
			n++
		}

		// A call the client gives up on after it left: outcome unknown,
		// then reconciled to the app's answer; its road kept too.
		out, err = exec.Command("curl", "-sS", "-m", "2", "-X", "POST", "-H", "X-Delta-Request-Id: wait-gives-up-1", "--data", "x",
			fwd+"slow?ms=4000").CombinedOutput()
		if !errors.As(err, &ee) || ee.ExitCode() != 28 {
			t.Fatalf("curl -m 2 on a 4 s call: %v %s, want exit 28", err, out)
		}
		var rec *localapi.Call
		gatewaytest.WaitFor(t, 60*time.Second, "the call given up on to be settled", func() bool {
			rec = laptop.c.GetCall(t, "wait-gives-up-1", 0)
			return rec.State == "carried_out"
		})
		if app.effects.Load() != 1 || rec.Answer == nil || rec.Answer.Status != 200 {
			t.Errorf("the call given up on: %d effects, record %+v; want it carried out once, with the app's answer", app.effects.Load(), rec)
		}
		st := laptop.waitStatus(t)
		if st.Counters.Counters["gave_up_read"] != 1 || st.Counters.Counters["gave_up_call"] != 1 {
			t.Errorf("give-ups counted: %v, want one read and one call", st.Counters.Counters)
		}
		if !laptop.log.Contains("an app stopped waiting: its read is ended, and the road kept") {
			t.Errorf("laptop's log does not name the give-up")
		}
		laptop.noDrops(t)
	})

	// The four quiet answers at once (each in its own goroutine: they
	// wait, they do not work, and one after another they would take
	// three minutes).
	t.Run("quiet answers", func(t *testing.T) {
		var wg sync.WaitGroup
		wg.Go(func() {
			var head time.Time
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				GotFirstResponseByte: func() { head = time.Now() }})
			req, _ := http.NewRequestWithContext(ctx, "GET", fwd+"longpoll?ms=45000&id=lp", nil)
			began := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("the long-poll: %v", err)
				return
			}
			headIn := head.Sub(began)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(began)
			app.mu.Lock()
			bodyAt := app.bodyAt["lp"]
			app.mu.Unlock()
			t.Logf("WAIT a long-poll through a forward (Go's client): its head in %v, its body whole after %v", headIn.Round(time.Millisecond), took.Round(time.Second))
			if err != nil || resp.StatusCode != 200 || string(b) != "[]" {
				t.Errorf("the long-poll: %d %q %v, want 200 [] after 45 s", resp.StatusCode, b, err)
				return
			}
			if !head.Before(bodyAt) || headIn > 5*time.Second {
				t.Errorf("the head came %v after the request, the app's body %v after it: the head must pass on when the app sends it", headIn, bodyAt.Sub(began))
			}
		})
		wg.Go(func() {
			began := time.Now()
			out, err := exec.Command("curl", "-sS", "-N", fwd+"events?quiet=40000").CombinedOutput()
			t.Logf("WAIT an event stream quiet for 40 s (curl -N): %q after %v", out, time.Since(began).Round(time.Second))
			if err != nil || string(out) != "data: 1\n\ndata: 2\n\ndata: 3\n\n" {
				t.Errorf("curl -N on the stream: %v %q, want the three events", err, out)
			}
		})
		wg.Go(func() {
			py := `import sys, urllib.request
r = urllib.request.urlopen(sys.argv[1])
print(r.status, r.read().decode())`
			began := time.Now()
			out, err := exec.Command("python3", "-c", py, fwd+"blocking?ms=60000").CombinedOutput()
			t.Logf("WAIT no head for 60 s, a forward without a timeout (Python's urllib): %q after %v", strings.TrimSpace(string(out)), time.Since(began).Round(time.Second))
			if err != nil || strings.TrimSpace(string(out)) != "200 done" {
				t.Errorf("Python's urllib on a 60 s blocking query: %v %s", err, out)
			}
		})
		wg.Go(func() {
			began := time.Now()
			out, err := exec.Command("curl", "-sS", "-X", "POST", "--data", "x", "-w", " %{http_code}", fwd+"blocking?ms=40000").CombinedOutput()
			t.Logf("WAIT a call that waits 40 s for its owner (curl): %q after %v", out, time.Since(began).Round(time.Second))
			if err != nil || string(out) != "done 200" {
				t.Errorf("curl's call: %v %q, want done 200", err, out)
			}
		})
		wg.Wait()
	})
	laptop.noDrops(t)
	studio.noDrops(t)
}

// TestAppTimeouts: the wait for an answer's head is the app's: a timeout
// its client says (X-Delta-Timeout), else its forward's (delta forward
// --timeout), else its owner app's (delta apps add --timeout), else the
// local API's 30 s and no limit through a forward. Each answers 504 at
// its own time, naming it, and drops no road.
func TestAppTimeouts(t *testing.T) {
	laptop, studio := twoProcs(t)
	studio.start(t)
	laptop.start(t)
	app := startWaitApp(t)
	for _, args := range [][]string{{"apps", "add", "slowapp", app.URL, "--timeout", "1.5"}, {"apps", "add", "open", app.URL}} {
		if out, errOut, code := delta(t, append([]string{"--state-dir", studio.dir}, args...)...); code != 0 {
			t.Fatalf("delta %s: %d %s %s", strings.Join(args, " "), code, out, errOut)
		}
	}
	out, _, _ := delta(t, "--state-dir", studio.dir, "apps")
	if !strings.Contains(out, "slowapp\t"+app.URL+"\ttimeout 1.5 s") || !strings.Contains(out, "open\t"+app.URL+"\ttimeout: the caller's") {
		t.Errorf("delta apps:\n%s", out)
	}
	out, errOut, code := delta(t, "--state-dir", laptop.dir, "forward", "studio/open", "--timeout", "1")
	fwd := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("delta forward --timeout 1: %d %s %s", code, out, errOut)
	}
	list, _, _ := delta(t, "--state-dir", laptop.dir, "forward", "--list")
	if !strings.Contains(list, "timeout 1 s") {
		t.Errorf("delta forward --list does not show the forward's timeout:\n%s", list)
	}
	for _, tc := range []struct {
		name, url  string
		hdr        []string
		status     int
		says       string
		longerThan time.Duration
	}{
		{"the owner app's own", laptop.c.URL + "/v1/peers/studio/slowapp/blocking?ms=4000", nil, 504, "did not answer within 1.5s", time.Second},
		{"the client's, over the app's", laptop.c.URL + "/v1/peers/studio/slowapp/blocking?ms=1000", []string{"X-Delta-Timeout", "3"}, 200, "done", 0},
		{"the forward's", fwd + "blocking?ms=4000", nil, 504, "did not answer within 1s", 500 * time.Millisecond},
		{"the client's, over the forward's", fwd + "blocking?ms=1500", []string{"X-Delta-Timeout", "4"}, 200, "done", 0},
	} {
		req, _ := http.NewRequest("GET", tc.url, nil)
		if strings.HasPrefix(tc.url, laptop.c.URL) {
			req.Header.Set("Authorization", "Bearer "+laptop.c.Token)
		}
		for i := 0; i+1 < len(tc.hdr); i += 2 {
			req.Header.Set(tc.hdr[i], tc.hdr[i+1])
		}
		began := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.says) || time.Since(began) < tc.longerThan {
			t.Errorf("%s: %d %s after %v, want %d saying %q", tc.name, resp.StatusCode, b, time.Since(began), tc.status, tc.says)
		}
	}
	laptop.noDrops(t)
	if strings.Contains(fmt.Sprint(laptop.waitStatus(t).Counters.Reads), "stale") {
		t.Errorf("a timeout was answered from the cache")
	}
}

// quietPair is a read and a call through a forward that wait quietly for
// their app: the read (a long-poll) has its head and waits for its body,
// the call waits for its head. Each reports how it ended, and when.
type quietPair struct {
	read, call chan quietEnd
}

type quietEnd struct {
	at     time.Time
	status int
	body   string
	err    error
}

// startQuiet sends both through fwd with client, and returns once the
// owner app has both (the read's head has come back too).
func startQuiet(t *testing.T, client *http.Client, fwd string, app *waitApp, id string) *quietPair {
	t.Helper()
	q := &quietPair{read: make(chan quietEnd, 1), call: make(chan quietEnd, 1)}
	head := make(chan error, 1)
	go func() {
		resp, err := client.Get(fwd + "longpoll?ms=600000&id=" + id)
		head <- err
		if err != nil {
			q.read <- quietEnd{at: time.Now(), err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		q.read <- quietEnd{at: time.Now(), status: resp.StatusCode, body: string(b), err: err}
	}()
	if err := <-head; err != nil {
		t.Fatalf("the long-poll's head: %v", err)
	}
	app.waitArrived(t, "/longpoll")
	go func() {
		req, _ := http.NewRequest("POST", fwd+"blocking?ms=20000", strings.NewReader("x"))
		req.Header.Set("X-Delta-Request-Id", id)
		resp, err := client.Do(req)
		if err != nil {
			q.call <- quietEnd{at: time.Now(), err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		q.call <- quietEnd{at: time.Now(), status: resp.StatusCode, body: string(b), err: err}
	}()
	app.waitArrived(t, "/blocking")
	return q
}

// ends waits (at most within) for both to end after cut, and checks that
// each was told in the contract's words: the read cut short (never ended
// as if whole), the call outcome_unknown. It returns how long each took.
func (q *quietPair) ends(t *testing.T, cut time.Time, within time.Duration) (read, call time.Duration) {
	t.Helper()
	for _, c := range []struct {
		what string
		ch   chan quietEnd
		took *time.Duration
	}{{"the long-poll", q.read, &read}, {"the call", q.call, &call}} {
		select {
		case e := <-c.ch:
			*c.took = e.at.Sub(cut)
			switch {
			case c.what == "the long-poll" && (e.err == nil || e.body != ""):
				t.Errorf("%s ended %v after the road died: %d %q %v; want it cut short, never ended as if whole", c.what, *c.took, e.status, e.body, e.err)
			case c.what == "the call" && (e.status != 502 || !strings.Contains(e.body, "outcome_unknown")):
				t.Errorf("%s ended %v after the road died: %d %s %v; want 502 outcome_unknown", c.what, *c.took, e.status, e.body, e.err)
			}
		case <-time.After(within):
			t.Fatalf("%s was not told within %v that its road died", c.what, within)
		}
	}
	return read, call
}

// TestRoadDiesUnderQuietAnswer (the owner's Delta SIGKILLed): a long-poll
// whose head has come and a call waiting for its head, both quiet, are
// ended as soon as the owner's Delta dies: the read cut (never passed on
// as whole), the call outcome_unknown; the call is then settled with the
// owner once it runs again, honestly: it cannot know what its app did
// (needs_person).
func TestRoadDiesUnderQuietAnswer(t *testing.T) {
	t.Parallel() // it waits for its roads to die and its calls to settle, beside the other long tests
	laptop, studio := twoProcs(t)
	studio.start(t)
	laptop.start(t)
	app := startWaitApp(t)
	studio.register(t, "wait", app.URL)
	fwd := forwardURL(t, laptop, "wait")
	q := startQuiet(t, &http.Client{}, fwd, app, "die-kill-1")
	cut := time.Now()
	studio.kill(t)
	read, call := q.ends(t, cut, 15*time.Second)
	t.Logf("WAIT the owner's Delta SIGKILLed under a quiet long-poll and a quiet call: the read cut after %v, the call told outcome_unknown after %v",
		read.Round(time.Millisecond), call.Round(time.Millisecond))
	studio.start(t)
	rec := laptop.c.GetCall(t, "die-kill-1", 0)
	gatewaytest.WaitFor(t, 60*time.Second, "the call to be settled with studio", func() bool {
		rec = laptop.c.GetCall(t, "die-kill-1", 0)
		return rec.State != "unknown" && rec.State != "sending"
	})
	if rec.State != "needs_person" {
		t.Errorf("the call whose owner died under it settled %s (%s), want needs_person: the owner cannot know what its app did", rec.State, rec.Detail)
	}
}
