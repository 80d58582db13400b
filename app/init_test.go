package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/state/statedir"
)

// TestInitStatic makes two Deltas with delta init as the README's recipe
// does: laptop's init prints studio's whole init (laptop's ID in it),
// studio's prints the delta pair line for laptop (studio's ID in it); each
// line pasted as is. Then both start as processes and carry a call over
// TLS pinned to the IDs. init refuses bad input naming it, and never
// overwrites a config.
func TestInitStatic(t *testing.T) {
	root := t.TempDir()
	laptop := &proc{name: "laptop", dir: filepath.Join(root, "laptop"), peerAddr: freeAddr(t)}
	studio := &proc{name: "studio", dir: filepath.Join(root, "studio"), peerAddr: freeAddr(t)}

	out, errOut, code := delta(t, "init", "--static", "--state-dir", laptop.dir, "--name", "laptop", "--peer-listen", laptop.peerAddr, "--peer", "studio="+studio.peerAddr)
	wantCode(t, "init laptop", code, cli.ExitOK, out, errOut)
	fc, err := statedir.ReadConfig(laptop.dir)
	if err != nil || fc.NetworkKey != "" || len(fc.Peers) != 1 || fc.Peers[0].Roads["lan"] != studio.peerAddr || fc.Peers[0].ID != "" {
		t.Fatalf("laptop's config: %+v %v", fc, err)
	}
	if fc.Mode != "static" {
		t.Errorf("init wrote mode %q, want static", fc.Mode)
	}
	idOut, errOut, code := delta(t, "id", "--state-dir", laptop.dir)
	wantCode(t, "id laptop", code, cli.ExitOK, idOut, errOut)
	laptopID := strings.TrimSpace(idOut)
	if !strings.Contains(out, "This computer's ID is "+laptopID) {
		t.Fatalf("init does not print laptop's ID %s:\n%s", laptopID, out)
	}
	// The words give the whole command for the other computer (its name,
	// where it listens, this computer with its ID), pasted there as is.
	line := func(out, prefix string) []string {
		for l := range strings.Lines(out) {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return strings.Fields(l)
			}
		}
		t.Fatalf("the words lack a line %q…:\n%s", prefix, out)
		return nil
	}
	// Both on this computer (loopback): the line gives studio a state
	// folder of its own beside laptop's, so that it works as it is.
	want := "delta init --static --name studio --peer-listen " + studio.peerAddr + " --peer laptop=" + laptopID + "@" + laptop.peerAddr + " --state-dir " + studio.dir
	if got := strings.Join(line(out, "delta init"), " "); got != want {
		t.Fatalf("init's line for studio is\n  %s\nwant\n  %s", got, want)
	}
	out, errOut, code = delta(t, line(out, "delta init")[1:]...)
	wantCode(t, "init studio, as laptop's init said", code, cli.ExitOK, out, errOut)
	pair := line(out, "delta pair")
	if pair[len(pair)-2] != "--state-dir" || pair[len(pair)-1] != laptop.dir {
		t.Fatalf("studio's pair line for laptop, on this computer too, names no state folder: %v", pair)
	}
	out, errOut, code = delta(t, pair[1:]...)
	wantCode(t, "pair on laptop, as studio's init said", code, cli.ExitOK, out, errOut)
	if fc, _ = statedir.ReadConfig(laptop.dir); fc.Peers[0].ID == "" {
		t.Fatalf("laptop's config after pair: %+v", fc)
	}
	before, _ := os.ReadFile(filepath.Join(laptop.dir, statedir.ConfigFile))

	for _, bad := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--static", "--state-dir", laptop.dir, "--peer", "studio=127.0.0.1:1"}, cli.ExitFailed, "exists already"},
		{[]string{"--static", "--state-dir", t.TempDir()}, cli.ExitUsage, "at least one --peer"},
		{[]string{"--state-dir", t.TempDir(), "--peer", "studio=127.0.0.1:1"}, cli.ExitUsage, "--static"},
		{[]string{"--static", "--state-dir", t.TempDir(), "--peer", "studio=nowhere"}, cli.ExitUsage, "not HOST:PORT"},
		{[]string{"--static", "--state-dir", t.TempDir(), "--peer", "studio=wifi@127.0.0.1:1"}, cli.ExitUsage, `"wifi" before @ is neither a road (thunderbolt, lan, tailnet) nor a Delta ID`},
		// The mistake named, not guessed (a forgotten port was told as a bad ID).
		{[]string{"--static", "--state-dir", t.TempDir(), "--peer", "studio=127.0.0.1"}, cli.ExitUsage, `invalid value "studio=127.0.0.1" for flag --peer: peer studio: "127.0.0.1" has no port`},
		{[]string{"--static", "--state-dir", t.TempDir(), "--peer", "studio=127.0.0.1:1", "--network-key", "abc"}, cli.ExitUsage, "at least 16 bytes"},
		{[]string{"--static", "--state-dir", t.TempDir(), "--peer", "studio=127.0.0.1:1", "--name", "studio"}, cli.ExitUsage, "not its own peer"},
		{[]string{"--static", "--state-dir", t.TempDir(), "--peer", "studio=NOTANID@127.0.0.1:1"}, cli.ExitUsage, "not a Delta ID"},
		{[]string{"--static", "--state-dir", t.TempDir(), "--peer", "studio=" + laptopID + "@127.0.0.1:1", "--network-key", "new"}, cli.ExitUsage, "needs no key"},
		// A peer off this computer cannot reach a peer API on loopback.
		{[]string{"--static", "--state-dir", t.TempDir(), "--peer", "studio=192.0.2.7:7421", "--peer-listen", "127.0.0.1:7421"}, cli.ExitUsage, "is on loopback, where studio (lan 192.0.2.7:7421) cannot reach it"},
	} {
		out, errOut, code := delta(t, append([]string{"init"}, bad.args...)...)
		wantCode(t, strings.Join(bad.args, " "), code, bad.code, out, errOut)
		if !strings.Contains(errOut, bad.says) {
			t.Errorf("init %v says %q, want it to name %q", bad.args, errOut, bad.says)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(laptop.dir, statedir.ConfigFile)); string(after) != string(before) {
		t.Fatal("a refused init changed the config")
	}
	// The older kind, asked for: a shared key, and the line for the
	// other computer carries it.
	old := t.TempDir()
	out, errOut, code = delta(t, "init", "--static", "--state-dir", old, "--name", "laptop", "--peer", "studio=127.0.0.1:1", "--network-key", "new")
	wantCode(t, "init with a network key", code, cli.ExitOK, out, errOut)
	if ofc, _ := statedir.ReadConfig(old); ofc.NetworkKey == "" || !strings.Contains(out, "--network-key "+ofc.NetworkKey) || !strings.Contains(out, "plain TCP") {
		t.Fatalf("init --network-key new: %+v\n%s", ofc, out)
	}
	// A config that lost its peers is refused, not run as tailnet mode:
	// nothing of Tailscale's is started (issue 36).
	lost := t.TempDir()
	os.WriteFile(filepath.Join(lost, statedir.ConfigFile), []byte(`{"name": "laptop", "network_key": "`+strings.Repeat("ab", 16)+`"}`), 0o600)
	out, errOut, code = delta(t, "--headless", "--state-dir", lost)
	if code == cli.ExitOK || !strings.Contains(errOut, `has a "network_key" but no "peers"`) {
		t.Errorf("delta with a network key and no peers: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(lost, statedir.TailnetDir)); !os.IsNotExist(err) || strings.Contains(errOut, "tailnet mode") {
		t.Errorf("a static config without peers started tailnet mode (%v):\n%s", err, errOut)
	}

	studio.start(t)
	laptop.start(t)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/a", []byte("hello"), "X-Delta-Request-Id", "init-1")
	if r.Status != 200 || r.Header.Get("X-Delta-Outcome") != "answered" || string(r.Body) != "POST /a" {
		t.Fatalf("a call between two Deltas made by init: %d %s %s", r.Status, r.Header.Get("X-Delta-Outcome"), r.Body)
	}
}

// TestCanRun: a build without SQLite refuses to start in one sentence
// naming the fix (the darwin vet builds one), and this build can run.
func TestCanRun(t *testing.T) {
	if err := canRun(false); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=1") || !strings.Contains(err.Error(), "journal") {
		t.Errorf("without SQLite: %v", err)
	}
	if err := canRun(journal.Usable); err != nil {
		t.Errorf("this build: %v", err)
	}
}

