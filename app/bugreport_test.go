package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/state/statedir"
)

// TestCrashLeavesATrace: a Delta that dies of a fatal signal leaves its
// traceback in crash.log beside delta.log (issue 37, N3: under launchd
// stderr goes nowhere), and delta status says when, Delta running or not.
func TestCrashLeavesATrace(t *testing.T) {
	laptop, _ := twoProcs(t)
	laptop.start(t)
	if _, path := lastCrash(laptop.dir); path == "" {
		t.Fatal("no crash.log path")
	}
	if at, _ := lastCrash(laptop.dir); !at.IsZero() {
		t.Fatalf("a crash before any: %v", at)
	}
	laptop.cmd.Process.Signal(syscall.SIGQUIT) // the runtime's own traceback, then exit 2
	laptop.cmd.Wait()
	b, err := os.ReadFile(filepath.Join(laptop.dir, crashFile))
	if err != nil || !strings.Contains(string(b), "SIGQUIT") || !strings.Contains(string(b), "goroutine ") {
		t.Fatalf("crash.log after SIGQUIT (%v):\n%.500s", err, b)
	}
	_, errOut, code := delta(t, "status", "--state-dir", laptop.dir)
	if code != cli.ExitDeltaDown || !strings.Contains(errOut, "last crash: ") || !strings.Contains(errOut, crashFile) {
		t.Errorf("status after a crash: %d\n%s", code, errOut)
	}
}

// TestBugreport: one file with the versions, the config, the status and
// the log, and none of the local token, the network key or a forward
// secret.
func TestBugreport(t *testing.T) {
	laptop, _, _ := startPair(t)
	laptop.c.Must(t, "GET", "/v1/peers/studio/notes/hello", nil)
	// A forward that asks for a secret of its own: the status shows it;
	// the report never does.
	r := laptop.c.Must(t, "PUT", "/v1/forwards/studio/notes", []byte(`{"token": true}`))
	var fw localapi.Forward
	if err := json.Unmarshal(r.Body, &fw); err != nil || fw.Secret == "" {
		t.Fatalf("a --token forward: %d %s", r.Status, r.Body)
	}
	// A network key left in a config that pairs by ID (it signs nothing
	// there) is still a secret of the older kind: the report redacts it.
	cfgPath := filepath.Join(laptop.dir, statedir.ConfigFile)
	raw, _ := os.ReadFile(cfgPath)
	os.WriteFile(cfgPath, []byte(strings.Replace(string(raw), `"name"`, `"network_key":"00112233445566778899aabbccddeeff","name"`, 1)), 0o600)
	key, _ := os.ReadFile(filepath.Join(laptop.dir, pintls.KeyFile))
	out := filepath.Join(t.TempDir(), "report.tar.gz")
	stdout, errOut, code := delta(t, "bugreport", "--state-dir", laptop.dir, "--out", out)
	wantCode(t, "bugreport", code, cli.ExitOK, stdout, errOut)
	fc, err := statedir.ReadConfig(laptop.dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[strings.TrimPrefix(h.Name, "delta-bugreport/")] = string(b)
	}
	// The macOS part is there on every system, each section read or saying
	// why not (issue 64, M6).
	macWant := "== pkgutil --pkg-info com.delta-roads.delta.pkg\n"
	if runtime.GOOS != "darwin" {
		macWant += "not read: this computer runs " + runtime.GOOS + ", not macOS"
	}
	for name, want := range map[string]string{"versions.txt": "delta ", "config.json": `"network_key":"[redacted]"`, "status.json": `"name": "laptop"`, "delta.log": "delta started",
		"macos.txt": macWant} {
		if !strings.Contains(files[name], want) {
			t.Errorf("%s lacks %q:\n%.300s", name, want, files[name])
		}
	}
	for name, body := range files {
		if strings.Contains(body, laptop.c.Token) || strings.Contains(body, fc.NetworkKey) || strings.Contains(body, "PRIVATE KEY") || len(key) == 0 || strings.Contains(body, string(key)) ||
			strings.Contains(body, fw.Secret) {
			t.Errorf("%s holds the local token, the network key, this computer's private key or a forward's secret", name)
		}
	}
	_, errOut, code = delta(t, "bugreport", "--state-dir", laptop.dir, "--out", out)
	if code != cli.ExitFailed || !strings.Contains(errOut, "exists already") {
		t.Errorf("a second report over the first: %d %s", code, errOut)
	}
}
