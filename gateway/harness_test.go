package gateway_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/static"
	"github.com/delta-roads/delta/gateway/net/ticket"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/state/statedir"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// node is one Delta started in-process on loopback, with its state folder
// on disk.
type node struct {
	name string
	dir  string
	g    *gateway.Gateway
	c    *gatewaytest.Client
	cfg  gateway.Config
	ln   net.Listener
	// otherAddr is the other node's peer API address (set by pair).
	otherAddr string
}

// netKey is the static network's shared ticket key in these tests.
var netKey = ticket.Key([]byte("0123456789abcdef0123456789abcdef"))

type fileConfig struct {
	Name       string           `json:"name"`
	NodeID     string           `json:"node_id"`
	NetworkKey string           `json:"network_key"`
	Peers      []map[string]any `json:"peers"`
}

// pair starts two Deltas, "laptop" and "studio", each knowing the other on
// the lan road, and returns them. edit may change each one's config
// before it starts.
func pair(t testing.TB, edit func(n *node)) (laptop, studio *node) {
	t.Helper()
	laptop, studio = newNode(t, "laptop"), newNode(t, "studio")
	laptop.otherAddr, studio.otherAddr = studio.ln.Addr().String(), laptop.ln.Addr().String()
	laptop.peers(map[string]map[string]string{"studio": {"lan": laptop.otherAddr}})
	studio.peers(map[string]map[string]string{"laptop": {"lan": studio.otherAddr}})
	for _, n := range []*node{laptop, studio} {
		if edit != nil {
			edit(n)
		}
		n.start(t)
	}
	return laptop, studio
}

func newNode(t testing.TB, name string) *node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	n := &node{name: name, dir: dir, ln: ln}
	n.cfg = gateway.Config{StateDir: dir, Listen: "127.0.0.1:0", PeerListeners: []gateway.PeerListener{{Name: "peer", Listener: ln}}, Logger: testLogger(t, name),
		Backoff: []time.Duration{200 * time.Millisecond, 300 * time.Millisecond, 500 * time.Millisecond}}
	return n
}

// peers writes the node's config.json with these peers (name → road → address).
func (n *node) peers(p map[string]map[string]string) {
	fc := fileConfig{Name: n.name, NodeID: "node-" + n.name, NetworkKey: hex.EncodeToString(netKey)}
	for name, roads := range p {
		fc.Peers = append(fc.Peers, map[string]any{"name": name, "roads": roads})
	}
	b, _ := json.Marshal(fc)
	if err := os.WriteFile(filepath.Join(n.dir, "config.json"), b, 0o600); err != nil {
		panic(err)
	}
}

func (n *node) start(t testing.TB) {
	t.Helper()
	if n.cfg.Router == nil { // static mode, unless a test plugged in its own
		fc, err := statedir.ReadConfig(n.dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg := n.cfg
		if err := static.Attach(&cfg, fc, ""); err != nil {
			t.Fatal(err)
		}
		// A test's own door or tickets win over static mode's.
		if n.cfg.Door != nil {
			cfg.Door = n.cfg.Door
		}
		if n.cfg.Tickets != nil {
			cfg.Tickets = n.cfg.Tickets
		}
		n.cfg = cfg
	}
	g, err := gateway.New(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	n.g = g
	n.c = &gatewaytest.Client{URL: g.LocalURL(), Token: g.Token()}
	t.Cleanup(func() { g.Close() })
}

// register registers an owner app on the node and returns its secret.
func (n *node) register(t testing.TB, app, url string) string {
	t.Helper()
	r := n.c.Must(t, "PUT", "/v1/apps/"+app, []byte(`{"url": "`+url+`"}`))
	if r.Status != 200 {
		t.Fatalf("register %s: %d %s", app, r.Status, r.Body)
	}
	var v struct{ Secret string }
	json.Unmarshal(r.Body, &v)
	return v.Secret
}

// waitReceiptDone waits until the receipt of id has left "running": only
// then are the owner app's effects counted (DESIGN §4, "For tests").
func (n *node) waitReceiptDone(t testing.TB, caller, id string) *journal.Receipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		changed := n.g.Journal().Changed()
		r, err := n.g.Journal().Receipts().Get(ctx, caller, id)
		if err == nil && r.State != proto.ReceiptRunning {
			return r
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("receipt %s from %s did not leave running", id, caller)
		}
	}
}

// testLogger logs to the test's log, with the node's name.
func testLogger(t testing.TB, name string) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", name)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	defer func() { recover() }() // a log line after the test ended
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// checkNoLeaks fails the test if goroutines of the gateway are left
// running after it ended (a small version of tailscale's ResourceCheck).
func checkNoLeaks(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			buf := make([]byte, 1<<20)
			stacks := string(buf[:runtime.Stack(buf, true)])
			var leaked []string
			for _, g := range strings.Split(stacks, "\n\n") {
				if strings.Contains(g, "github.com/delta-roads/delta/gateway.") && !strings.Contains(g, "checkNoLeaks") && !strings.Contains(g, "_test.go") {
					leaked = append(leaked, g)
				}
			}
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%d gateway goroutines left running:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
