package packaging

import (
	"bytes"
	"compress/gzip"
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
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	"howett.net/plist"
)

func decodePlist(t *testing.T, name string, v any) {
	t.Helper()
	b, err := File(name, "1.2.3")
	if name == "macos/Info.plist" {
		b, err = InfoPlist("1.2.3", "57")
	}
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
		"CFBundleShortVersionString": "1.2.3", "CFBundleVersion": "57", "LSMinimumSystemVersion": "12.0",
		"LSUIElement": true, "NSAppSleepDisabled": true,
		// Issue 64, M15: a region, a category, and notifications that stay
		// until read (a write that needs a person must not vanish as a
		// banner; the person can still choose banners).
		"CFBundleDevelopmentRegion": "en", "LSApplicationCategoryType": "public.app-category.utilities", "NSUserNotificationAlertStyle": "alert",
	} {
		if info[key] != want {
			t.Errorf("Info.plist %s = %v, want %v", key, info[key], want)
		}
	}
	if c, _ := info["NSHumanReadableCopyright"].(string); !strings.Contains(c, "1.2.3") || !strings.Contains(c, "github.com/delta-roads/delta") {
		t.Errorf("NSHumanReadableCopyright %q names neither the version nor where Delta comes from", c)
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
	for _, s := range []string{"macos/scripts/preinstall", "macos/scripts/postinstall", "macos/uninstall.sh", "macos/build.sh", "macos/notarize.sh", "macos/smoke.sh", "macos/release-notes.sh", "../tools/deps"} {
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
// an icns drawn from the 1024 px image.
func TestStageMac(t *testing.T) {
	_, root, scripts := stageFake(t)
	checkTree(t, root, MacPayload)
	checkTree(t, scripts, MacScripts)
	b, _ := os.ReadFile(filepath.Join(root, "Applications/Delta.app/Contents/Info.plist"))
	if !bytes.Contains(b, []byte("<string>1.2.3</string>")) || bytes.Contains(b, []byte("@VERSION@")) ||
		!bytes.Contains(b, []byte("<key>CFBundleVersion</key>\n\t<string>57</string>")) || bytes.Contains(b, []byte("@BUILD@")) {
		t.Errorf("the staged Info.plist lacks the version or the build")
	}
	if _, err := InfoPlist("1.2.3", "1.2.3"); err == nil {
		t.Error("a dotted build was taken as CFBundleVersion")
	}
	icns, _ := os.ReadFile(filepath.Join(root, "Applications/Delta.app/Contents/Resources/Delta.icns"))
	entries, err := ReadICNS(icns)
	if err != nil || entries["ic10"] != 1024 || entries["ic09"] != 512 || entries["ic07"] != 128 || entries["icp4"] != 16 || entries["icp5"] != 32 || entries["ic04"] != 0 || entries["ic05"] != 0 {
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

// stageFake lays out the macOS payload and scripts of version 1.2.3 with a
// stand-in binary, in a folder of the test's.
func stageFake(t *testing.T) (dir, root, scripts string) {
	t.Helper()
	dir = t.TempDir()
	bin := filepath.Join(dir, "delta")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	root, scripts = filepath.Join(dir, "root"), filepath.Join(dir, "scripts")
	if err := StageMac(root, scripts, bin, "1.2.3", "57"); err != nil {
		t.Fatal(err)
	}
	return dir, root, scripts
}

// TestPkgReadBack reads a .pkg built on a Mac (DELTA_PKG) back with bsdtar
// and cpio and checks its payload and scripts as TestStageMac does.
func TestPkgReadBack(t *testing.T) {
	pkg := os.Getenv("DELTA_PKG")
	if pkg == "" {
		t.Skip("DELTA_PKG names no .pkg (the macOS workflow sets it after make pkg)")
	}
	readBack(t, pkg)
}

// readBack reads the .pkg at pkg back with bsdtar and cpio and checks its
// payload and scripts as TestStageMac does. pkg may be relative to the
// test's folder (packaging/): it is read from a folder of its own, so it
// is made absolute first (issue 37, N1: a relative path failed every run).
func readBack(t *testing.T, pkg string) {
	t.Helper()
	pkg, err := filepath.Abs(pkg)
	if err != nil {
		t.Fatal(err)
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
	if _, err := os.Stat(filepath.Join(root, CodeResources)); err != nil {
		t.Errorf("the package's Delta.app is not signed: it has no %s (codesign writes it, ad hoc too, and build.sh always signs): %v", CodeResources, err)
	}
	checkTree(t, root, SignedMacPayload)
	var seal map[string]any
	if b, err := os.ReadFile(filepath.Join(root, CodeResources)); err == nil {
		if _, err := plist.Unmarshal(b, &seal); err != nil || seal["files2"] == nil || seal["rules2"] == nil {
			t.Errorf("%s is not codesign's seal (a plist with files2 and rules2): %v", CodeResources, err)
		}
	}
	checkTree(t, scripts, MacScripts)
	dist, err := os.ReadFile(filepath.Join(dir, "Distribution"))
	if err != nil || !bytes.Contains(dist, []byte(`hostArchitectures="arm64,x86_64"`)) {
		t.Errorf("the package's Distribution: %v", err)
	}
}

// TestPkgReadBackRelative builds a .pkg-shaped xar on Linux as the review
// of issue 37 did (a Distribution, and a component with a gzip cpio
// Payload and Scripts from stage mac; pkgbuild --compression legacy makes
// the same) and reads it back by a path relative to the test's folder, as
// the workflow's step names it.
func TestPkgReadBackRelative(t *testing.T) {
	for _, tool := range []string{"bsdtar", "cpio"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getuid() == 0 && runtime.GOOS == "linux" {
				t.Fatalf("%s is not installed (make deps installs it as root)", tool)
			}
			t.Skipf("%s is not installed (Debian: apt-get install libarchive-tools cpio; make deps does it as root)", tool)
		}
	}
	dir, root, scripts := stageFake(t)
	// What codesign adds to the bundle it signs (build.sh always signs, ad
	// hoc at least): a stand-in seal, shaped as codesign writes it, so that
	// the payload check's view of a signed bundle is exercised here.
	signStandIn(t, root)
	flat := filepath.Join(dir, "flat")
	comp := filepath.Join(flat, "Delta-component.pkg")
	os.MkdirAll(comp, 0o755)
	run(t, root, "sh", "-c", fmt.Sprintf("find . | cpio -o --quiet --format odc | gzip -c >%q", filepath.Join(comp, "Payload")))
	run(t, scripts, "sh", "-c", fmt.Sprintf("find . | cpio -o --quiet --format odc | gzip -c >%q", filepath.Join(comp, "Scripts")))
	dist, _ := os.ReadFile("macos/Distribution.xml")
	os.WriteFile(filepath.Join(flat, "Distribution"), bytes.ReplaceAll(dist, []byte("@VERSION@"), []byte("1.2.3")), 0o644)
	pkg := filepath.Join(dir, "Delta-sim.pkg")
	run(t, flat, "bsdtar", "--format", "xar", "-cf", pkg, "Distribution", "Delta-component.pkg")
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, pkg)
	if err != nil || filepath.IsAbs(rel) {
		t.Fatalf("no relative path to %s from %s: %v", pkg, wd, err)
	}
	readBack(t, rel)
}

// signStandIn writes, under the payload root, what codesign writes into a
// bundle it signs: _CodeSignature/CodeResources, a plist whose files2
// seals the bundle's other files (hashes here made up: nothing on Linux
// checks them).
func signStandIn(t *testing.T, root string) {
	t.Helper()
	p := filepath.Join(root, CodeResources)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	seal := map[string]any{
		"files":  map[string]any{"Resources/Delta.icns": []byte{0}},
		"files2": map[string]any{"Resources/Delta.icns": map[string]any{"hash2": []byte{0}}},
		"rules":  map[string]any{"^Resources/": true},
		"rules2": map[string]any{"^Resources/": map[string]any{"weight": 20.0}},
	}
	b, err := plist.MarshalIndent(seal, plist.XMLFormat, "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
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
// checks what actionlint does not (releaseProblems). The same checks find
// the turn-3 workflow's defects, kept in testdata/turn3: a check that
// passes both would prove nothing.
func TestWorkflow(t *testing.T) {
	wf := "../.github/workflows/release-macos.yml"
	out, err := exec.Command("go", "tool", "actionlint", wf).CombinedOutput()
	if err != nil {
		t.Fatalf("actionlint %s: %v\n%s", wf, err, out)
	}
	if p := releaseProblems(t, "..", ".github/workflows/release-macos.yml"); len(p) > 0 {
		t.Errorf("the release workflow:\n  %s", strings.Join(p, "\n  "))
	}
	// The defects of the turn-3 workflow are expected: they are what the
	// checks must find, and are not printed (they read like failures);
	// they are printed only when one is not found.
	old := releaseProblems(t, "testdata/turn3", "release-macos.yml")
	for _, want := range []string{"only its own env: sets", "no lo0 aliases", "notarytool submit without --output-format json",
		"codesign --verify --deep --strict", "pkgutil --check-signature", "spctl -a -vv -t install", "control server"} {
		if !slices.ContainsFunc(old, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("the check does not find the turn-3 workflow's defect %q; it found:\n  %s", want, strings.Join(old, "\n  "))
		}
	}
	// And turn 4's (testdata/turn4), which the review of issue 37 read.
	old4 := releaseProblems(t, "testdata/turn4", "release-macos.yml")
	for _, want := range []string{"DELTA_PKG=build/Delta-$VERSION.pkg is relative", "replaces Go's -O2 -g", "holds both make test and make pkg",
		"go-version-file: go.mod", "spctl's exit code is trusted", "--compression legacy", "lipo -verify_arch", "arch -x86_64", "macos-15",
		"G2 intermediate", "GitHub Release", "SHA-256 beside it", "stage civersion"} {
		if !slices.ContainsFunc(old4, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("the check does not find the turn-4 workflow's defect %q; it found:\n  %s", want, strings.Join(old4, "\n  "))
		}
	}
	// And turn 5's (testdata/turn5, b4f9d01's), which issue 64 read: a
	// retired runner for both jobs (M1), the Release published before the
	// smoke, as Latest for a -rc tag, and unsigned without the secrets
	// (M3), no install on Intel hardware or on macOS 26.
	old5 := releaseProblems(t, "testdata/turn5", "release-macos.yml")
	for _, want := range []string{"job test runs on macos-14, which GitHub retired on 2026-11-02", "job release runs on macos-14, which GitHub retired on 2026-11-02",
		"publishes the Release without needing job smoke-macos-15's install", "a -rc tag published as a prerelease", "a tag stopped without the signing and notary secrets",
		"an install on Intel hardware", "an install on macOS 26", "actions/checkout@v4 runs on Node 20", "actions/download-artifact@v4 runs on Node 20"} {
		if !slices.ContainsFunc(old5, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("the check does not find the turn-5 workflow's defect %q; it found:\n  %s", want, strings.Join(old5, "\n  "))
		}
	}
}

type workflowStep struct {
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	If   string            `yaml:"if"`
	Env  map[string]string `yaml:"env"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
}

type workflowJob struct {
	RunsOn   string            `yaml:"runs-on"`
	Needs    any               `yaml:"needs"`
	Env      map[string]string `yaml:"env"`
	Steps    []workflowStep    `yaml:"steps"`
	Strategy struct {
		Matrix map[string]any `yaml:"matrix"`
	} `yaml:"strategy"`
}

// labels are the runner labels a job runs on: its runs-on, or each value
// of the matrix variable it names (runs-on: ${{ matrix.os }}).
func (j workflowJob) labels() []string {
	m := regexp.MustCompile(`^\$\{\{\s*matrix\.([A-Za-z_-]+)\s*\}\}$`).FindStringSubmatch(strings.TrimSpace(j.RunsOn))
	if m == nil {
		return []string{j.RunsOn}
	}
	var out []string
	if vs, ok := j.Strategy.Matrix[m[1]].([]any); ok {
		for _, v := range vs {
			out = append(out, fmt.Sprint(v))
		}
	}
	return out
}

// runnerProblems says which of the workflow's runner labels GitHub does
// not run, as packaging/macos/runners.json has them (issue 64, M1): a
// label not listed there, or one whose retirement date has passed on day.
func runnerProblems(t *testing.T, jobs map[string]workflowJob, day time.Time) []string {
	t.Helper()
	b, err := os.ReadFile("macos/runners.json")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Labels map[string]struct {
			Retires string `json:"retires"`
			Source  string `json:"source"`
		} `json:"labels"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("macos/runners.json: %v", err)
	}
	var problems []string
	for name, job := range jobs {
		for _, l := range job.labels() {
			r, ok := list.Labels[l]
			if !ok {
				problems = append(problems, fmt.Sprintf("job %s runs on %q, which packaging/macos/runners.json does not list (add it with its retirement date, if GitHub has announced one)", name, l))
				continue
			}
			if r.Retires == "" {
				continue
			}
			when, err := time.Parse(time.DateOnly, r.Retires)
			if err != nil {
				t.Fatalf("macos/runners.json: %s retires %q: %v", l, r.Retires, err)
			}
			if !day.Before(when) {
				problems = append(problems, fmt.Sprintf("job %s runs on %s, which GitHub retired on %s (%s): no runner takes the job", name, l, r.Retires, r.Source))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// releaseProblems reads the release workflow at root/path, with the
// scripts under root its steps run, and says what would keep it from
// running green, or from releasing what it should, on a macOS runner.
func releaseProblems(t *testing.T, root, path string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Env  map[string]string      `yaml:"env"`
		Jobs map[string]workflowJob `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("%s does not parse as YAML: %v", path, err)
	}
	// script is what a step runs: its run: text, and the text of any of
	// the repository's scripts it names.
	script := func(run string) string {
		text := run
		for _, f := range regexp.MustCompile(`packaging/macos/[a-z]+\.sh`).FindAllString(run, -1) {
			if b, err := os.ReadFile(filepath.Join(root, f)); err == nil {
				text += "\n" + string(b)
			}
		}
		return text
	}
	problems := runnerProblems(t, wf.Jobs, time.Now())
	envRef := regexp.MustCompile(`env\.([A-Za-z_][A-Za-z0-9_]*)`)
	// What the whole workflow does, whichever job does it.
	var tested, codesigned, pkgsigned, gatekept, installs, lipo, rosetta, g2, release, sums, later, ciVersion bool
	var intel, tahoe, prerelease, tagGuard bool
	testJob, pkgJob, publishJob := "", "", ""
	var installJobs []string
	for name, job := range wf.Jobs {
		var aliased bool
		for _, st := range job.Steps {
			label := st.Name
			if label == "" {
				label = st.Uses
			}
			for _, m := range envRef.FindAllStringSubmatch(st.If, -1) {
				v := m[1]
				_, inJob := job.Env[v]
				_, inWorkflow := wf.Env[v]
				_, inStep := st.Env[v]
				switch {
				case inStep && !inJob && !inWorkflow:
					problems = append(problems, fmt.Sprintf("job %s, step %q: its if: reads env.%s, which only its own env: sets (always empty when if: is evaluated); set it in the job's env", name, label, v))
				case !inJob && !inWorkflow:
					problems = append(problems, fmt.Sprintf("job %s, step %q: its if: reads env.%s, which nothing sets", name, label, v))
				}
			}
			if action, ver, ok := strings.Cut(st.Uses, "@v"); ok {
				if first, known := node24Majors[action]; known {
					if major, err := strconv.Atoi(ver); err != nil || major < first {
						problems = append(problems, fmt.Sprintf("job %s: %s runs on Node 20, which GitHub removed from its runners on 2026-09-16; %s@v%d is the first major on Node 24 (M9)", name, st.Uses, action, first))
					}
				}
			}
			if strings.HasPrefix(st.Uses, "actions/setup-go") && st.With["go-version-file"] != "go.mod" {
				problems = append(problems, fmt.Sprintf("job %s: setup-go takes Go's version from its own with: (%q), not go-version-file: go.mod", name, st.With["go-version"]))
			}
			run := script(st.Run)
			if strings.Contains(run, "ifconfig lo0 alias") {
				aliased = true
			}
			if strings.Contains(run, "make test") {
				if !aliased {
					problems = append(problems, fmt.Sprintf("job %s: make test runs with no lo0 aliases added before it (macOS has only 127.0.0.1; the tailnet tests bind 127.0.0.2-5)", name))
				}
				tested, testJob = true, name
			}
			if strings.Contains(st.Run, "make pkg") {
				pkgJob = name
				text := script("packaging/macos/build.sh packaging/macos/notarize.sh")
				for l := range strings.Lines(text) {
					if strings.Contains(l, "xcrun notarytool submit") && !strings.Contains(l, "--output-format json") {
						problems = append(problems, fmt.Sprintf("job %s: notarytool submit without --output-format json (it exits 0 on Invalid): %s", name, strings.TrimSpace(l)))
					}
				}
				if strings.Contains(text, "notarytool submit") && (!strings.Contains(text, "stage notarized") || !strings.Contains(text, "notarytool log")) {
					problems = append(problems, fmt.Sprintf("job %s: the notarization's verdict is not read (stage notarized) or Apple's log is not printed on a refusal", name))
				}
				problems = append(problems, buildProblems(text)...)
			}
			if m := regexp.MustCompile(`DELTA_PKG="?([^" ]+)`).FindStringSubmatch(run); m != nil && !strings.HasPrefix(m[1], "/") && !strings.HasPrefix(m[1], "$PWD") && !strings.HasPrefix(m[1], "$GITHUB_WORKSPACE") {
				problems = append(problems, fmt.Sprintf("job %s, step %q: DELTA_PKG=%s is relative, and go test reads it from packaging/ (N1: every run stopped there)", name, label, m[1]))
			}
			signed := strings.Contains(st.If, "env.HAS_CERT")
			codesigned = codesigned || signed && strings.Contains(run, "codesign --verify --deep --strict")
			pkgsigned = pkgsigned || signed && strings.Contains(run, "pkgutil --check-signature")
			if signed && strings.Contains(run, "spctl -a -vv -t install") {
				gatekept = true
				if !strings.Contains(run, "source=Notarized Developer ID") {
					problems = append(problems, fmt.Sprintf("job %s, step %q: spctl's exit code is trusted (it is 0 with assessments disabled too); read its verdict's source=Notarized Developer ID", name, label))
				}
			}
			if strings.Contains(run, "security import") && strings.Contains(run, "DeveloperIDG2CA.cer") && strings.Contains(run, "f16cd3c54c7f83cea4bf1a3e6a0819c8aaa8e4a1528fd144715f350643d2df3a") {
				g2 = true
			}
			lipo = lipo || strings.Contains(run, "lipo -verify_arch") && strings.Contains(run, "arm64 x86_64")
			rosetta = rosetta || strings.Contains(run, "arch -x86_64 ")
			if strings.Contains(run, "gh release") && strings.Contains(st.If, "github.ref_type == 'tag'") {
				release, publishJob = true, name
				prerelease = prerelease || strings.Contains(run, "--prerelease") && strings.Contains(run, "*-*")
			}
			// A tag without the signing and notary secrets stops (M3).
			tagGuard = tagGuard || strings.Contains(st.If, "github.ref_type == 'tag'") && strings.Contains(st.If, "env.HAS_CERT != 'true'") &&
				strings.Contains(st.If, "env.HAS_NOTARY != 'true'") && strings.Contains(run, "exit 1")
			sums = sums || strings.Contains(run, "shasum -a 256") && strings.Contains(run, ".sha256")
			ciVersion = ciVersion || strings.Contains(run, "stage civersion")
			if i := strings.Index(run, "installer -pkg"); i >= 0 {
				installs = true
				if j := strings.Index(run, "init --static"); j < 0 || j > i {
					problems = append(problems, fmt.Sprintf("job %s, step %q: the installed Delta starts with no static config (delta init --static before installer -pkg), so it would join Tailscale's real control server", name, label))
				}
				installJobs = append(installJobs, name)
				for _, l := range job.labels() {
					later = later || l == "macos-15"
					intel = intel || l == "macos-15-intel"
					tahoe = tahoe || l == "macos-26"
				}
			}
		}
	}
	if testJob != "" && testJob == pkgJob {
		problems = append(problems, fmt.Sprintf("job %s holds both make test and make pkg: one cold job for everything (N4); split the tests from the release", testJob))
	}
	if pkgJob != "" && testJob != "" && testJob != pkgJob && !needs(wf.Jobs[pkgJob].Needs, testJob) {
		problems = append(problems, fmt.Sprintf("job %s builds the release without needing job %s's tests", pkgJob, testJob))
	}
	// The Release is published last, once every install passed (M3).
	for _, j := range installJobs {
		if publishJob != "" && j != publishJob && !needs(wf.Jobs[publishJob].Needs, j) {
			problems = append(problems, fmt.Sprintf("job %s publishes the Release without needing job %s's install (M3: it published before the smoke ran)", publishJob, j))
		}
	}
	for _, c := range []struct {
		done bool
		what string
	}{{tested, "make test"}, {installs, "installer -pkg"}, {codesigned, "codesign --verify --deep --strict on the app, when signed"},
		{pkgsigned, "pkgutil --check-signature on the .pkg, when signed"}, {gatekept, "spctl -a -vv -t install on the .pkg, when signed"},
		{lipo, "lipo -verify_arch … arm64 x86_64 on the binary (N5)"}, {rosetta, "a run of the x86_64 slice (arch -x86_64, under Rosetta) (N5)"},
		{later, "an install on macos-15, which has Local Network privacy (N5)"},
		{g2, "Apple's Developer ID G2 intermediate imported, pinned by its SHA-256 (N9)"},
		{release, "a GitHub Release of the .pkg on a tag (N10)"}, {sums, "the .pkg's SHA-256 beside it (N10)"},
		{ciVersion, "an untagged build's version above the last release (stage civersion, N8)"},
		{intel, "an install on Intel hardware (macos-15-intel: the x86_64 slice run natively, not only under Rosetta)"},
		{tahoe, "an install on macOS 26 (macos-26)"},
		{prerelease, "a -rc tag published as a prerelease (--prerelease for a tag with a -), never Latest (M3)"},
		{tagGuard, "a tag stopped without the signing and notary secrets (env.HAS_CERT and env.HAS_NOTARY; M3: an unsigned .pkg was published)"}} {
		if !c.done {
			problems = append(problems, "the workflow lacks "+c.what)
		}
	}
	return problems
}

// node24Majors are the first majors of the actions the workflow uses whose
// action.yml says runs.using: node24 (issue 64, M9: the workflow's were
// Node 20's, which GitHub forced onto Node 24 in June 2026 and removed
// from its runners on 2026-09-16). download-artifact's v5 and v6 still
// run on Node 20 by default.
var node24Majors = map[string]int{"actions/checkout": 5, "actions/setup-go": 6, "actions/upload-artifact": 6, "actions/download-artifact": 7}

// needs reports whether a job's needs: (a name or a list) names job.
func needs(n any, job string) bool {
	switch v := n.(type) {
	case string:
		return v == job
	case []any:
		for _, x := range v {
			if x == job {
				return true
			}
		}
	}
	return false
}

// buildProblems reads build.sh (text): what the release's command lines
// lose that make test's builds keep.
func buildProblems(text string) []string {
	var problems []string
	// CGO_CFLAGS replaces Go's default "-O2 -g" (N2): every value it is
	// given must name an optimisation level again.
	cflags := regexp.MustCompile(`(?m)(?:CGO_CFLAGS=|cflags=)"([^"]*)"`).FindAllStringSubmatch(text, -1)
	for _, m := range cflags {
		if strings.HasPrefix(m[1], "$") {
			continue // names a variable checked on its own line
		}
		if !regexp.MustCompile(`(^| )-O[1-3s]( |$)`).MatchString(m[1]) {
			problems = append(problems, fmt.Sprintf("build.sh: CGO_CFLAGS=%q replaces Go's -O2 -g: SQLite and the Objective-C are built at clang's -O0 (N2)", m[1]))
		}
	}
	if len(cflags) == 0 {
		problems = append(problems, "build.sh: no CGO_CFLAGS with the deployment target")
	}
	for l := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimSpace(l), "pkgbuild ") || strings.Contains(l, "--install-location") {
			if strings.Contains(l, "--install-location") && !strings.Contains(l, "--compression") {
				problems = append(problems, "build.sh: pkgbuild chooses the Payload's compression itself (N12): --compression legacy")
			}
		}
	}
	return problems
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
	if _, err := exec.LookPath("dpkg-shlibdeps"); err != nil {
		t.Skip("dpkg-shlibdeps is not installed (Debian's dpkg-dev; make deps installs it as root)")
	}
	dir := t.TempDir()
	arch := map[string]string{"amd64": "amd64", "arm64": "arm64"}[runtime.GOARCH]
	// Built as make deb builds it.
	deb, err := BuildDeb("..", dir, "dev", arch)
	if err != nil {
		t.Fatal(err)
	}
	info, err := exec.Command("dpkg-deb", "-f", deb, "Package", "Version", "Architecture", "Depends").CombinedOutput()
	if err != nil || !strings.Contains(string(info), "Package: delta") || !strings.Contains(string(info), "Version: 0~dev") ||
		!regexp.MustCompile(`Depends: libc6 \(>= 2\.\d+\)`).Match(info) {
		t.Fatalf("dpkg-deb -f: %v %s", err, info)
	}
	if conf, err := exec.Command("dpkg-deb", "-I", deb, "conffiles").CombinedOutput(); err != nil || strings.TrimSpace(string(conf)) != "/etc/xdg/autostart/delta.desktop" {
		t.Errorf("conffiles: %v %q", err, conf)
	}
	lintian(t, deb)
	root := filepath.Join(dir, "root")
	run(t, dir, "dpkg-deb", "-x", deb, root)
	var want []Entry
	for _, e := range DebPayload {
		if !strings.HasPrefix(e.Path, "DEBIAN/") {
			want = append(want, e)
		}
	}
	checkTree(t, root, want)
	for _, f := range []string{"usr/share/doc/delta/changelog.gz", "usr/share/man/man1/delta.1.gz"} {
		b, _ := os.ReadFile(filepath.Join(root, f))
		if len(b) < 18 || b[0] != 0x1f || b[1] != 0x8b || b[4]|b[5]|b[6]|b[7] != 0 || b[3]&0x08 != 0 {
			t.Errorf("%s is not gzip -9n (no name, no time)", f)
		}
	}
	// Every command, one-line ones (no arguments) and two-line ones alike,
	// and every exit code as an entry of its own.
	if zr, err := gzipReader(filepath.Join(root, "usr/share/man/man1/delta.1.gz")); err != nil || !strings.Contains(zr, ".B init") || !strings.Contains(zr, ".TP\n.B status\n") ||
		!strings.Contains(zr, ".TP\n.B ping PEER\n") || !strings.Contains(zr, `.SH "EXIT STATUS"`) || !strings.Contains(zr, ".TP\n.B 12\nnot found") {
		t.Errorf("the man page lacks the commands or the exit codes (%v):\n%s", err, zr)
	}
	if cr, _ := os.ReadFile(filepath.Join(root, "usr/share/doc/delta/copyright")); !bytes.Contains(cr, []byte("tailscale.com v1.102.5")) || !bytes.Contains(cr, []byte("BSD-3-Clause")) {
		t.Errorf("the copyright file does not name the modules compiled in:\n%.2000s", cr)
	}
	if unit, _ := os.ReadFile(filepath.Join(root, "usr/lib/systemd/user/delta.service")); bytes.Contains(unit, []byte("network-online.target")) {
		t.Error("the user unit names network-online.target, which a user's systemd does not have")
	}

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

// TestDepsOnMac runs tools/deps as make deps would on a macOS runner: uname
// says Darwin, the user is not root, there is no /usr/include to look for
// and no apt. With a working compiler it passes and installs nothing;
// with a compiler that cannot build <stdio.h> it fails and names
// xcode-select --install; apt-get is never reached.
func TestDepsOnMac(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no cc on this machine to stand in for the Mac's")
	}
	bin := t.TempDir()
	for _, tool := range []string{"sh", "mktemp", "sed", "rm", "dirname", "cat"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	aptRan := filepath.Join(t.TempDir(), "apt-ran")
	fake := map[string]string{
		"uname":   "echo Darwin",
		"id":      "echo 501",
		"apt-get": "touch " + aptRan + "; exit 1",
		// A compiler that cannot find <stdio.h>, as a Mac without the
		// Command Line Tools.
		// The machine's own compiler, with the PATH its assembler and
		// linker need.
		"good-cc":   "PATH=" + strconv.Quote(os.Getenv("PATH")) + " exec " + cc + ` "$@"`,
		"broken-cc": "echo 'c.c:1:10: fatal error: stdio.h: No such file or directory' >&2; exit 1",
	}
	for name, body := range fake {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	deps, _ := filepath.Abs("../tools/deps")
	run := func(compiler string) (string, error) {
		cmd := exec.Command(deps)
		cmd.Env = []string{"PATH=" + bin, "CC=" + compiler, "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(filepath.Join(bin, "good-cc")); err != nil || out != "" {
		t.Errorf("with a working compiler: %v %q, want success and silence", err, out)
	}
	out, err := run(filepath.Join(bin, "broken-cc"))
	if err == nil || !strings.Contains(out, "xcode-select --install") || !strings.Contains(out, "stdio.h") {
		t.Errorf("without a compiler: %v %q, want a failure naming xcode-select --install and what the compiler said", err, out)
	}
	if _, err := os.Stat(aptRan); err == nil {
		t.Error("tools/deps ran apt-get on a Mac")
	}
}

// macTools puts stand-ins for macOS's ps, launchctl, pkill, stat, dscl,
// id, chown, chmod and pkgutil in a folder of its own, each logging its
// arguments to log, with the process table ps shows: two users at the
// login window (Fast User Switching), one with a Delta started by hand,
// and root's loginwindow. launchctl print finds the agent loaded for uids
// in loaded.
func macTools(t *testing.T, log, home, loaded string) string {
	t.Helper()
	bin := t.TempDir()
	for _, tool := range []string{"sh", "awk", "sort", "sed", "head", "rm", "echo", "cat", "ln", "mkdir", "readlink"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		os.Symlink(p, filepath.Join(bin, tool))
	}
	logs := `echo "$(basename "$0") $*" >>` + strconv.Quote(log)
	fake := map[string]string{
		"ps": `printf '%s\n' "    0 /System/Library/CoreServices/loginwindow.app/Contents/MacOS/loginwindow" \
"  501 /System/Library/CoreServices/loginwindow.app/Contents/MacOS/loginwindow" \
"  502 /System/Library/CoreServices/loginwindow.app/Contents/MacOS/loginwindow" \
"  501 /Applications/Delta.app/Contents/MacOS/Delta" \
"  503 /Applications/Delta.app/Contents/MacOS/Delta" \
"  501 /usr/sbin/cfprefsd"`,
		"launchctl": logs + "\ncase \"$1 $2\" in \"print gui/\"*) for u in " + loaded + "; do [ \"$2\" = \"gui/$u/com.delta-roads.delta\" ] && exit 0; done; exit 113;; \"bootstrap gui/502\") exit 5;; esac; exit 0",
		"pkill":     logs,
		"chown":     logs,
		"chmod":     logs,
		"pkgutil":   logs,
		"id":        `if [ $# -ge 2 ]; then echo 501; else echo 0; fi`, // id -u jo; id -u (root)
		"stat":      "echo jo",
		// dscl prints a value with a space on a line of its own.
		"dscl": `printf 'NFSHomeDirectory:\n %s\n' ` + strconv.Quote(home),
	}
	for name, body := range fake {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := exec.LookPath("basename")
	os.Symlink(p, filepath.Join(bin, "basename"))
	return bin
}

// TestMacScriptsEveryUser runs the .pkg's scripts and uninstall.sh on
// Linux with macOS's tools stood in: with two users logged in, each one's
// Delta is stopped before an upgrade and started (or restarted) after it,
// uninstall stops every one, and --purge finds a home folder whose path
// has a space.
func TestMacScriptsEveryUser(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the scripts remove /Applications/Delta.app and /Library/LaunchAgents' plist: stood in for only on Linux, where neither exists (the workflow installs and uninstalls for real)")
	}
	home := filepath.Join(t.TempDir(), "Jo Smith")
	state := filepath.Join(home, "Library", "Application Support", "Delta")
	os.MkdirAll(state, 0o700)
	var vol string // the target volume: postinstall's $3, uninstall.sh's DELTA_VOLUME
	run := func(script string, args ...string) []string {
		t.Helper()
		log := filepath.Join(t.TempDir(), "log")
		cmd := exec.Command(script, args...)
		cmd.Env = []string{"PATH=" + macTools(t, log, home, "501 502"), "SUDO_USER=jo", "DELTA_VOLUME=" + vol}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		b, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	has := func(what string, got []string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%s did not run %q; it ran:\n%s", what, w, strings.Join(got, "\n"))
			}
		}
	}
	got := run("macos/scripts/preinstall")
	has("preinstall", got, "launchctl bootout gui/501/com.delta-roads.delta", "launchctl bootout gui/502/com.delta-roads.delta",
		"pkill -TERM -U 501 -x Delta", "pkill -TERM -U 502 -x Delta", "pkill -TERM -U 503 -x Delta")
	if slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, "gui/0/") || strings.Contains(l, "-U 0 ") }) {
		t.Errorf("preinstall touched root's session:\n%s", strings.Join(got, "\n"))
	}
	vol = t.TempDir() // the target volume Installer passes as $3
	got = run("macos/scripts/postinstall", "/tmp/Delta.pkg", "/", vol)
	has("postinstall", got, "launchctl bootstrap gui/501 /Library/LaunchAgents/com.delta-roads.delta.plist",
		"launchctl bootstrap gui/502 /Library/LaunchAgents/com.delta-roads.delta.plist",
		"launchctl kickstart -k gui/502/com.delta-roads.delta") // 502's was loaded: restarted
	app := "/Applications/Delta.app/Contents/MacOS/Delta"
	for _, n := range []string{"delta", "delta-roads"} {
		if l, err := os.Readlink(filepath.Join(vol, "usr/local/bin", n)); err != nil || l != app {
			t.Errorf("postinstall: /usr/local/bin/%s is %q (%v), want a link to %s", n, l, err, app)
		}
	}
	got = run("macos/uninstall.sh", "--purge")
	has("uninstall.sh", got, "launchctl bootout gui/501/com.delta-roads.delta", "launchctl bootout gui/502/com.delta-roads.delta",
		"pkill -TERM -U 503 -x Delta")
	if _, err := os.Stat(state); err == nil {
		t.Errorf("uninstall.sh --purge left %s (a home folder with a space)", state)
	}
	for _, n := range []string{"delta", "delta-roads"} {
		if _, err := os.Lstat(filepath.Join(vol, "usr/local/bin", n)); err == nil {
			t.Errorf("uninstall.sh left the link /usr/local/bin/%s", n)
		}
	}

	// Homebrew's git-delta installed first (its binary is delta): it keeps
	// its name and works as before; Delta's command line is delta-roads.
	for _, brew := range []string{"opt/homebrew/bin", "usr/local/bin"} {
		vol := t.TempDir()
		gitDelta := filepath.Join(vol, brew, "delta")
		os.MkdirAll(filepath.Dir(gitDelta), 0o755)
		os.WriteFile(gitDelta, []byte("#!/bin/sh\necho git-delta\n"), 0o755)
		cmd := exec.Command("macos/scripts/postinstall", "/tmp/Delta.pkg", "/", vol)
		cmd.Env = []string{"PATH=" + macTools(t, filepath.Join(t.TempDir(), "log"), home, "")}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "another program called delta is installed (") || !strings.Contains(string(out), "Delta's command line is delta-roads") {
			t.Errorf("postinstall beside git-delta in /%s: %v\n%s", brew, err, out)
		}
		if b, _ := os.ReadFile(gitDelta); string(b) != "#!/bin/sh\necho git-delta\n" {
			t.Errorf("postinstall changed git-delta in /%s", brew)
		}
		if l, err := os.Readlink(filepath.Join(vol, "usr/local/bin/delta-roads")); err != nil || l != app {
			t.Errorf("postinstall beside git-delta in /%s: no delta-roads link (%q, %v)", brew, l, err)
		}
		if brew == "opt/homebrew/bin" {
			if _, err := os.Lstat(filepath.Join(vol, "usr/local/bin/delta")); err == nil {
				t.Errorf("postinstall linked /usr/local/bin/delta beside Homebrew's delta, which one PATH order or another would hide")
			}
		}
	}
}

