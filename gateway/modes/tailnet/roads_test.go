package tailnet_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/tailnet"
	"github.com/delta-roads/delta/gateway/modes/tailnet/tailnettest"
)

// TestRoads: a read and a call over the tailnet road and over the lan road
// (pinned TLS with tickets); X-Delta-Route says which carried them.
func TestRoads(t *testing.T) {
	_, laptop, studio, app := labPair(t)

	for _, road := range []string{"tailnet", "lan"} {
		if road == "lan" {
			waitRoadUp(t, laptop, studio, "lan")
		}
		r := laptop.c.Must(t, "GET", "/v1/peers/studio/notes/read/"+road, nil, "X-Delta-Route", road)
		if r.Status != 200 || r.Header.Get("X-Delta-Route") != road || string(r.Body) != "GET /read/"+road {
			t.Fatalf("read pinned to %s: %d via %q: %s", road, r.Status, r.Header.Get("X-Delta-Route"), r.Body)
		}
		id := "call-" + road
		r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/"+road, []byte("hi"), "X-Delta-Route", road, "X-Delta-Request-Id", id)
		if r.Status != 201 || r.Header.Get("X-Delta-Route") != road || string(r.Body) != "hi" {
			t.Fatalf("call pinned to %s: %d via %q: %s", road, r.Status, r.Header.Get("X-Delta-Route"), r.Body)
		}
		seen := app.Seen()
		last := seen[len(seen)-1]
		if last.Header.Get("X-Delta-Caller") != "laptop" || last.Header.Get("X-Delta-Request-Id") != id {
			t.Errorf("owner app got caller %q, request id %q", last.Header.Get("X-Delta-Caller"), last.Header.Get("X-Delta-Request-Id"))
		}
		// The receipt is keyed by laptop's stable node ID on both roads.
		rec, err := studio.receipt(t, laptop.n.Self().Node, id)
		if err != nil || rec.CallerName != "laptop" {
			t.Errorf("studio's receipt for %s: %+v %v", id, rec, err)
		}
	}
	// Unpinned, with the lan road believed up, lan is preferred.
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/any", []byte("x"))
	if r.Status != 201 || r.Header.Get("X-Delta-Route") != "lan" {
		t.Errorf("unpinned call: %d via %q", r.Status, r.Header.Get("X-Delta-Route"))
	}
	st := laptop.c.Must(t, "GET", "/v1/status", nil)
	for _, want := range []string{`"state": "Running"`, `"name": "studio"`, `"road": "lan"`, laptop.n.Self().Node} {
		if !strings.Contains(string(st.Body), want) {
			t.Errorf("status lacks %s: %s", want, st.Body)
		}
	}
}

// TestNotLoggedIn: Delta serves its local API before it is logged in to
// the tailnet, and says why there are no peers, with the login URL.
func TestNotLoggedIn(t *testing.T) {
	gatewaytest.NeedLoopback(t, "127.0.0.2")
	l := newLabWith(t, tailnettest.Options{RequireAuth: true})
	nd := &tnode{name: "laptop", dir: filepath.Join(t.TempDir(), "laptop"), log: &gatewaytest.LogBuffer{}, edit: func(*gateway.Config) {}}
	nd.tcfg = tailnet.Config{StateDir: nd.dir, Hostname: "laptop", ControlURL: l.controlURL, LANAddrs: []string{"127.0.0.2"}}
	nd.startOnly(t)
	gatewaytest.WaitFor(t, 30*time.Second, "a login URL", func() bool { return nd.n.Status().LoginURL != "" })
	r := nd.c.Must(t, "GET", "/v1/status", nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), "not logged in to the tailnet: open http") || !strings.Contains(string(r.Body), `"state": "NeedsLogin"`) {
		t.Errorf("status before login: %d %s", r.Status, r.Body)
	}
	if r := nd.c.Must(t, "GET", "/v1/peers/studio/notes/x", nil); r.Status != 404 || !strings.Contains(r.Err.Detail, "not one of this computer's peers") {
		t.Errorf("read before login: %d %s", r.Status, r.Body)
	}
}

// TestUpkeepCounted: the probes, hellos and tickets that keep the roads
// known are counted where they leave, requests and bytes, in /metrics.
func TestUpkeepCounted(t *testing.T) {
	_, laptop, studio, _ := labPair(t)
	waitRoadUp(t, laptop, studio, "lan")
	m := string(laptop.c.Must(t, "GET", "/metrics", nil).Body)
	for _, kind := range []string{"probe", "hello", "ticket"} {
		for _, fam := range []string{"delta_upkeep_requests_total", "delta_upkeep_bytes_total"} {
			var v int
			line := fam + `{kind="` + kind + `"} `
			i := strings.Index(m, line)
			if i < 0 {
				t.Fatalf("no %s in the metrics:\n%s", line, m)
			}
			if _, err := fmt.Sscan(m[i+len(line):], &v); err != nil || v < 1 {
				t.Errorf("%s%d (%v): nothing counted", line, v, err)
			}
		}
	}
}
