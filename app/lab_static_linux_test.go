package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// The static lab: two computers as network namespaces paired by ID (no
// tailnet, no control server), joined by a thunderbolt0 link through a
// "cable" namespace and a lan0 link through a "switch" namespace. Their
// addresses change while laptop keeps calling and reading; local discovery
// (UDP broadcast inside the lab) must find studio at its new addresses.
var staticLabRanges = []string{"169.254.88.0/24", "10.88.1.0/24"}

type staticLab struct {
	t      *testing.T
	prefix string
}

func (l *staticLab) ns(s string) string { return l.prefix + s }

func newStaticLab(t *testing.T) *staticLab {
	t.Helper()
	return newStaticLabOn(t, "10.88.1.1/24", "10.88.1.2/24", staticLabRanges)
}

// newStaticLabOn is newStaticLab with the lan link's addresses given, and
// the ranges the root namespace must not reach.
func newStaticLabOn(t *testing.T, lanA, lanB string, guard []string) *staticLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the static lab needs root to make network namespaces (CI runs as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("the static lab needs ip (make deps installs iproute2 as root)")
	}
	l := &staticLab{t: t, prefix: fmt.Sprintf("ds%d", os.Getpid()%100000)}
	for _, r := range guard {
		sh(t, "ip", "route", "replace", "unreachable", r)
	}
	t.Cleanup(func() {
		for _, r := range guard {
			exec.Command("ip", "route", "del", "unreachable", r).Run()
		}
	})
	for _, n := range []string{"a", "b", "cable", "switch"} {
		name := l.ns(n)
		sh(t, "ip", "netns", "add", name)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
		sh(t, "ip", "-n", name, "link", "set", "lo", "up")
	}
	link := func(mid, bridge, ifname, cidrA, cidrB string) { labLink(t, l.ns, mid, bridge, ifname, cidrA, cidrB) }
	link("cable", "tb", "thunderbolt0", "169.254.88.1/24", "169.254.88.2/24")
	link("switch", "sw", "lan0", lanA, lanB)
	return l
}

// move gives host's interface a new address in place of old, as a DHCP
// lease that changed or a Thunderbolt bridge replugged (its link goes down
// and up again).
func (l *staticLab) move(host, ifname, old, new string) {
	sh(l.t, "ip", "-n", l.ns(host), "link", "set", ifname, "down")
	sh(l.t, "ip", "-n", l.ns(host), "addr", "del", old, "dev", ifname)
	sh(l.t, "ip", "-n", l.ns(host), "addr", "add", new, "dev", ifname)
	sh(l.t, "ip", "-n", l.ns(host), "link", "set", ifname, "up")
}