// TestNotarized reads notarytool's recorded answers: only Accepted passes,
// with its id; Invalid and In Progress fail naming the status and keep the
// id for notarytool log; text that is not a verdict fails.
func TestNotarized(t *testing.T) {
	for _, tc := range []struct {
		file, id, err string
	}{
		{"accepted.json", "2efe2717-52ef-43a5-96dc-0797e4ca1041", ""},
		{"accepted-with-preamble.json", "5b0d7a11-2c44-4e0f-9a1e-8d2b6c7f3e10", ""},
		{"invalid.json", "9c3f8e21-6b0a-4d8e-a5b1-3f7e2c1d0a99", "not accepted: Invalid"},
		{"in-progress.json", "71a2c5d4-0f3e-4b9a-8c6d-1e2f3a4b5c6d", "not accepted: In Progress"},
		{"auth-error.txt", "", "no JSON verdict"},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "notarytool", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		id, err := Notarized(b)
		if id != tc.id || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: id %q, err %v; want %q, %q", tc.file, id, err, tc.id, tc.err)
		}
	}
}

// TestNotarizeScript runs notarize.sh with notarytool and stapler stood in
// by a fake xcrun that answers as recorded: Accepted staples; Invalid (to
// which the real notarytool exits 0) fails, prints Apple's log and never
// staples.
func TestNotarizeScript(t *testing.T) {
	for _, tc := range []struct {
		answer   string
		ok       bool
		mustRun  []string
		mustNot  string
		mustSays string
	}{
		{"accepted.json", true, []string{"stapler staple Delta.pkg", "stapler validate Delta.pkg"}, "notarytool log", "accepted"},
		{"invalid.json", false, []string{"notarytool log 9c3f8e21-6b0a-4d8e-a5b1-3f7e2c1d0a99 --keychain-profile ci"}, "stapler", "not accepted: Invalid"},
		// Not finished within --timeout 35m (M10): the id, and how to go on
		// without a new submission.
		{"in-progress.json", false, []string{"notarytool submit Delta.pkg --keychain-profile ci --wait --timeout 35m --output-format json"}, "stapler",
			"follow it with xcrun notarytool info 71a2c5d4-0f3e-4b9a-8c6d-1e2f3a4b5c6d"},
	} {
		bin := t.TempDir()
		log := filepath.Join(t.TempDir(), "log")
		answer, _ := filepath.Abs(filepath.Join("testdata", "notarytool", tc.answer))
		xcrun := `echo "$*" >>` + strconv.Quote(log) + `
case $1 in notarytool) case $2 in submit) cat ` + strconv.Quote(answer) + `;; log) echo '{"issues":[{"message":"The binary is not signed."}]}';; esac;; esac
exit 0`
		os.WriteFile(filepath.Join(bin, "xcrun"), []byte("#!/bin/sh\n"+xcrun+"\n"), 0o755)
		root, _ := filepath.Abs("..") // notarize.sh runs from the repository's root, as build.sh does
		cmd := exec.Command(filepath.Join(root, "packaging/macos/notarize.sh"), "Delta.pkg", "--keychain-profile", "ci")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if (err == nil) != tc.ok || !strings.Contains(string(out), tc.mustSays) {
			t.Errorf("%s: %v, want ok %v, saying %q:\n%s", tc.answer, err, tc.ok, tc.mustSays, out)
		}
		b, _ := os.ReadFile(log)
		for _, want := range tc.mustRun {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s: xcrun %q was not run; it ran:\n%s", tc.answer, want, b)
			}
		}
		if strings.Contains(string(b), tc.mustNot) {
			t.Errorf("%s: xcrun %s was run:\n%s", tc.answer, tc.mustNot, b)
		}
		// A refusal prints Apple's log; a submission still in progress has
		// none yet (its id and the way on are said instead).
		if !tc.ok && tc.answer != "in-progress.json" && !strings.Contains(string(out), "The binary is not signed.") {
			t.Errorf("%s: Apple's log is not printed:\n%s", tc.answer, out)
		}
	}
}