// TestModeFlags: a flag of the other mode is refused before Delta starts,
// naming the flag and why; the flags of a Delta's own mode are not.
func TestModeFlags(t *testing.T) {
	if err := modeConflict(true, map[string]bool{"lan-port": true, "listen": true}); err == nil ||
		!strings.Contains(err.Error(), "--lan-port (or DELTA_LAN_PORT) is for tailnet mode") || !strings.Contains(err.Error(), "peer_listen") {
		t.Errorf("static with --lan-port: %v", err)
	}
	if err := modeConflict(false, map[string]bool{"peer-listen": true}); err == nil || !strings.Contains(err.Error(), "is for static mode") {
		t.Errorf("tailnet with --peer-listen: %v", err)
	}
	if err := modeConflict(true, map[string]bool{"peer-listen": true, "headless": true}); err != nil {
		t.Errorf("static with its own flags: %v", err)
	}
	if err := modeConflict(false, map[string]bool{"lan-port": true, "control-url": true, "hostname": true}); err != nil {
		t.Errorf("tailnet with its own flags: %v", err)
	}

	// As a person meets it: a static config, and --lan-port.
	dir := filepath.Join(t.TempDir(), "laptop")
	out, errOut, code := delta(t, "init", "--static", "--state-dir", dir, "--name", "laptop", "--peer", "studio=127.0.0.1:9")
	wantCode(t, "init", code, cli.ExitOK, out, errOut)
	out, errOut, code = delta(t, "run", "--state-dir", dir, "--headless", "--listen", "127.0.0.1:0", "--lan-port", "7999")
	wantCode(t, "run --lan-port in static mode", code, cli.ExitUsage, out, errOut)
	if !strings.Contains(errOut, "--lan-port (or DELTA_LAN_PORT) is for tailnet mode") {
		t.Errorf("the refusal does not name the flag: %s", errOut)
	}
}