// TestLabStaticFound: laptop and studio, paired by ID, every road TLS; a
// steady stream of calls and reads from laptop while studio's thunderbolt
// address changes (replugged) and then its lan address (a new lease) with
// the cable out. Each time, local discovery finds studio again; the time
// from the change to the first request answered at the new address is
// logged (not asserted). Every call's outcome is checked against the
// owner app's effects: 0 duplicates, 0 lost.
func TestLabStaticFound(t *testing.T) {
	l := newStaticLab(t)
	root := t.TempDir()
	laptop := &proc{name: "laptop", dir: filepath.Join(root, "laptop")}
	studio := &proc{name: "studio", dir: filepath.Join(root, "studio")}
	ids := makeIDs(t, laptop, studio)
	write := func(p, other *proc, tb, lan string) {
		cfg := map[string]any{"mode": "static", "name": p.name, "peer_listen": "0.0.0.0:7421",
			"peers": []any{map[string]any{"name": other.name, "id": ids[other], "roads": map[string]string{"thunderbolt": tb, "lan": lan}}}}
		b, _ := json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(p.dir, "config.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(laptop, studio, "169.254.88.2:7421", "10.88.1.2:7421")
	write(studio, laptop, "169.254.88.1:7421", "10.88.1.1:7421")
	for host, p := range map[string]*proc{"a": laptop, "b": studio} {
		p.wrap = []string{"ip", "netns", "exec", l.ns(host)}
		p.dial = nsDialer(l.ns(host))
		p.env = []string{"DELTA_DISCOVERY=on"} // inside the lab's namespaces only
	}
	studio.start(t)
	laptop.start(t)
	app := gatewaytest.StartOwnerAppOn(t, listenIn(t, l.ns("b")))
	studio.register(t, "notes", app.URL)
	laptop.waitRoad(t, "studio", "thunderbolt", "up")

	// The stream: a call and a read every 50 ms, each call with its own id,
	// each on its own (one that waits out a connect timeout at an old
	// address does not hold up the next).
	type sent struct {
		id, outcome, road string
		at                time.Time // when it was sent
	}
	var mu sync.Mutex
	var calls []sent
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		defer wg.Wait()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				s := sent{id: id, at: time.Now()}
				r, err := laptop.c.Do("POST", "/v1/peers/studio/notes/answer/"+id, []byte("x"), "X-Delta-Request-Id", id, "X-Delta-Timeout", "5")
				if err == nil {
					s.outcome, s.road = r.Header.Get("X-Delta-Outcome"), r.Header.Get("X-Delta-Route")
				} else {
					s.outcome = "no answer from the local API: " + err.Error()
				}
				laptop.c.Do("GET", "/v1/peers/studio/notes/read/"+id, nil)
				mu.Lock()
				calls = append(calls, s)
				mu.Unlock()
			}(fmt.Sprintf("lab-static-%d", i))
		}
	}()
	// firstAt waits for the first call answered over road after t0.
	firstAt := func(road string, t0 time.Time) time.Duration {
		var took time.Duration
		gatewaytest.WaitFor(t, 60*time.Second, "a call answered over "+road+" at studio's new address", func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range calls {
				if c.at.After(t0) && c.outcome == "answered" && c.road == road {
					took = c.at.Sub(t0)
					return true
				}
			}
			return false
		})
		return took
	}

	t0 := time.Now()
	l.move("b", "thunderbolt0", "169.254.88.2/24", "169.254.88.20/24")
	tb := firstAt("thunderbolt", t0)
	laptop.waitRoad(t, "studio", "thunderbolt", "up")
	// A few more answered there before the next change.
	settle := func(road string) {
		mark := time.Now()
		gatewaytest.WaitFor(t, 30*time.Second, "5 calls answered over "+road, func() bool {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, c := range calls {
				if c.at.After(mark) && c.outcome == "answered" && c.road == road {
					n++
				}
			}
			return n >= 5
		})
	}
	settle("thunderbolt")
	if a := laptop.roadAddress(t, "studio", "thunderbolt"); a != "169.254.88.20:7421" {
		t.Fatalf("laptop's thunderbolt road to studio is %s, want the new address", a)
	}

	for _, port := range []string{"tba", "tbb"} { // the cable out (NO-CARRIER at both ends): only the lan is left
		sh(t, "ip", "-n", l.ns("cable"), "link", "set", port, "down")
	}
	t1 := time.Now()
	l.move("b", "lan0", "10.88.1.2/24", "10.88.1.20/24")
	lan := firstAt("lan", t1)
	settle("lan")
	close(stop)
	<-done
	t.Logf("STATIC LAB: from studio's address change to the first call answered at the new address: thunderbolt (replugged) %s, lan (a new lease, cable out) %s", tb, lan)

	// Every call's outcome against the owner app's effects.
	mu.Lock()
	defer mu.Unlock()
	var answered, notSent, unknown int
	for _, c := range calls {
		switch c.outcome {
		case "answered":
			answered++
		case "outcome_unknown":
			unknown++
		default:
			notSent++
		}
	}
	for _, c := range calls {
		got := app.Effects("/answer/" + c.id)
		rec := laptop.c.GetCall(t, c.id, 30)
		switch {
		case got > 1:
			t.Errorf("call %s was carried out %d times", c.id, got)
		case c.outcome == "answered" && got != 1:
			t.Errorf("call %s was answered but carried out %d times", c.id, got)
		case rec != nil && rec.State == "unknown":
			t.Errorf("call %s is still unknown", c.id)
		case rec != nil && (rec.State == "carried_out") != (got == 1) && rec.State != "answered" && rec.State != "needs_person":
			t.Errorf("call %s settled %s, but the app's effects are %d", c.id, rec.State, got)
		}
	}
	if os.Getenv("LAB_DEBUG") != "" {
		t.Logf("laptop's log:\n%s\nstudio's log:\n%s", laptop.log, studio.log)
	}
	t.Logf("STATIC LAB: %d calls: %d answered, %d told nothing was sent or carried out, %d outcome unknown then settled", len(calls), answered, notSent, unknown)
}