// TestMacVersion: Info.plist and pkgbuild get up to three integers.
func TestMacVersion(t *testing.T) {
	for in, want := range map[string]string{"v1.2.3": "1.2.3", "1.2.3": "1.2.3", "v1.2.3-rc1": "1.2.3", "v2": "2.0.0", "v1.10": "1.10.0",
		"dev": "0.0.0", "0.0.57": "0.0.57", "v01.02.03": "1.2.3", "": "0.0.0", "1.2.3.4": "1.2.3"} {
		if got := MacVersion(in); got != want {
			t.Errorf("MacVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// lintian runs Debian's lintian on the .deb (pedantic, informational and
// experimental tags too): it must say nothing.
func lintian(t *testing.T, deb string) {
	t.Helper()
	if _, err := exec.LookPath("lintian"); err != nil {
		if os.Geteuid() == 0 {
			t.Fatal("lintian is not installed (make deps installs it as root)")
		}
		t.Log("lintian is not installed (Debian: apt-get install lintian; make deps does it as root): the .deb is not linted")
		return
	}
	out, err := exec.Command("lintian", "--pedantic", "--info", "--display-experimental", "--fail-on", "error,warning,info,pedantic", deb).CombinedOutput()
	var tags []string
	for l := range strings.Lines(string(out)) {
		if len(l) > 2 && l[1] == ':' && strings.Contains("EWIPXO", l[:1]) {
			tags = append(tags, strings.TrimSpace(l))
		}
	}
	if err != nil || len(tags) > 0 {
		t.Errorf("lintian: %v\n%s", err, out)
	}
	t.Logf("lintian --pedantic --info --display-experimental: %d tags", len(tags))
}

func gzipReader(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(zr)
	return string(b), err
}

// TestPreinstallWaits: preinstall returns only once every Delta it told to
// stop is gone (issue 37, N7: it signalled a hand-started Delta and went
// on, and the new one found the lock held and stepped aside until the next
// login); one still there after 20 s is killed. turn 4's preinstall, kept
// in testdata/turn4, does not wait.
func TestPreinstallWaits(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("macOS's tools are stood in for only on Linux")
	}
	run := func(script string, runningFor int) []string {
		t.Helper()
		dir := t.TempDir()
		log, count := filepath.Join(dir, "log"), filepath.Join(dir, "count")
		bin := macTools(t, log, dir, "501 502")
		// pgrep answers "still running" runningFor times, then "gone".
		fakes := map[string]string{
			"pgrep": `echo "pgrep $*" >>` + strconv.Quote(log) + `; n=$(cat ` + strconv.Quote(count) + ` 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" >` + strconv.Quote(count) + `; [ "$n" -le ` + strconv.Itoa(runningFor) + ` ]`,
			"sleep": `echo "sleep $*" >>` + strconv.Quote(log),
		}
		for name, body := range fakes {
			os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755)
		}
		cmd := exec.Command(script)
		cmd.Env = []string{"PATH=" + bin}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		b, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	// It waits: pgrep asked until the Deltas are gone, after the signals.
	got := run("macos/scripts/preinstall", 3)
	lastTerm := slices.IndexFunc(got, func(l string) bool { return strings.HasPrefix(l, "pkill -TERM -U 503") })
	polls := 0
	for _, l := range got[lastTerm+1:] {
		if strings.HasPrefix(l, "pgrep -U ") {
			polls++
		}
	}
	if lastTerm < 0 || polls < 4 || !slices.Contains(got, "sleep 0.5") || slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, "pkill -KILL") }) {
		t.Errorf("preinstall did not wait for the Deltas it stopped (%d polls after the last signal):\n%s", polls, strings.Join(got, "\n"))
	}
	// The uninstaller waits too, before it removes anything (issue 64,
	// M12): pkgutil --forget, its last step, comes after the last poll.
	got = run("macos/uninstall.sh", 3)
	lastPoll := slices.IndexFunc(got, func(l string) bool { return strings.HasPrefix(l, "pkgutil --forget") })
	if lastPoll < 0 || !slices.ContainsFunc(got[:lastPoll], func(l string) bool { return strings.HasPrefix(l, "pgrep -U ") }) ||
		slices.ContainsFunc(got[lastPoll:], func(l string) bool { return strings.HasPrefix(l, "pgrep") }) {
		t.Errorf("uninstall.sh did not wait for the Deltas it stopped before removing them:\n%s", strings.Join(got, "\n"))
	}
	// One that never goes is killed after 20 s (40 polls of 0.5 s).
	got = run("macos/scripts/preinstall", 1000)
	if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, "pkill -KILL -U ") }) {
		t.Errorf("preinstall left a Delta that did not stop:\n%s", strings.Join(got, "\n"))
	}
	// turn 4's script went on at once.
	got = run("testdata/turn4/packaging/macos/scripts/preinstall", 3)
	if slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, "pgrep") }) {
		t.Errorf("the check does not tell turn 4's preinstall, which does not wait:\n%s", strings.Join(got, "\n"))
	}
}

