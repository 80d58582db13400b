package tailnet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"tailscale.com/tstest/integration/testcontrol"

	"github.com/delta-roads/delta/gateway"
	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/tailnet"
	"github.com/delta-roads/delta/gateway/modes/tailnet/tailnettest"
	"github.com/delta-roads/delta/gateway/state/journal"
)

// lab is a real tailnet on loopback.
type lab struct {
	t testing.TB
	*tailnettest.Control
	controlURL string
	control    *testcontrol.Server
}

func newLab(t testing.TB) *lab { return newLabWith(t, tailnettest.Options{}) }

func newLabWith(t testing.TB, opt tailnettest.Options) *lab {
	t.Helper()
	c := tailnettest.Start(t, opt)
	return &lab{t: t, Control: c, controlURL: c.URL, control: c.Server}
}

// tnode is one Delta joined to the lab's tailnet, with its gateway.
type tnode struct {
	name  string
	dir   string
	lanIP string
	n     *tailnet.Node
	g     *gateway.Gateway
	c     *gatewaytest.Client
	log   *gatewaytest.LogBuffer
	tcfg  tailnet.Config
	gcfg  gateway.Config
	edit  func(*gateway.Config)
	// rounds counts the rounds its node said were done (Config.AfterRound).
	rounds atomic.Int64
}

type nodeOpt struct {
	allow   []string
	tickets func(peerclient.Tickets) peerclient.Tickets // wraps the node's tickets
}

// start joins a node named name, with its TLS listener on lanIP.
func (l *lab) start(name, lanIP string, opt nodeOpt) *tnode {
	t := l.t
	t.Helper()
	gatewaytest.NeedLoopback(t, lanIP)
	nd := &tnode{name: name, dir: filepath.Join(t.TempDir(), name), lanIP: lanIP, log: &gatewaytest.LogBuffer{}}
	nd.tcfg = tailnet.Config{StateDir: nd.dir, Hostname: name, ControlURL: l.controlURL, LANAddrs: []string{lanIP}, Allow: opt.allow,
		AfterRound: func() { nd.rounds.Add(1) }}
	nd.edit = func(c *gateway.Config) {
		if opt.tickets != nil {
			c.Tickets = opt.tickets(c.Tickets)
		}
	}
	nd.up(t)
	return nd
}

// up starts (or restarts) the node and its gateway and waits until it runs.
func (nd *tnode) up(t testing.TB) {
	t.Helper()
	nd.startOnly(t)
	gatewaytest.WaitFor(t, 30*time.Second, nd.name+" logged in to the tailnet", func() bool { return nd.n.Status().State == "Running" })
}

// startOnly starts the node and its gateway without waiting for login.
func (nd *tnode) startOnly(t testing.TB) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(nd.log, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", nd.name)
	nd.tcfg.Logger = log
	n, err := tailnet.New(nd.tcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	nd.gcfg = gateway.Config{StateDir: nd.dir, Listen: "127.0.0.1:0", Logger: log,
		Backoff: []time.Duration{200 * time.Millisecond, 300 * time.Millisecond, 500 * time.Millisecond}}
	n.Attach(&nd.gcfg)
	nd.edit(&nd.gcfg)
	g, err := gateway.New(nd.gcfg)
	if err != nil {
		n.Close()
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		n.Close()
		t.Fatal(err)
	}
	nd.n, nd.g = n, g
	nd.c = &gatewaytest.Client{URL: g.LocalURL(), Token: g.Token()}
	t.Cleanup(nd.down)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s's log:\n%s", nd.name, nd.log)
		}
	})
}

// down stops the gateway, then leaves the tailnet.
func (nd *tnode) down() {
	if nd.g != nil {
		nd.g.Close()
		nd.n.Close()
		nd.g = nil
	}
}

// sameUser makes the nodes computers of one tailnet user.
func (l *lab) sameUser(nodes ...*tnode) {
	l.t.Helper()
	for _, nd := range nodes {
		st, err := nd.n.LocalClient().Status(context.Background())
		if err != nil {
			l.t.Fatal(err)
		}
		l.SameUser(st.Self.PublicKey)
	}
}

// waitPeer waits until a knows b as a peer (b answered hello).
func waitPeer(t testing.TB, a, b *tnode) {
	t.Helper()
	gatewaytest.WaitFor(t, 30*time.Second, a.name+" to find "+b.name, func() bool { return a.n.Known(b.name) })
}

// waitRoadUp waits until a believes its road to b is up.
func waitRoadUp(t testing.TB, a, b *tnode, road string) {
	t.Helper()
	gatewaytest.WaitFor(t, 30*time.Second, fmt.Sprintf("%s's %s road to %s", a.name, road, b.name), func() bool {
		r := a.c.Must(t, "GET", "/v1/status", nil)
		var st struct {
			Peers []struct {
				Name  string
				Roads []struct{ Road, State string }
			}
		}
		json.Unmarshal(r.Body, &st)
		for _, p := range st.Peers {
			for _, rs := range p.Roads {
				if p.Name == b.name && rs.Road == road && rs.State == "up" {
					return true
				}
			}
		}
		return false
	})
}

func (nd *tnode) register(t testing.TB, app, url string) {
	t.Helper()
	if r := nd.c.Must(t, "PUT", "/v1/apps/"+app, []byte(`{"url":"`+url+`"}`)); r.Status != 200 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
}

// labPair starts laptop (lan 127.0.0.2) and studio (lan 127.0.0.3), one
// user's computers, with an owner app "notes" on studio, and waits until
// laptop knows studio.
func labPair(t testing.TB) (l *lab, laptop, studio *tnode, app *gatewaytest.OwnerApp) {
	t.Helper()
	l = newLab(t)
	laptop = l.start("laptop", "127.0.0.2", nodeOpt{})
	studio = l.start("studio", "127.0.0.3", nodeOpt{})
	l.sameUser(laptop, studio)
	waitPeer(t, laptop, studio)
	app = gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	return l, laptop, studio, app
}

// receipt reads a receipt from the node's journal on disk (a second handle
// on the file the running gateway writes).
func (nd *tnode) receipt(t *testing.T, caller, id string) (*journal.Receipt, error) {
	t.Helper()
	db, err := journal.Open(filepath.Join(nd.dir, "delta.db"), journal.Options{})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return db.Receipts().Get(t.Context(), caller, id)
}
