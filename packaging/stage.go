package packaging

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/delta-roads/delta/assets"
)

//go:embed macos linux
var files embed.FS

// Identifiers of the macOS package.
const (
	BundleID  = "com.delta-roads.delta"
	PackageID = "com.delta-roads.delta.pkg"
	// AgentPlist is where the LaunchAgent goes.
	AgentPlist = "Library/LaunchAgents/com.delta-roads.delta.plist"
	// AppBinary is the program inside the bundle the agent runs.
	AppBinary = "Applications/Delta.app/Contents/MacOS/Delta"
)

// Entry is one file of a staged payload: its path (slash-separated,
// relative to the payload root) and mode.
type Entry struct {
	Path string
	Mode fs.FileMode
}

// MacPayload is the macOS package's payload, as pkgbuild installs it at /.
var MacPayload = []Entry{
	{"Applications/Delta.app/Contents/Info.plist", 0o644},
	{AppBinary, 0o755},
	{"Applications/Delta.app/Contents/Resources/Delta.icns", 0o644},
	{"Applications/Delta.app/Contents/Resources/uninstall.sh", 0o755},
	{AgentPlist, 0o644},
}

// CodeResources is what codesign writes into the bundle it signs, ad hoc
// included: the seal of the bundle's other files. build.sh always signs
// Delta.app (with a Developer ID when it has one, else ad hoc), so every
// real package holds it (issue 64, M2: the payload check wanted the five
// staged files alone, and failed on every real package).
const CodeResources = "Applications/Delta.app/Contents/_CodeSignature/CodeResources"

// SignedMacPayload is MacPayload as the package carries it: the bundle
// signed.
var SignedMacPayload = append(append([]Entry{}, MacPayload...), Entry{CodeResources, 0o644})

// MacScripts are the package's scripts (pkgbuild --scripts).
var MacScripts = []Entry{{"preinstall", 0o755}, {"postinstall", 0o755}}

// DebPayload is the .deb's tree (DEBIAN/control and conffiles included).
var DebPayload = append([]Entry{
	{"DEBIAN/control", 0o644},
	{"DEBIAN/conffiles", 0o644},
	{"usr/bin/delta", 0o755},
	{"usr/lib/systemd/user/delta.service", 0o644},
	{"etc/xdg/autostart/delta.desktop", 0o644},
	{"usr/share/applications/delta.desktop", 0o644},
	{"usr/share/doc/delta/copyright", 0o644},
	{"usr/share/doc/delta/changelog.gz", 0o644},
	{"usr/share/man/man1/delta.1.gz", 0o644},
	{"usr/share/icons/hicolor/512x512/apps/delta.png", 0o644},
}, hicolorEntries()...)

func hicolorEntries() []Entry {
	var out []Entry
	for _, n := range assets.HicolorSizes {
		out = append(out, Entry{hicolorPath(n), 0o644})
	}
	return out
}

func hicolorPath(n int) string {
	return fmt.Sprintf("usr/share/icons/hicolor/%dx%d/apps/delta.png", n, n)
}

// File returns one of the packaging files ("macos/Info.plist"), with
// @VERSION@ replaced.
func File(name, version string) ([]byte, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("packaging: %w", err)
	}
	return bytes.ReplaceAll(b, []byte("@VERSION@"), []byte(version)), nil
}

// MacVersion makes a build's version one Apple accepts in Info.plist
// (CFBundleShortVersionString, CFBundleVersion) and in pkgbuild: up to
// three period-separated integers. A tag's "v" goes, as does what follows
// the numbers ("v1.2.3-rc1" is 1.2.3); missing parts are 0; "dev" is
// 0.0.0.
func MacVersion(v string) string {
	v = strings.TrimPrefix(v, "v")
	parts := []string{"0", "0", "0"}
	for i, p := range strings.SplitN(v, ".", 3) {
		end := 0
		for end < len(p) && p[end] >= '0' && p[end] <= '9' {
			end++
		}
		if end == 0 {
			break
		}
		parts[i] = strings.TrimLeft(p[:end], "0")
		if parts[i] == "" {
			parts[i] = "0"
		}
		if end < len(p) {
			break // "3-rc1": what follows the number ends the version
		}
	}
	return strings.Join(parts, ".")
}

// CIVersion is the version of an untagged build (the release workflow's
// run number run) after the last release tag lastTag ("v1.2.3", or ""):
// the next patch, marked as a CI build, "1.2.4-ci.57", so that it sorts
// above the release it follows, in Info.plist and pkgbuild
// (MacVersion: 1.2.4) as in people's eyes (issue 37, N8).
func CIVersion(lastTag, run string) string {
	parts := strings.Split(MacVersion(lastTag), ".")
	patch, _ := strconv.Atoi(parts[2])
	return fmt.Sprintf("%s.%s.%d-ci.%s", parts[0], parts[1], patch+1, run)
}

// InfoPlist is the bundle's Info.plist for version (MacVersion: its
// CFBundleShortVersionString) and build, a whole number that grows with
// every build (build.sh: the commits' count), as its CFBundleVersion
// (issue 64, M13: it was the dotted version, the same for every CI build
// after a release and for the next release, so Finder's Get Info and a
// future update feed could not tell them apart).
func InfoPlist(version, build string) ([]byte, error) {
	if build == "" || strings.Trim(build, "0123456789") != "" {
		return nil, fmt.Errorf("packaging: build %q is not a whole number (CFBundleVersion)", build)
	}
	b, err := File("macos/Info.plist", MacVersion(version))
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(b, []byte("@BUILD@"), []byte(build)), nil
}