// TestCIVersion: an untagged build sorts above the last release, in
// Info.plist's and pkgbuild's terms too (issue 37, N8).
func TestCIVersion(t *testing.T) {
	for _, tc := range [][3]string{{"v1.2.3", "57", "1.2.4-ci.57"}, {"", "3", "0.0.1-ci.3"}, {"v2.0.9-rc1", "1", "2.0.10-ci.1"}} {
		got := CIVersion(tc[0], tc[1])
		if got != tc[2] {
			t.Errorf("CIVersion(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
		if tc[0] != "" && MacVersion(got) == MacVersion(tc[0]) {
			t.Errorf("%s does not sort above %s for Installer", got, tc[0])
		}
	}
	b, _ := os.ReadFile("macos/component.plist")
	if !regexp.MustCompile(`<key>BundleIsVersionChecked</key>\s*<false/>`).Match(b) {
		t.Error("component.plist checks the bundle's version: an older build installed on purpose (a CI build, a downgrade) would leave the newer bundle in place")
	}
}

// TestReleaseNotes: a Release's text says what a person needs (issue 64,
// M3): which macOS, that the package is universal, how to install it and
// what macOS asks, how to uninstall, and the package's SHA-256 as shasum
// wrote it; a file with no SHA-256 is refused.
func TestReleaseNotes(t *testing.T) {
	dir := t.TempDir()
	sum := strings.Repeat("0123456789abcdef", 4)
	f := filepath.Join(dir, "Delta-v1.2.3.pkg.sha256")
	os.WriteFile(f, []byte(sum+"  Delta-v1.2.3.pkg\n"), 0o644)
	out, err := exec.Command("macos/release-notes.sh", "v1.2.3", f).CombinedOutput()
	if err != nil {
		t.Fatalf("release-notes.sh: %v\n%s", err, out)
	}
	for _, want := range []string{"Delta v1.2.3 for macOS 12", "universal", "double-click", "find devices on your local networks", "Notifications",
		`sudo "/Applications/Delta.app/Contents/Resources/uninstall.sh"`, "shasum -a 256 Delta-v1.2.3.pkg", "    " + sum + "\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the release notes lack %q:\n%s", want, out)
		}
	}
	os.WriteFile(f, []byte("\n"), 0o644)
	if out, err := exec.Command("macos/release-notes.sh", "v1.2.3", f).CombinedOutput(); err == nil || !strings.Contains(string(out), "holds no SHA-256") {
		t.Errorf("release-notes.sh on a file with no SHA-256: %v\n%s", err, out)
	}
}
