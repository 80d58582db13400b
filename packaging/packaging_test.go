package packaging

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"howett.net/plist"
)

func decodePlist(t *testing.T, name string, v any) {
	t.Helper()
	b, err := File(name, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plist.Unmarshal(b, v); err != nil {
		t.Fatalf("%s does not parse as a plist: %v", name, err)
	}
}

// TestPlists: every plist parses and has the keys macOS needs.
func TestPlists(t *testing.T) {
	var info map[string]any
	decodePlist(t, "macos/Info.plist", &info)
	for key, want := range map[string]any{
		"CFBundleIdentifier": BundleID, "CFBundleExecutable": "Delta", "CFBundleIconFile": "Delta", "CFBundlePackageType": "APPL",
		"CFBundleShortVersionString": "1.2.3", "CFBundleVersion": "1.2.3", "LSMinimumSystemVersion": "12.0",
		"LSUIElement": true, "NSAppSleepDisabled": true,
	} {
		if info[key] != want {
			t.Errorf("Info.plist %s = %v, want %v", key, info[key], want)
		}
	}
	if d, _ := info["NSLocalNetworkUsageDescription"].(string); !strings.Contains(d, "home network") || !strings.Contains(d, "Thunderbolt") {
		t.Errorf("NSLocalNetworkUsageDescription %q does not name the home network and the Thunderbolt cable", d)
	}

	var agent struct {
		Label                       string
		ProgramArguments            []string
		KeepAlive                   map[string]bool
		LimitLoadToSessionType      string
		ProcessType                 string
		AssociatedBundleIdentifiers []string
		RunAtLoad                   bool
	}
	decodePlist(t, "macos/com.delta-roads.delta.plist", &agent)
	if agent.Label != BundleID || len(agent.ProgramArguments) == 0 || agent.ProgramArguments[0] != "/"+AppBinary || !agent.RunAtLoad {
		t.Errorf("LaunchAgent: %+v", agent)
	}
	if ok, set := agent.KeepAlive["SuccessfulExit"]; !set || ok {
		t.Errorf("LaunchAgent KeepAlive %v: want {SuccessfulExit: false}, so that Quit is not undone", agent.KeepAlive)
	}
	if agent.LimitLoadToSessionType != "Aqua" || agent.ProcessType != "Interactive" || !slices.Contains(agent.AssociatedBundleIdentifiers, BundleID) {
		t.Errorf("LaunchAgent session %q, process type %q, associated %v", agent.LimitLoadToSessionType, agent.ProcessType, agent.AssociatedBundleIdentifiers)
	}

	var comp []map[string]any
	decodePlist(t, "macos/component.plist", &comp)
	if len(comp) != 1 || comp[0]["BundleIsRelocatable"] != false || comp[0]["RootRelativeBundlePath"] != "Applications/Delta.app" {
		t.Errorf("component plist: %v (want one bundle, not relocatable)", comp)
	}
	var ent map[string]bool
	decodePlist(t, "macos/Delta.entitlements", &ent)
	if !ent["com.apple.security.network.client"] || !ent["com.apple.security.network.server"] {
		t.Errorf("entitlements: %v", ent)
	}
}

// TestDistribution: Distribution.xml is well-formed and names the package,
// the architectures and the minimum macOS.
func TestDistribution(t *testing.T) {
	b, err := File("macos/Distribution.xml", "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title   string `xml:"title"`
		Options struct {
			Customize string `xml:"customize,attr"`
			Arch      string `xml:"hostArchitectures,attr"`
		} `xml:"options"`
		OS struct {
			Min string `xml:"min,attr"`
		} `xml:"volume-check>allowed-os-versions>os-version"`
		Refs []struct {
			ID      string `xml:"id,attr"`
			Version string `xml:"version,attr"`
			File    string `xml:",chardata"`
		} `xml:"pkg-ref"`
	}
	if err := xml.Unmarshal(b, &d); err != nil {
		t.Fatalf("Distribution.xml is not well-formed: %v", err)
	}
	if d.Title != "Delta" || d.Options.Customize != "never" || d.Options.Arch != "arm64,x86_64" || d.OS.Min != "12.0" {
		t.Errorf("Distribution.xml: %+v", d)
	}
	found := false
	for _, r := range d.Refs {
		found = found || r.ID == PackageID && r.Version == "1.2.3" && r.File == "Delta-component.pkg"
	}
	if !found {
		t.Errorf("Distribution.xml does not name %s 1.2.3 in Delta-component.pkg: %+v", PackageID, d.Refs)
	}
}

// TestScripts: every script passes shellcheck as POSIX sh.
func TestScripts(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		if os.Geteuid() == 0 {
			t.Fatal("shellcheck is not installed (make deps installs it as root)")
		}
		t.Skip("shellcheck is not installed (Debian: apt-get install shellcheck; make deps does it as root)")
	}
	for _, s := range []string{"macos/scripts/preinstall", "macos/scripts/postinstall", "macos/uninstall.sh", "macos/build.sh"} {
		out, err := exec.Command(sc, "-s", "sh", s).CombinedOutput()
		if err != nil {
			t.Errorf("shellcheck -s sh %s: %v\n%s", s, err, out)
		}
		if fi, err := os.Stat(s); err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s is not executable in the repository", s)
		}
	}
}

