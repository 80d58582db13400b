package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/gateway/state/statedir"
)

// TestPair: delta pair sets a peer's ID (and road) in config.json, adds a
// new peer given with its address, drops the network key once every peer
// has an ID, and refuses bad input naming it, writing nothing.
func TestPair(t *testing.T) {
	dir := t.TempDir()
	idOut, errOut, code := delta(t, "id", "--state-dir", t.TempDir())
	wantCode(t, "id", code, cli.ExitOK, idOut, errOut)
	studioID := strings.TrimSpace(idOut)
	idOut, _, _ = delta(t, "id", "--state-dir", t.TempDir())
	kitchenID := strings.TrimSpace(idOut)
	ownOut, _, _ := delta(t, "id", "--state-dir", dir)
	own := strings.TrimSpace(ownOut)

	// A config of the older kind, moved to IDs.
	os.WriteFile(filepath.Join(dir, statedir.ConfigFile), []byte(`{"mode": "static", "name": "laptop", "network_key": "00112233445566778899aabbccddeeff",
		"peers": [{"name": "studio", "roads": {"lan": "127.0.0.1:7502"}}]}`), 0o600)
	before, _ := os.ReadFile(filepath.Join(dir, statedir.ConfigFile))
	for _, bad := range []struct {
		args []string
		says string
	}{
		{nil, "name a peer"},
		{[]string{"studio"}, "is not NAME=ID@HOST:PORT"},
		{[]string{"studio=127.0.0.1:7502"}, "names no ID"},
		{[]string{"studio=NOPE-NOPE"}, "not a Delta ID"},
		{[]string{"kitchen=" + kitchenID}, "give its address too"},
		{[]string{"studio=" + own}, "this computer's own id"},
		{[]string{"studio=" + studioID + "@127.0.0.1:99999"}, `port "99999", not one of 1-65535`},
		{[]string{"studio=" + studioID + "@127.0.0.1:0"}, `port "0", not one of 1-65535`},
	} {
		out, errOut, code := delta(t, append(append([]string{"pair"}, bad.args...), "--state-dir", dir)...)
		if code == cli.ExitOK || !strings.Contains(errOut, bad.says) {
			t.Errorf("pair %v: exit %d, %q%q; want it to say %q", bad.args, code, out, errOut, bad.says)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, statedir.ConfigFile)); string(after) != string(before) {
		t.Fatal("a refused pair changed the config")
	}
	out, errOut, code := delta(t, "pair", "studio="+studioID+"@thunderbolt@127.0.0.1:7503", "kitchen="+kitchenID+"@127.0.0.1:7504", "--state-dir", dir)
	wantCode(t, "pair studio and kitchen", code, cli.ExitOK, out, errOut)
	fc, err := statedir.ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fc.NetworkKey != "" || len(fc.Peers) != 2 || fc.Peers[0].ID != studioID || fc.Peers[0].Roads["lan"] != "127.0.0.1:7502" ||
		fc.Peers[0].Roads["thunderbolt"] != "127.0.0.1:7503" || fc.Peers[1].ID != kitchenID {
		t.Fatalf("the config after pair: %+v", fc)
	}
	if !strings.Contains(out, "This computer's ID is "+own) || !strings.Contains(out, "Start Delta here") {
		t.Errorf("pair's words: %s", out)
	}

	// Another ID for a peer paired already: refused, naming both, until
	// --replace; then said (issue 63, D10).
	idOut, _, _ = delta(t, "id", "--state-dir", t.TempDir())
	strangerID := strings.TrimSpace(idOut)
	before, _ = os.ReadFile(filepath.Join(dir, statedir.ConfigFile))
	out, errOut, code = delta(t, "pair", "studio="+strangerID, "--state-dir", dir)
	if code != cli.ExitUsage || !strings.Contains(errOut, "studio is paired already with the ID "+studioID) || !strings.Contains(errOut, "--replace") {
		t.Errorf("another ID for studio: exit %d, %q %q", code, out, errOut)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, statedir.ConfigFile)); string(after) != string(before) {
		t.Fatal("a refused replacement changed the config")
	}
	out, errOut, code = delta(t, "pair", "studio="+strangerID, "--replace", "--state-dir", dir)
	wantCode(t, "pair studio --replace", code, cli.ExitOK, out, errOut)
	if !strings.Contains(out, "studio's ID was "+studioID+"; it is "+strangerID+" now.") {
		t.Errorf("pair --replace did not say which ID it replaced: %s", out)
	}
}

// TestPairWaiting: delta pair with no Delta running, in a state folder
// that waits to be paired ("mode": "static", no peer: what delta run
// --static writes), writes the peer for the next start.
func TestPairWaiting(t *testing.T) {
	dir := t.TempDir()
	idOut, _, _ := delta(t, "id", "--state-dir", t.TempDir())
	studioID := strings.TrimSpace(idOut)
	os.WriteFile(filepath.Join(dir, statedir.ConfigFile), []byte(`{"mode": "static", "name": "laptop"}`), 0o600)
	out, errOut, code := delta(t, "pair", "--state-dir", dir, "studio="+studioID+"@127.0.0.1:7502")
	wantCode(t, "pair", code, cli.ExitOK, out, errOut)
	fc, err := statedir.ReadConfig(dir)
	if err != nil || len(fc.Peers) != 1 || fc.Peers[0].Name != "studio" || fc.Peers[0].ID != studioID || fc.Mode != statedir.ModeStatic {
		t.Fatalf("config after delta pair: %+v %v", fc, err)
	}
}