// TestStaleExit: a read answered stale from the cache prints the answer
// and exits 11; --fresh refuses it (exit 4, nothing printed).
func TestStaleExit(t *testing.T) {
	laptop, studio, _ := startPair(t)
	L := []string{"--state-dir", laptop.dir}
	const path = "/cache/s?cc=max-age%3D0"
	out, errOut, code := delta(t, append([]string{"get", "studio", "notes", path}, L...)...)
	wantCode(t, "get", code, cli.ExitOK, out, errOut)
	studio.kill(t) // the peer cannot be reached now
	stale, errOut, code := delta(t, append([]string{"get", "studio", "notes", path}, L...)...)
	wantCode(t, "get with the peer down", code, cli.ExitStale, stale, errOut)
	if stale != out || !strings.Contains(errOut, "stale") {
		t.Errorf("the stale answer: %q (was %q), stderr %q", stale, out, errOut)
	}
	fresh, errOut, code := delta(t, append([]string{"get", "--fresh", "studio", "notes", path}, L...)...)
	wantCode(t, "get --fresh with the peer down", code, cli.ExitUnavailable, fresh, errOut)
	if fresh != "" {
		t.Errorf("--fresh printed %q", fresh)
	}
}

// TestNeedsNewline: only a terminal gets the newline, only after an
// answer that has none.
func TestNeedsNewline(t *testing.T) {
	for _, tc := range []struct {
		tty  bool
		n    int64
		last byte
		want bool
	}{{true, 5, 'x', true}, {true, 5, '\n', false}, {true, 0, 0, false}, {false, 5, 'x', false}} {
		if got := needsNewline(tc.tty, tc.n, tc.last); got != tc.want {
			t.Errorf("needsNewline(%v, %d, %q) = %v", tc.tty, tc.n, tc.last, got)
		}
	}
}

