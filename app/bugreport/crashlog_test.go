package bugreport

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/delta-roads/delta/app/cli"
)

// TestCrashLogRotation: a crash log grown past its bound is moved aside at
// a start, the older ones shift, the oldest is dropped: however often a
// crashing Delta is restarted, at most keep+1 files stay (issue 64, M5).
func TestCrashLogRotation(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "crash.log")
	if err := RotateCrashLog(p, 100, 3); err != nil {
		t.Fatalf("no crash log yet: %v", err)
	}
	os.WriteFile(p, []byte("small"), 0o600)
	if err := RotateCrashLog(p, 100, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p + ".1"); err == nil {
		t.Fatal("a small crash log was moved aside")
	}
	// A Delta that crashes at every start, 10 times.
	for i := range 10 {
		os.WriteFile(p, []byte(fmt.Sprintf("crash %d %s", i, strings.Repeat("x", 200))), 0o600)
		if err := RotateCrashLog(p, 100, 3); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "crash.log.1 crash.log.2 crash.log.3" {
		t.Fatalf("after 10 crashes: %v, want crash.log.1 … crash.log.3", names)
	}
	for n, want := range map[int]string{1: "crash 9 ", 2: "crash 8 ", 3: "crash 7 "} {
		if b, _ := os.ReadFile(fmt.Sprintf("%s.%d", p, n)); !strings.HasPrefix(string(b), want) {
			t.Errorf("crash.log.%d holds %.10q, want %q", n, b, want)
		}
	}
	// The newest crash is still found once moved aside (the log folder
	// is the state folder off a Mac).
	if runtime.GOOS != "darwin" {
		if at, path := cli.LastCrash(dir); at.IsZero() || path != p+".1" {
			t.Errorf("the last crash after a rotation: %v %s", at, path)
		}
	}
}

// TestReadTail: a bug report carries the end of a crash log, from a whole
// line on, saying how much it left out; a short one whole.
func TestReadTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "crash.log")
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "line %02d\n", i)
	}
	os.WriteFile(p, []byte(b.String()), 0o600)
	got, err := ReadTail(p, 30)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), "[the first 776 bytes of 800 are left out") || !strings.HasSuffix(string(got), "\nline 97\nline 98\nline 99\n") {
		t.Errorf("the tail:\n%s", got)
	}
	if whole, _ := ReadTail(p, 1000); string(whole) != b.String() {
		t.Errorf("a short log was not read whole")
	}
}

// TestMacSections: the bug report's macOS part has every section, each
// read or saying why not: on Linux that it is not a Mac; on a Mac (here
// with stand-ins for its commands and its crash reports folder) each
// command's output, and a command that failed named with its error.
func TestMacSections(t *testing.T) {
	none := func(string, ...string) ([]byte, error) { t.Fatal("a command ran off a Mac"); return nil, nil }
	linux := string(MacSections("linux", 501, none, os.UserHomeDir))
	if strings.Count(linux, "not read: this computer runs linux, not macOS") != 4 || !strings.Contains(linux, "== launchctl print gui/501/com.delta-roads.delta") {
		t.Errorf("off a Mac:\n%s", linux)
	}
	home := t.TempDir()
	reports := filepath.Join(home, "Library", "Logs", "DiagnosticReports")
	os.MkdirAll(reports, 0o700)
	for _, n := range []string{"Delta-2026-12-01-101010.ips", "Delta-2026-12-02-101010.ips", "Delta-2026-12-03-101010.ips", "Delta-2026-12-04-101010.ips", "Other-2026-12-04.ips"} {
		os.WriteFile(filepath.Join(reports, n), []byte("report "+n), 0o600)
	}
	run := func(name string, args ...string) ([]byte, error) {
		switch name {
		case "launchctl":
			return []byte("gui/501/com.delta-roads.delta = {\n\tstate = running\n}"), nil
		case "pkgutil":
			return []byte("No receipt for 'com.delta-roads.delta.pkg' found at '/'."), errors.New("exit status 1")
		}
		return []byte("Firewall is enabled. (State = 1)\n"), nil
	}
	mac := string(MacSections("darwin", 501, run, func() (string, error) { return home, nil }))
	for _, want := range []string{"state = running", "report Delta-2026-12-04-101010.ips", "report Delta-2026-12-02-101010.ips", "(1 older ones left out)",
		"== pkgutil --pkg-info com.delta-roads.delta.pkg\ncould not be read: exit status 1\nNo receipt", "Firewall is enabled"} {
		if !strings.Contains(mac, want) {
			t.Errorf("on a Mac, the part lacks %q:\n%s", want, mac)
		}
	}
	if strings.Contains(mac, "Other-") || strings.Contains(mac, "Delta-2026-12-01") {
		t.Errorf("on a Mac, the part holds another program's report or the oldest:\n%s", mac)
	}
}
