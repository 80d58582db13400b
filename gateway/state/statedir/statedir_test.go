package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
)

func TestStateFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	lock, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state folder: %v %v, want mode 0700", fi.Mode(), err)
	}
	if _, err := localapi.ReadLocal(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no local.json yet: %v", err)
	}
	if err := WriteLocal(dir, localapi.LocalFile{URL: "http://127.0.0.1:7420", PID: 42}); err != nil {
		t.Fatal(err)
	}
	// A second Delta on the folder is refused, naming the first.
	if _, err := Lock(dir); err == nil || !strings.Contains(err.Error(), "another Delta is running with state folder") || !strings.Contains(err.Error(), "pid 42, http://127.0.0.1:7420") {
		t.Errorf("second lock: %v", err)
	}
	if lf, err := localapi.ReadLocal(dir); err != nil || lf.PID != 42 || lf.URL != "http://127.0.0.1:7420" {
		t.Errorf("local.json: %+v %v", lf, err)
	}
	os.WriteFile(filepath.Join(dir, localapi.LocalJSON), []byte("{}"), 0o600)
	if _, err := localapi.ReadLocal(dir); err == nil || !strings.Contains(err.Error(), "is not Delta's local.json") {
		t.Errorf("an empty local.json: %v", err)
	}

	// Secrets are made once, mode 0600, and kept.
	s1, err := LoadOrCreateSecret(filepath.Join(dir, localapi.TokenFile))
	s2, _ := LoadOrCreateSecret(filepath.Join(dir, localapi.TokenFile))
	if err != nil || len(s1) != 64 || s1 != s2 {
		t.Errorf("token %q then %q: %v", s1, s2, err)
	}
	if tok, err := localapi.ReadToken(dir); err != nil || tok != s1 {
		t.Errorf("localapi.ReadToken: %q %v", tok, err)
	}

	// peers.json round-trips, sorted; a broken one is an error naming it.
	seen := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	want := map[string]Peer{
		"studio": {Name: "studio", Node: "nB", SeenAt: seen, Roads: []PeerRoad{{Road: roads.LAN, Address: "10.0.0.2:7422"}}},
		"alpha":  {Name: "alpha", Node: "nA", SeenAt: seen, Roads: []PeerRoad{}},
	}
	if err := WritePeers(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPeers(dir)
	if err != nil || len(got) != 2 || got["studio"].Roads[0].Address != "10.0.0.2:7422" || !got["alpha"].SeenAt.Equal(seen) {
		t.Errorf("peers: %+v %v", got, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, PeersFile))
	if strings.Index(string(b), "alpha") > strings.Index(string(b), "studio") {
		t.Errorf("peers.json is not sorted by name:\n%s", b)
	}
	os.WriteFile(filepath.Join(dir, PeersFile), []byte("{"), 0o600)
	if _, err := ReadPeers(dir); err == nil || !strings.Contains(err.Error(), PeersFile) {
		t.Errorf("a broken peers.json: %v", err)
	}

	// config.json: unknown fields and bad names are refused, naming the file.
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"nmae": "x"}`), 0o600)
	if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), "config.json is not valid") {
		t.Errorf("a mistyped field: %v", err)
	}
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"peers": [{"name": "bad name", "roads": {}}]}`), 0o600)
	if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), ConfigFile) {
		t.Errorf("a bad peer name: %v", err)
	}
}

