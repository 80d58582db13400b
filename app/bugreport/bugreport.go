// Package bugreport makes the file `delta bugreport` (and the menu's
// "Report a Problem…") writes: the versions, the config, the status, the
// logs, the end of each crash log and, on a Mac, what explains a Delta
// that will not start (launchd's view of it, macOS's crash reports, the
// installed package, the firewall), with the local token, the network key
// and forward secrets replaced wherever they appear. It also keeps the
// crash log bounded (crashlog.go).
package bugreport

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/gateway/state/statedir"
)

// Part is one file of a bug report: its name in the archive, a note for
// the person, and its bytes.
type Part struct {
	Name, Note string
	Data       []byte
}

// Parts gathers the report's files, and the secrets to replace in every
// one of them, for the Delta of e.StateDir, this binary being version.
func Parts(e *cli.Env, version string) ([]Part, []string) {
	var parts []Part
	var secrets []string
	if tok, err := os.ReadFile(filepath.Join(e.StateDir, localapi.TokenFile)); err == nil && len(strings.TrimSpace(string(tok))) > 0 {
		secrets = append(secrets, strings.TrimSpace(string(tok)))
	}
	v := fmt.Sprintf("delta %s\n%s %s/%s\nstate folder %s\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH, e.StateDir)
	for _, cmd := range [][]string{{"uname", "-a"}, {"sw_vers"}} {
		if b, err := exec.Command(cmd[0], cmd[1:]...).Output(); err == nil {
			v += string(b)
		}
	}
	parts = append(parts, Part{"versions.txt", "Delta's, Go's and the system's", []byte(v)})
	if b, err := os.ReadFile(filepath.Join(e.StateDir, statedir.ConfigFile)); err == nil {
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			if k, ok := m["network_key"].(string); ok && k != "" {
				secrets = append(secrets, k)
			}
		}
		parts = append(parts, Part{"config.json", "the mode and peers", b})
	}
	var st []byte
	if c, err := e.Client(); err != nil {
		st = fmt.Appendf(nil, "Delta was not running: %v\n", err)
	} else if s, err := c.Status(e.Ctx); err != nil {
		st = fmt.Appendf(nil, "Delta did not answer: %v\n", err)
	} else {
		st, _ = json.MarshalIndent(s, "", "  ")
	}
	if c, err := e.Client(); err == nil {
		if apps, err := c.Apps(e.Ctx); err == nil {
			for _, a := range apps {
				secrets = append(secrets, a.Secret)
			}
		}
		if fws, err := c.Forwards(e.Ctx); err == nil {
			for _, f := range fws {
				if f.Secret != "" { // a --token forward's own
					secrets = append(secrets, f.Secret)
				}
			}
		}
	}
	parts = append(parts, Part{"status.json", "delta status --json, or why not", st})
	logDir, err := cli.LogFolder(e.StateDir)
	if err == nil {
		for _, f := range []string{"delta.log", "delta.log.1", "tailscale.log", "tailscale.log.1"} {
			if b, err := os.ReadFile(filepath.Join(logDir, f)); err == nil && len(b) > 0 {
				parts = append(parts, Part{f, "the log", b})
			}
		}
		// Crash logs: the end of each (the newest traceback), never the
		// whole of one that grew.
		for _, f := range CrashLogNames() {
			if b, err := ReadTail(filepath.Join(logDir, f), CrashTail); err == nil && len(b) > 0 {
				parts = append(parts, Part{f, "the tracebacks of crashes (their end)", b})
			}
		}
	}
	parts = append(parts, Part{"macos.txt", "what explains a Delta that will not start on a Mac (each part, or why it could not be read)",
		MacSections(runtime.GOOS, os.Getuid(), runCommand, os.UserHomeDir)})
	return parts, secrets
}

// The Mac's names for Delta (packaging.BundleID and PackageID; this package
// does not import packaging).
const (
	macAgentLabel = "com.delta-roads.delta"
	macPackageID  = "com.delta-roads.delta.pkg"
)

// runCommand runs a command and returns what it printed.
func runCommand(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).CombinedOutput()
}

