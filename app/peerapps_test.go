package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// TestPeerAppsOnlyToPaired: `delta apps list PEER` (GET
// /v1/peer-apps/PEER, what the page's and the menu's "Apps on Other
// Computers" read) lists the apps a paired peer shares, each with the
// forward here to it; a stranger's Delta that names studio's ID and
// address (one-sided: studio never said yes to it) learns nothing, since
// studio's door admits paired IDs only (issue 66: "a peer's list of
// shared apps goes only to paired peers over the pinned road").
func TestPeerAppsOnlyToPaired(t *testing.T) {
	laptop, studio := twoProcs(t)
	stranger := &proc{name: "kitchen", dir: filepath.Join(t.TempDir(), "kitchen"), peerAddr: freeAddr(t)}
	makeIDs(t, stranger)
	cfg := map[string]any{"name": stranger.name, "peer_listen": stranger.peerAddr,
		"peers": []any{map[string]any{"name": "studio", "id": studio.id, "roads": map[string]string{"lan": studio.peerAddr}}}}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(stranger.dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	studio.start(t)
	laptop.start(t)
	stranger.start(t)
	studio.register(t, "notes", "http://127.0.0.1:9")
	studio.register(t, "photos", "http://127.0.0.1:9")

	out, errOut, code := delta(t, "--state-dir", laptop.dir, "apps", "list", "studio")
	if code != cli.ExitOK || out != "notes\tno forward here (delta forward studio/notes opens one)\nphotos\tno forward here (delta forward studio/photos opens one)\n" {
		t.Fatalf("laptop's delta apps list studio: exit %d\n%s%s", code, out, errOut)
	}
	f := forwardURL(t, laptop, "photos")
	out, _, _ = delta(t, "--state-dir", laptop.dir, "apps", "list", "studio")
	if !strings.Contains(out, "photos\t"+f+"\n") {
		t.Errorf("the forward is not listed with its app:\n%s", out)
	}

	out, errOut, code = delta(t, "--state-dir", stranger.dir, "apps", "list", "studio")
	if code == cli.ExitOK || strings.Contains(out+errOut, "notes") || strings.Contains(out+errOut, "photos") {
		t.Fatalf("a stranger's delta apps list studio: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "could not ask studio which apps it shares") {
		t.Errorf("the stranger is not told why: %s", errOut)
	}
	if _, _, code := delta(t, "--state-dir", laptop.dir, "apps", "list", "kitchen"); code == cli.ExitOK {
		t.Errorf("laptop lists the apps of a computer it is not paired with")
	}
}

// TestPairingCommands (issue 66): the command line pairs as the page does,
// while both Deltas run: delta pair on laptop asks studio, delta pairing
// on studio lists the request and accepts it, and both are paired with no
// restart; delta pairing unpair undoes it.
func TestPairingCommands(t *testing.T) {
	laptop, studio := unpairedProcs(t)
	studio.start(t)
	laptop.start(t)
	studioID, _, _ := delta(t, "--state-dir", studio.dir, "id")
	laptopID, _, _ := delta(t, "--state-dir", laptop.dir, "id")
	studioID, laptopID = strings.TrimSpace(studioID), strings.TrimSpace(laptopID)
	out, errOut, code := delta(t, "--state-dir", laptop.dir, "pair", "studio="+studioID+"@"+studio.peerAddr)
	if code != cli.ExitOK || !strings.Contains(out, "Paired studio here, and asked it") {
		t.Fatalf("delta pair while Delta runs: %d %q %q", code, out, errOut)
	}
	out, _, _ = delta(t, "--state-dir", studio.dir, "pairing")
	if !strings.Contains(out, "asks to pair: laptop (its own name) at "+laptop.peerAddr) || !strings.Contains(out, "delta pairing accept "+laptopID) {
		t.Fatalf("delta pairing on studio: %q", out)
	}
	if _, _, code := delta(t, "--state-dir", studio.dir, "pairing", "accept", "NOPE"); code != cli.ExitUsage {
		t.Errorf("accepting a malformed ID: exit %d", code)
	}
	out, errOut, code = delta(t, "--state-dir", studio.dir, "pairing", "accept", laptopID, "lap")
	if code != cli.ExitOK || !strings.Contains(out, "lap and this computer are paired.") {
		t.Fatalf("delta pairing accept: %d %q %q", code, out, errOut)
	}
	gatewaytest.WaitFor(t, 20*time.Second, "laptop to see studio paired", func() bool {
		out, _, _ := delta(t, "--state-dir", laptop.dir, "pairing")
		return strings.Contains(out, "studio\t"+studioID) && strings.Contains(out, "\tpaired")
	})
	out, _, code = delta(t, "--state-dir", studio.dir, "pairing", "unpair", "lap")
	if code != cli.ExitOK || !strings.Contains(out, "unpaired lap") {
		t.Fatalf("delta pairing unpair: %d %q", code, out)
	}
	if _, _, code := delta(t, "--state-dir", studio.dir, "pairing", "unpair", "lap"); code != cli.ExitNotFound {
		t.Errorf("unpairing twice: exit %d", code)
	}
}