// TestStageMac: the staged payload and scripts are exactly the layout,
// with their modes; the bundle's Info.plist has the version, its icon is
// an icns with the 512 px image.
func TestStageMac(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "delta")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	root, scripts := filepath.Join(dir, "root"), filepath.Join(dir, "scripts")
	if err := StageMac(root, scripts, bin, "1.2.3"); err != nil {
		t.Fatal(err)
	}
	checkTree(t, root, MacPayload)
	checkTree(t, scripts, MacScripts)
	b, _ := os.ReadFile(filepath.Join(root, "Applications/Delta.app/Contents/Info.plist"))
	if !bytes.Contains(b, []byte("<string>1.2.3</string>")) || bytes.Contains(b, []byte("@VERSION@")) {
		t.Errorf("the staged Info.plist lacks the version")
	}
	icns, _ := os.ReadFile(filepath.Join(root, "Applications/Delta.app/Contents/Resources/Delta.icns"))
	entries, err := ReadICNS(icns)
	if err != nil || entries["ic09"] != 512 || entries["ic07"] != 128 || entries["ic04"] != 16 {
		t.Errorf("Delta.icns: %v %v", entries, err)
	}
	tree, _ := Tree(root)
	t.Logf("the .pkg's payload (installed at /):\n%s", formatTree(tree))
}

func checkTree(t *testing.T, root string, want []Entry) {
	t.Helper()
	got, err := Tree(root)
	if err != nil {
		t.Fatal(err)
	}
	w := slices.Clone(want)
	slices.SortFunc(w, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	if !slices.Equal(got, w) {
		t.Errorf("the tree under %s:\n%s\nwant:\n%s", root, formatTree(got), formatTree(w))
	}
}

func formatTree(es []Entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "  %v  %s\n", e.Mode, e.Path)
	}
	return b.String()
}

// TestPkgReadBack reads a .pkg built on a Mac (DELTA_PKG) back with bsdtar
// and cpio and checks its payload and scripts as TestStageMac does.
func TestPkgReadBack(t *testing.T) {
	pkg := os.Getenv("DELTA_PKG")
	if pkg == "" {
		t.Skip("DELTA_PKG names no .pkg (the macOS workflow sets it after make pkg)")
	}
	dir := t.TempDir()
	run(t, dir, "bsdtar", "-xf", pkg)
	comp := filepath.Join(dir, "Delta-component.pkg")
	root, scripts := filepath.Join(dir, "root"), filepath.Join(dir, "scripts")
	for _, part := range []struct{ archive, into string }{{"Payload", root}, {"Scripts", scripts}} {
		os.MkdirAll(part.into, 0o755)
		sh := fmt.Sprintf("gzip -dc %q | cpio -i --quiet", filepath.Join(comp, part.archive))
		run(t, part.into, "sh", "-c", sh)
	}
	checkTree(t, root, MacPayload)
	checkTree(t, scripts, MacScripts)
	dist, err := os.ReadFile(filepath.Join(dir, "Distribution"))
	if err != nil || !bytes.Contains(dist, []byte(`hostArchitectures="arm64,x86_64"`)) {
		t.Errorf("the package's Distribution: %v", err)
	}
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// TestWorkflow lints the macOS release workflow with actionlint and
// checks that it does what docs/release.md says.
func TestWorkflow(t *testing.T) {
	wf := "../.github/workflows/release-macos.yml"
	out, err := exec.Command("go", "tool", "actionlint", wf).CombinedOutput()
	if err != nil {
		t.Fatalf("actionlint %s: %v\n%s", wf, err, out)
	}
	b, _ := os.ReadFile(wf)
	for _, want := range []string{"runs-on: macos-", "make test", "make pkg", "installer -pkg", "launchctl print", "Delta status", "uninstall", "TestPkgReadBack"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the workflow lacks %q", want)
		}
	}
}