// MacSections is the report's macOS part (issue 64, M6): the LaunchAgent
// as launchd sees it (launchctl print), macOS's own crash reports for
// Delta (their ends), the installed package's version (pkgutil), and the
// Application Firewall's state; each section is there, with what could be
// read or a line saying why it could not (on any other system: that it is
// not a Mac).
func MacSections(goos string, uid int, run func(string, ...string) ([]byte, error), home func() (string, error)) []byte {
	var b strings.Builder
	section := func(title string, out []byte, err error) {
		fmt.Fprintf(&b, "== %s\n", title)
		switch {
		case goos != "darwin":
			fmt.Fprintf(&b, "not read: this computer runs %s, not macOS\n\n", goos)
		case err != nil:
			fmt.Fprintf(&b, "could not be read: %v\n%s\n", err, out)
		default:
			fmt.Fprintf(&b, "%s\n", out)
		}
	}
	agent := fmt.Sprintf("launchctl print gui/%d/%s", uid, macAgentLabel)
	reportsTitle := "macOS's crash reports for Delta (~/Library/Logs/DiagnosticReports)"
	pkgTitle := "pkgutil --pkg-info " + macPackageID
	fwTitle := "the Application Firewall (socketfilterfw)"
	if goos != "darwin" {
		for _, t := range []string{agent, reportsTitle, pkgTitle, fwTitle} {
			section(t, nil, nil)
		}
		return []byte(b.String())
	}
	out, err := run("launchctl", "print", fmt.Sprintf("gui/%d/%s", uid, macAgentLabel))
	section(agent, out, err)
	var reports []byte
	var rerr error
	if h, err := home(); err != nil {
		rerr = err
	} else {
		dir := filepath.Join(h, "Library", "Logs", "DiagnosticReports")
		names, _ := filepath.Glob(filepath.Join(dir, "Delta*"))
		sort.Sort(sort.Reverse(sort.StringSlice(names))) // newest first: their names end in the date
		if len(names) == 0 {
			reports = fmt.Appendf(nil, "none in %s\n", dir)
		}
		for i, n := range names {
			if i == 3 {
				reports = fmt.Appendf(reports, "(%d older ones left out)\n", len(names)-3)
				break
			}
			t, err := ReadTail(n, 64<<10)
			if err != nil {
				reports = fmt.Appendf(reports, "--- %s: could not be read: %v\n", n, err)
				continue
			}
			reports = fmt.Appendf(reports, "--- %s\n%s\n", n, t)
		}
	}
	section(reportsTitle, reports, rerr)
	out, err = run("pkgutil", "--pkg-info", macPackageID)
	section(pkgTitle, out, err)
	fw := "/usr/libexec/ApplicationFirewall/socketfilterfw"
	var fwOut []byte
	var fwErr error
	for _, args := range [][]string{{"--getglobalstate"}, {"--getblockall"}, {"--getappblocked", "/Applications/Delta.app/Contents/MacOS/Delta"}} {
		o, err := run(fw, args...)
		if err != nil && fwErr == nil {
			fwErr = fmt.Errorf("%s %s: %w", fw, strings.Join(args, " "), err)
		}
		fwOut = append(fwOut, o...)
	}
	section(fwTitle, fwOut, fwErr)
	return []byte(b.String())
}

// Write writes parts as a gzipped tar at path, every secret
// replaced, without replacing a file that is there.
func Write(path string, parts []Part, secrets []string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists already: nothing was written (--out names another file)", path)
		}
		return err
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	now := time.Now()
	for _, p := range parts {
		data := redact(p.Data, secrets)
		if err = tw.WriteHeader(&tar.Header{Name: "delta-bugreport/" + p.Name, Mode: 0o600, Size: int64(len(data)), ModTime: now}); err != nil {
			break
		}
		if _, err = tw.Write(data); err != nil {
			break
		}
	}
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path) // never half a report
	}
	return err
}

// redact replaces every secret (of 8 bytes or more) in b.
func redact(b []byte, secrets []string) []byte {
	s := string(b)
	for _, sec := range secrets {
		if len(sec) >= 8 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return []byte(s)
}
