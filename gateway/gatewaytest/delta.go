package gatewaytest

import (
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway"
	"github.com/delta-roads/delta/gateway/modes/static"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/statedir"
)

// Delta is a Delta started in-process in static mode, its state folder on
// disk and its local.json written, as a real one's (for tests of the kit
// and the command line).
type Delta struct {
	Name string
	Dir  string
	G    *gateway.Gateway
	C    *Client
	// PeerAddr is its peer API's address.
	PeerAddr string
	// Log holds what it logged.
	Log *LogBuffer
	// Router is its road keeper (a *static.Router).
	Router roads.Router
}

// StaticPair starts two Deltas, named a and b, that know each other on the
// lan road (plain TCP, tickets under a shared network key), with a fast
// reconciler; they stop when the test ends.
func StaticPair(t testing.TB, a, b string) (*Delta, *Delta) {
	t.Helper()
	return pair(t, a, b, false, nil, "")
}

// SealedPair starts two Deltas as StaticPair does, paired by their IDs
// instead of a network key: each state folder's certificate made first,
// each config naming the other's ID, every road TLS 1.3 pinned both ways.
func SealedPair(t testing.TB, a, b string) (*Delta, *Delta) {
	t.Helper()
	return pair(t, a, b, true, nil, "")
}

// SealedPairVia is SealedPair whose a reaches b at via(b's address): a
// proxy in the middle (a man in the middle, a road that flips bits).
func SealedPairVia(t testing.TB, a, b string, via func(addr string) string) (*Delta, *Delta) {
	t.Helper()
	return pair(t, a, b, true, via, "")
}

// SealedPairFinding is SealedPairVia whose a runs local discovery,
// listening on discoveryA (a loopback HOST:PORT): b's announcements, sent
// there, tell a where b is.
func SealedPairFinding(t testing.TB, a, b string, via func(addr string) string, discoveryA string) (*Delta, *Delta) {
	t.Helper()
	return pair(t, a, b, true, via, discoveryA)
}

func pair(t testing.TB, a, b string, sealed bool, via func(string) string, discoveryA string) (*Delta, *Delta) {
	t.Helper()
	var lns [2]net.Listener
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
	}
	root := t.TempDir()
	names := [2]string{a, b}
	var ids [2]string
	for i, name := range names {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if sealed {
			id, _, err := static.OwnID(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = id.String()
		}
	}
	var out [2]*Delta
	for i, name := range names {
		other := lns[1-i].Addr().String()
		if i == 0 && via != nil {
			other = via(other)
		}
		dir := filepath.Join(root, name)
		peer := map[string]any{"name": names[1-i], "roads": map[string]string{"lan": other}}
		cfg := map[string]any{"name": name, "node_id": "node-" + name, "peers": []any{peer}}
		if sealed {
			peer["id"] = ids[1-i]
			cfg["discovery"] = "off" // nothing announced on the machine's networks; discovery's tests turn it on
			if i == 0 && discoveryA != "" {
				cfg["discovery"] = discoveryA
			}
		} else {
			cfg["network_key"] = hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
		}
		if err := statedir.WriteJSON(filepath.Join(dir, statedir.ConfigFile), cfg); err != nil {
			t.Fatal(err)
		}
		out[i] = start(t, name, dir, lns[i])
	}
	return out[0], out[1]
}

// Unpaired starts a Delta named name in static mode with no peer yet
// ("mode": "static" in an otherwise empty state folder), waiting to be
// paired by ID (PUT /v1/pairs/NAME, a request accepted), its local
// discovery off; it stops when the test ends.
func Unpaired(t testing.TB, name string) *Delta {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"name": name, "mode": "static", "discovery": "off"}
	if err := statedir.WriteJSON(filepath.Join(dir, statedir.ConfigFile), cfg); err != nil {
		t.Fatal(err)
	}
	return start(t, name, dir, ln)
}

// start starts the Delta of the state folder dir, its config written,
// its peer API on ln.
func start(t testing.TB, name, dir string, ln net.Listener) *Delta {
	t.Helper()
	fc, err := statedir.ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	logs := &LogBuffer{}
	gcfg := gateway.Config{StateDir: dir, Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(logs, nil)),
		PeerListeners: []gateway.PeerListener{{Name: "peer", Listener: ln}},
		Backoff:       []time.Duration{200 * time.Millisecond, 300 * time.Millisecond, 500 * time.Millisecond}}
	if err := static.Attach(&gcfg, fc, ""); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return &Delta{Name: name, Dir: dir, G: g, Router: gcfg.Router, C: &Client{URL: g.LocalURL(), Token: g.Token()}, PeerAddr: ln.Addr().String(), Log: logs}
}

// Register registers an owner app at url and returns its forward secret.
func (d *Delta) Register(t testing.TB, app, url string) string {
	t.Helper()
	r := d.C.Must(t, "PUT", "/v1/apps/"+app, []byte(`{"url": "`+url+`"}`))
	if r.Status != 200 {
		t.Fatalf("register %s on %s: %d %s", app, d.Name, r.Status, r.Body)
	}
	var v struct{ Secret string }
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatal(err)
	}
	return v.Secret
}
