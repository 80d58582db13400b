package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// TestLabRoadDiesUnderQuietAnswer: two computers in the static lab, one
// lan road between them. A long-poll whose head has come and a call
// waiting for its head, both quiet, through a forward on laptop; then the
// road dies under them, two ways:
//
//   - silently: studio's end of the link goes down, and laptop's interface
//     stays up with its address (a cable pulled at the far side of a
//     switch, a peer that lost power). Nothing but the road itself can
//     tell: TCP keepalive and the road's probe of a quiet exchange;
//   - pulled: the switch's ports go down, so laptop's own interface loses
//     its carrier, which netwatch sees at once.
//
// Each time both are told within the time docs/protocol.md states (the
// read cut short, the call outcome_unknown), the road is dropped on that
// evidence and shown with it, and once the road is back the call settles
// with what its app did.
func TestLabRoadDiesUnderQuietAnswer(t *testing.T) {
	t.Parallel() // it waits for its roads to die and its calls to settle, beside the other long tests
	l := newStaticLab(t)
	root := t.TempDir()
	laptop := &proc{name: "laptop", dir: filepath.Join(root, "laptop")}
	studio := &proc{name: "studio", dir: filepath.Join(root, "studio")}
	ids := makeIDs(t, laptop, studio)
	write := func(p, other *proc, lan string) {
		cfg := map[string]any{"mode": "static", "name": p.name, "peer_listen": "0.0.0.0:7421",
			"peers": []any{map[string]any{"name": other.name, "id": ids[other], "roads": map[string]string{"lan": lan}}}}
		b, _ := json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(p.dir, "config.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(laptop, studio, "10.88.1.2:7421")
	write(studio, laptop, "10.88.1.1:7421")
	for host, p := range map[string]*proc{"a": laptop, "b": studio} {
		p.wrap = []string{"ip", "netns", "exec", l.ns(host)}
		p.dial = nsDialer(l.ns(host))
	}
	studio.start(t)
	laptop.start(t)
	app := startWaitAppOn(t, listenIn(t, l.ns("b")))
	studio.register(t, "wait", app.URL)
	laptop.waitRoad(t, "studio", "lan", "up")
	r := laptop.c.Must(t, "PUT", localapi.ForwardPath("studio", "wait"), nil)
	var f localapi.Forward
	if err := json.Unmarshal(r.Body, &f); r.Status != 200 || err != nil {
		t.Fatalf("the forward: %d %s", r.Status, r.Body)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: nsDialer(l.ns("a"))}}

	for _, tc := range []struct {
		name     string
		evidence []string // what may drop the road
		within   time.Duration
		down, up func()
	}{
		{"silently (studio's end down, laptop's interface up)", []string{"keepalive", "probe"}, 20 * time.Second,
			func() { sh(t, "ip", "-n", l.ns("b"), "link", "set", "lan0", "down") },
			func() { sh(t, "ip", "-n", l.ns("b"), "link", "set", "lan0", "up") }},
		{"pulled (laptop's interface loses its carrier)", []string{"netwatch"}, 5 * time.Second,
			func() {
				for _, port := range []string{"swa", "swb"} {
					sh(t, "ip", "-n", l.ns("switch"), "link", "set", port, "down")
				}
			},
			func() {
				for _, port := range []string{"swa", "swb"} {
					sh(t, "ip", "-n", l.ns("switch"), "link", "set", port, "up")
				}
			}},
	} {
		id := "lab-die-" + tc.name[:6]
		q := startQuiet(t, client, f.URL, app, id)
		cut := time.Now()
		tc.down()
		read, call := q.ends(t, cut, tc.within)
		st := laptop.waitStatus(t)
		var ev string
		for _, rd := range st.Peers[0].Roads {
			if rd.Road == "lan" {
				ev = rd.DropEvidence
			}
		}
		t.Logf("WAIT the lan road dies %s under a quiet long-poll and a quiet call: the read cut after %v, the call told outcome_unknown after %v; dropped on %q",
			tc.name, read.Round(time.Millisecond), call.Round(time.Millisecond), ev)
		found := false
		for _, e := range tc.evidence {
			found = found || e == ev
		}
		if !found {
			t.Errorf("%s: the road was dropped on %q, want one of %v", tc.name, ev, tc.evidence)
		}
		tc.up()
		laptop.waitRoad(t, "studio", "lan", "up")
		var rec *localapi.Call
		gatewaytest.WaitFor(t, 90*time.Second, "the call to settle once the road is back", func() bool {
			rec = laptop.c.GetCall(t, id, 0)
			return rec.State == "carried_out"
		})
	}
}