// TestCommandFor: the tour names delta as a person in that folder runs it.
func TestCommandFor(t *testing.T) {
	none := func() (string, error) { return "", os.ErrNotExist }
	at := func(p string) func() (string, error) { return func() (string, error) { return p, nil } }
	for _, tc := range []struct {
		exe    string
		onPath func() (string, error)
		wd     string
		want   string
	}{
		{"/src/delta/bin/delta", none, "/src/delta", "bin/delta"},
		{"/usr/bin/delta", at("/usr/bin/delta"), "/home/jo", "delta"},
		{"/src/delta/bin/delta", at("/usr/bin/delta"), "/home/jo", "/src/delta/bin/delta"},
		{"/src/delta/delta", none, "/src/delta", "./delta"},
	} {
		if got := commandFor(tc.exe, tc.onPath, at(tc.wd)); got != tc.want {
			t.Errorf("commandFor(%q) in %s = %q, want %q", tc.exe, tc.wd, got, tc.want)
		}
	}
}

// TestReachableAs: the command init prints for a peer names an address
// the peer can dial, never 0.0.0.0.
func TestReachableAs(t *testing.T) {
	for in, want := range map[string]string{"0.0.0.0:7421": "THIS-COMPUTERS-ADDRESS:7421", "[::]:7421": "THIS-COMPUTERS-ADDRESS:7421", ":7421": "THIS-COMPUTERS-ADDRESS:7421",
		"192.168.1.10:7421": "192.168.1.10:7421", "127.0.0.1:7501": "127.0.0.1:7501"} {
		if got := reachableAs(in); got != want {
			t.Errorf("reachableAs(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReachableFrom: the address a peer is told for this computer is the
// listener's own when it names one, else the one routed toward the peer.
func TestReachableFrom(t *testing.T) {
	toward := func(a string) string {
		if strings.HasPrefix(a, "169.254.") {
			return "169.254.9.9"
		}
		if strings.HasPrefix(a, "10.") {
			return "10.0.0.5"
		}
		return ""
	}
	for _, tc := range [][3]string{
		{"192.168.1.4:7421", "10.0.0.2:7421", "192.168.1.4:7421"},
		{"0.0.0.0:7421", "10.0.0.2:7421", "10.0.0.5:7421"},
		{"0.0.0.0:7421", "169.254.3.4:7421", "169.254.9.9:7421"},
		{":7500", "10.0.0.2:7421", "10.0.0.5:7500"},
		{"0.0.0.0:7421", "203.0.113.1:7421", "THIS-COMPUTERS-ADDRESS:7421"},
	} {
		if got := reachableFrom(tc[0], tc[1], toward); got != tc[2] {
			t.Errorf("reachableFrom(%s, %s) = %s, want %s", tc[0], tc[1], got, tc[2])
		}
	}
}

// TestWithoutPSN: on macOS the -psn_ argument LaunchServices may add is
// dropped before the command line is read (issue 37, N6); elsewhere it
// stays (and is refused as the flag it is not).
func TestWithoutPSN(t *testing.T) {
	args := []string{"-psn_0_1234567", "--headless"}
	if got := withoutPSN("darwin", args); len(got) != 1 || got[0] != "--headless" {
		t.Errorf("darwin: %q", got)
	}
	if got := withoutPSN("darwin", []string{"-psn_0_99"}); len(got) != 0 {
		t.Errorf("darwin, alone: %q", got)
	}
	if got := withoutPSN("linux", args); len(got) != 2 {
		t.Errorf("linux: %q", got)
	}
	if name, rest, err := findCommand(withoutPSN("darwin", []string{"-psn_0_1", "status", "--json"})); err != nil || name != "status" || len(rest) != 1 {
		t.Errorf("findCommand after withoutPSN: %q %q %v", name, rest, err)
	}
}