// StageMac lays out the macOS payload under root (and the scripts under
// scripts) from the built binary (on a Mac, the universal one from lipo),
// for version and build (InfoPlist).
// The bundle's version is MacVersion(version).
func StageMac(root, scripts, binary, version, build string) error {
	info, err := InfoPlist(version, build)
	if err != nil {
		return err
	}
	version = MacVersion(version)
	bin, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("packaging: the delta binary: %w", err)
	}
	big, err := assets.AppIconSized(1024)
	if err != nil {
		return err
	}
	icns, err := ICNS(big)
	if err != nil {
		return err
	}
	contents := map[string]func() ([]byte, error){
		"Applications/Delta.app/Contents/Info.plist": func() ([]byte, error) { return info, nil },
		AppBinary: func() ([]byte, error) { return bin, nil },
		"Applications/Delta.app/Contents/Resources/Delta.icns":   func() ([]byte, error) { return icns, nil },
		"Applications/Delta.app/Contents/Resources/uninstall.sh": func() ([]byte, error) { return File("macos/uninstall.sh", version) },
		AgentPlist: func() ([]byte, error) { return File("macos/com.delta-roads.delta.plist", version) },
	}
	if err := write(root, MacPayload, contents); err != nil {
		return err
	}
	return write(scripts, MacScripts, map[string]func() ([]byte, error){
		"preinstall":  func() ([]byte, error) { return File("macos/scripts/preinstall", version) },
		"postinstall": func() ([]byte, error) { return File("macos/scripts/postinstall", version) },
	})
}

// StageDeb lays out the .deb's tree under root from the built Linux binary
// for arch (Debian's name: amd64, arm64): Depends from dpkg-shlibdeps, the
// copyright of every module compiled in, the changelog, the man page made
// from the binary's own help, the launcher and the icons at the hicolor
// sizes. Debian's hicolor-icon-theme refreshes the icon cache by its
// trigger on /usr/share/icons/hicolor, so the package has no scripts.
func StageDeb(root, binary, version, arch string) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("packaging: the delta binary: %w", err)
	}
	depends, err := ShlibDepends(binary)
	if err != nil {
		return err
	}
	copyright, err := Copyright(binary)
	if err != nil {
		return err
	}
	at, err := buildTime()
	if err != nil {
		return err
	}
	changelog, err := Changelog(version, at)
	if err != nil {
		return err
	}
	usage, err := exec.Command(binary, "-h").CombinedOutput()
	if err != nil {
		return fmt.Errorf("packaging: %s -h: %v\n%s", binary, err, usage)
	}
	man, err := ManPage(string(usage), version, at)
	if err != nil {
		return err
	}
	control := fmt.Sprintf(`Package: delta
Version: %s
Architecture: %s
Maintainer: Delta <delta@delta-roads.invalid>
Depends: %s
Recommends: dbus-user-session
Section: net
Priority: optional
Homepage: https://github.com/delta-roads/delta
Description: lets a person's own computers talk to each other
 Delta runs on each of a person's computers. Apps speak only to their own
 Delta on loopback; it carries their requests to the person's other
 computers over the Thunderbolt cable, the home network or the tailnet,
 and sends writes at most once.
`, debVersion(version), arch, depends)
	contents := map[string]func() ([]byte, error){
		"DEBIAN/control":                                 func() ([]byte, error) { return []byte(control), nil },
		"DEBIAN/conffiles":                               func() ([]byte, error) { return []byte("/etc/xdg/autostart/delta.desktop\n"), nil },
		"usr/bin/delta":                                  func() ([]byte, error) { return bin, nil },
		"usr/lib/systemd/user/delta.service":             func() ([]byte, error) { return File("linux/delta.service", version) },
		"etc/xdg/autostart/delta.desktop":                func() ([]byte, error) { return File("linux/delta.desktop", version) },
		"usr/share/applications/delta.desktop":           func() ([]byte, error) { return File("linux/delta-launcher.desktop", version) },
		"usr/share/doc/delta/copyright":                  func() ([]byte, error) { return copyright, nil },
		"usr/share/doc/delta/changelog.gz":               func() ([]byte, error) { return changelog, nil },
		"usr/share/man/man1/delta.1.gz":                  func() ([]byte, error) { return man, nil },
		"usr/share/icons/hicolor/512x512/apps/delta.png": func() ([]byte, error) { return assets.AppIcon(), nil },
	}
	for _, n := range assets.HicolorSizes {
		contents[hicolorPath(n)] = func() ([]byte, error) { return assets.AppIconSized(n) }
	}
	return write(root, DebPayload, contents)
}

// debVersion makes a build's version one dpkg accepts: it must start with
// a digit ("dev" becomes "0~dev").
func debVersion(v string) string {
	v = strings.TrimPrefix(v, "v")
	if v == "" || v[0] < '0' || v[0] > '9' {
		return "0~" + strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".+~", r) {
				return r
			}
			return '.'
		}, v)
	}
	return v
}

func write(root string, entries []Entry, contents map[string]func() ([]byte, error)) error {
	for _, e := range entries {
		get, ok := contents[e.Path]
		if !ok {
			return fmt.Errorf("packaging: no contents for %s", e.Path)
		}
		b, err := get()
		if err != nil {
			return err
		}
		p := filepath.Join(root, filepath.FromSlash(e.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, e.Mode); err != nil {
			return err
		}
		if err := os.Chmod(p, e.Mode); err != nil { // past the umask
			return err
		}
	}
	return nil
}

// Tree lists the files under root with their modes, sorted: what a staged
// payload (or a package read back) holds.
func Tree(root string) ([]Entry, error) {
	var out []Entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, Entry{Path: filepath.ToSlash(rel), Mode: fi.Mode().Perm()})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}