// TestDeb builds the .deb from a real delta binary, installs it into a
// throwaway root, checks its files and modes, then runs the systemd unit's
// ExecStart against a temporary state folder and sees Delta serve its
// local API.
func TestDeb(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the .deb is Linux's")
	}
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("dpkg-deb is not installed (Debian's dpkg)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "delta")
	if out, err := exec.Command("go", "build", "-o", bin, "../app").CombinedOutput(); err != nil {
		t.Fatalf("build delta: %v\n%s", err, out)
	}
	stage, deb := filepath.Join(dir, "stage"), filepath.Join(dir, "delta.deb")
	arch := map[string]string{"amd64": "amd64", "arm64": "arm64"}[runtime.GOARCH]
	if err := StageDeb(stage, bin, "dev", arch); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "dpkg-deb", "--root-owner-group", "--build", stage, deb)
	info, err := exec.Command("dpkg-deb", "-f", deb, "Package", "Version", "Architecture").CombinedOutput()
	if err != nil || !strings.Contains(string(info), "Package: delta") || !strings.Contains(string(info), "Version: 0~dev") {
		t.Fatalf("dpkg-deb -f: %v %s", err, info)
	}
	root := filepath.Join(dir, "root")
	run(t, dir, "dpkg-deb", "-x", deb, root)
	var want []Entry
	for _, e := range DebPayload {
		if !strings.HasPrefix(e.Path, "DEBIAN/") {
			want = append(want, e)
		}
	}
	checkTree(t, root, want)

	unit, _ := os.ReadFile(filepath.Join(root, "usr/lib/systemd/user/delta.service"))
	var execStart []string
	for _, l := range strings.Split(string(unit), "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
			execStart = strings.Fields(v)
		}
	}
	if len(execStart) == 0 || execStart[0] != "/usr/bin/delta" {
		t.Fatalf("the unit's ExecStart: %q", execStart)
	}
	execStart[0] = filepath.Join(root, "usr/bin/delta")
	state := filepath.Join(dir, "state")
	os.MkdirAll(state, 0o700)
	os.WriteFile(filepath.Join(state, "config.json"), []byte(`{"name": "laptop", "peer_listen": "127.0.0.1:0",
 "network_key": "00112233445566778899aabbccddeeff", "peers": [{"name": "studio", "roads": {"lan": "127.0.0.1:9"}}]}`), 0o600)
	cmd := exec.Command(execStart[0], execStart[1:]...)
	cmd.Env = append(os.Environ(), "DELTA_STATE_DIR="+state, "DELTA_LISTEN=127.0.0.1:0", "TS_NO_LOGS_NO_SUPPORT=true")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("the unit's Delta did not stop cleanly on SIGTERM: %v\n%s", err, logs.String())
		}
	}()
	var local struct{ URL string }
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(state, "local.json"))
		if err == nil && json.Unmarshal(b, &local) == nil && local.URL != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unit's Delta wrote no local.json:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	tok, _ := os.ReadFile(filepath.Join(state, "local-token"))
	req, _ := http.NewRequestWithContext(context.Background(), "GET", local.URL+"/v1/status", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{}).DialContext}}).Do(req)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, logs.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"name": "laptop"`) {
		t.Fatalf("status: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(logs.String(), "running headless") {
		t.Errorf("the unit's Delta is not headless:\n%s", logs.String())
	}
}