// roadAddress is the address of p's road to peer, "" when it has none.
func (p *proc) roadAddress(t *testing.T, peer, road string) string {
	var st localapi.Status
	if err := json.Unmarshal(p.c.Must(t, "GET", "/v1/status", nil).Body, &st); err != nil {
		t.Fatal(err)
	}
	for _, ps := range st.Peers {
		if ps.Name == peer {
			for _, r := range ps.Roads {
				if r.Road == road {
					return r.Address
				}
			}
		}
	}
	return ""
}

// TestLabReadmePaired: the README's "Your computers", pasted as is onto
// two computers (namespaces on the README's own addresses, 192.168.1.10
// and .20): the laptop's init line from README.md, the line it prints run
// on the studio, the delta pair line that prints run on the laptop, then
// delta on each. The first call works, over TLS pinned to the IDs.
func TestLabReadmePaired(t *testing.T) {
	if os.Getenv("DELTA_OFFLINE_NS") == "" && os.Geteuid() == 0 {
		// The README's addresses may be this machine's own network: the
		// root-namespace guard below would take it away while the test
		// runs. make unit runs the tests inside an offline namespace.
		t.Skip("runs only inside make unit's offline namespace (DELTA_OFFLINE_NS), which the README's addresses cannot leave")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	for line := range strings.Lines(string(readme)) {
		if strings.HasPrefix(line, "delta init --static --name laptop ") {
			first = strings.Fields(line)
		}
	}
	if first == nil {
		t.Fatal("README.md has no line \"delta init --static --name laptop …\" in Your computers")
	}
	l := newStaticLabOn(t, "192.168.1.10/24", "192.168.1.20/24", []string{"192.168.1.0/24", "169.254.88.0/24"})
	root := t.TempDir()
	dirs := map[string]string{"a": filepath.Join(root, "laptop"), "b": filepath.Join(root, "studio")}
	// run runs a pasted line (its first word, delta, is this build) on host.
	run := func(host string, line []string) string {
		t.Helper()
		if line[0] != "delta" {
			t.Fatalf("a pasted line that is not delta's: %v", line)
		}
		cmd := exec.Command("ip", append([]string{"netns", "exec", l.ns(host), bin}, line[1:]...)...)
		cmd.Env = append(os.Environ(), "DELTA_STATE_DIR="+dirs[host], "TS_NO_LOGS_NO_SUPPORT=true")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s on %s: %v\n%s", strings.Join(line, " "), host, err, out)
		}
		return string(out)
	}
	printed := func(out, prefix string) []string {
		for line := range strings.Lines(out) {
			if f := strings.Fields(line); len(f) > 2 && strings.HasPrefix(strings.TrimSpace(line), prefix) {
				return f
			}
		}
		t.Fatalf("no line %q… in:\n%s", prefix, out)
		return nil
	}
	out := run("a", first)
	out = run("b", printed(out, "delta init --static --name studio"))
	run("a", printed(out, "delta pair studio="))

	laptop := &proc{name: "laptop", dir: dirs["a"], wrap: []string{"ip", "netns", "exec", l.ns("a")}, dial: nsDialer(l.ns("a"))}
	studio := &proc{name: "studio", dir: dirs["b"], wrap: []string{"ip", "netns", "exec", l.ns("b")}, dial: nsDialer(l.ns("b"))}
	studio.start(t)
	laptop.start(t)
	app := gatewaytest.StartOwnerAppOn(t, listenIn(t, l.ns("b")))
	studio.register(t, "notes", app.URL)
	var r *gatewaytest.Response
	gatewaytest.WaitFor(t, 30*time.Second, "the first call from the laptop answered", func() bool {
		r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/first", []byte("hello"), "X-Delta-Request-Id", "readme-first")
		return r.Header.Get("X-Delta-Outcome") == "answered"
	})
	if r.Status != 201 || r.Header.Get("X-Delta-Route") != "lan" || app.Effects("/answer/first") != 1 {
		t.Fatalf("the first call: %d via %q, carried out %d times", r.Status, r.Header.Get("X-Delta-Route"), app.Effects("/answer/first"))
	}
}

// listenIn is a loopback listener inside namespace ns (an owner app's).
func listenIn(t *testing.T, ns string) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := nsDo(ns, func() (err error) { ln, err = net.Listen("tcp", "127.0.0.1:0"); return err }); err != nil {
		t.Fatal(err)
	}
	return ln
}