// TestDirect: direct.json is written whole in place of the old one (a
// temporary file renamed: a reader sees the old or the new, never part),
// mode 0600, and reads back as written.
func TestDirect(t *testing.T) {
	dir := t.TempDir()
	exp := time.Date(2026, 12, 1, 12, 10, 0, 0, time.UTC)
	d := localapi.Direct{Self: "laptop", ClientCert: "tls-cert.pem", ClientKey: "tls-key.pem", Peers: []localapi.DirectPeer{{Name: "studio",
		Roads:  []localapi.DirectRoad{{Road: "thunderbolt", Address: "169.254.1.2:7422", Interface: "bridge0", Pin: "ab"}, {Road: "lan", Address: "10.0.0.2:7422"}},
		Ticket: "v1.x.y", Expires: exp}}}
	for range 2 {
		if err := WriteDirect(dir, d); err != nil {
			t.Fatal(err)
		}
	}
	got, err := localapi.ReadDirect(dir)
	if err != nil || !reflect.DeepEqual(got.Peers, d.Peers) || got.ClientCert != d.ClientCert {
		t.Fatalf("read back: %+v %v", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the folder holds %d files, want direct.json alone (no temporary left)", len(entries))
	}
	fi, _ := os.Stat(filepath.Join(dir, localapi.DirectFile))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("direct.json has mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestConfigModes: a config says its mode or is read as before, but a
// static config that lost its peers is refused rather than read as
// tailnet mode (issue 36: it dialled Tailscale's relays), and a broken
// file is named by line and column, not by a package.
func TestConfigModes(t *testing.T) {
	const key = `"network_key": "3031323334353637383930313233343536373839303132333435363738393031"`
	const peers = `"peers": [{"name": "studio", "roads": {"lan": "10.0.0.2:7421"}}]`
	for _, tc := range []struct {
		name, file string
		static     bool
		err        string // "" for none
	}{
		{"no file", "", false, ""},
		{"static, no mode", `{` + key + `, ` + peers + `}`, true, ""},
		{"static, said", `{"mode": "static", ` + key + `, ` + peers + `}`, true, ""},
		{"tailnet, said", `{"mode": "tailnet", "name": "laptop"}`, false, ""},
		{"empty object", `{}`, false, ""},
		{"a key and no peers", `{` + key + `}`, false, `has a "network_key" but no "peers"`},
		{"static with a key and no peers", `{"mode": "static", ` + key + `}`, false, `"mode": "static" with a "network_key" needs "peers"`},
		// Static mode waiting to be paired by ID (issue 66): no peer yet.
		{"static, no peer yet", `{"mode": "static"}`, true, ""},
		{"static, every peer unpaired", `{"mode": "static", "peers": []}`, true, ""},
		// Peers paired by ID need no key; one not paired yet is refused at
		// start (static.Attach), not here: `delta id` and `delta pair`
		// read this config while the pairing is half done.
		{"static without a key", `{"mode": "static", ` + peers + `}`, true, ""},
		{"tailnet with peers", `{"mode": "tailnet", ` + peers + `}`, false, `"mode": "tailnet" with static mode's settings`},
		{"a mode that is none", `{"mode": "lan"}`, false, `"mode": "lan" is not a mode`},
		{"peers empty", `{` + key + `, "peers": []}`, false, `"peers": [] with no "mode"`},
		{"broken", "{\n  \"name\": \"laptop\",\n  \"peers\": [,]\n}", false, "is not valid: line 3, column 13: invalid character ','"},
		{"cut short", "{\n  \"name\": \"laptop\",", false, "is not valid: line 2, column 20: the file ends before the JSON does"},
		{"wrong type", "{\n  \"max_call_bytes\": \"big\"\n}", false, `is not valid: line 2, column 26: "max_call_bytes" must be a number, not a JSON string`},
	} {
		dir := t.TempDir()
		if tc.file != "" {
			os.WriteFile(filepath.Join(dir, ConfigFile), []byte(tc.file), 0o600)
		}
		fc, err := ReadConfig(dir)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "statedir")):
			t.Errorf("%s: error %v, want one saying %q (and no package name)", tc.name, err, tc.err)
		case err == nil && fc.Static() != tc.static:
			t.Errorf("%s: static %t, want %t", tc.name, fc.Static(), tc.static)
		}
	}
}

// TestWriteDurable: the file is there whole with mode 0600 and no
// temporary file beside it; a write that cannot happen leaves nothing
// (issue 64, M14).
func TestWriteDurable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	os.WriteFile(p, []byte("old"), 0o600)
	if err := WriteDurable(p, p+".tmp", []byte("new")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	ents, _ := os.ReadDir(dir)
	if string(b) != "new" || fi.Mode().Perm() != 0o600 || len(ents) != 1 {
		t.Errorf("after a durable write: %q %v, %d files", b, fi.Mode(), len(ents))
	}
	if err := WriteDurable(filepath.Join(dir, "no-such-folder", "x"), filepath.Join(dir, "no-such-folder", "x.tmp"), []byte("x")); err == nil {
		t.Error("a write into a folder that is not there succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("a failed write left %d files", len(ents))
	}
}
