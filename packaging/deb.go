package packaging

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// The .deb is built by BuildDeb alone, for make deb and for its test, so
// that what lintian reads in make package-check is what a person installs.

// DebGoFlags are the flags of the .deb's binary: stripped (-s -w) and a
// position-independent executable, as Debian's hardening asks (lintian's
// unstripped-binary-or-object and hardening-no-pie).
func DebGoFlags(version string) []string {
	return []string{"-trimpath", "-buildmode=pie", "-ldflags", "-s -w -X main.version=" + version}
}

// BuildDeb builds bin/delta's .deb for arch from the module at repo into
// out (a folder), and returns its path: the binary (DebGoFlags), the tree
// (StageDeb, with Depends from dpkg-shlibdeps, the copyright of every
// module compiled in, the changelog and the man page), then dpkg-deb.
func BuildDeb(repo, out, version, arch string) (string, error) {
	work, err := os.MkdirTemp("", "delta-deb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "delta")
	build := exec.Command("go", append(append([]string{"build"}, DebGoFlags(version)...), "-o", bin, "./app")...)
	build.Dir = repo
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("packaging: go build: %v\n%s", err, b)
	}
	root := filepath.Join(work, "root")
	if err := StageDeb(root, bin, version, arch); err != nil {
		return "", err
	}
	deb := filepath.Join(out, fmt.Sprintf("delta_%s_%s.deb", debVersion(version), arch))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	if b, err := exec.Command("dpkg-deb", "--root-owner-group", "-Zxz", "--build", root, deb).CombinedOutput(); err != nil {
		return "", fmt.Errorf("packaging: dpkg-deb: %v\n%s", err, b)
	}
	return deb, nil
}

// ShlibDepends is the Depends a binary needs, as dpkg-shlibdeps computes
// it from the shared libraries it links ("libc6 (>= 2.34)").
func ShlibDepends(binary string) (string, error) {
	dir, err := os.MkdirTemp("", "delta-shlibdeps-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	// dpkg-shlibdeps reads debian/control and wants the binary where a
	// package build would have installed it.
	inst := filepath.Join(dir, "debian", "delta", "usr", "bin")
	if err := os.MkdirAll(inst, 0o755); err != nil {
		return "", err
	}
	b, err := os.ReadFile(binary)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(inst, "delta"), b, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "debian", "control"), []byte("Source: delta\n\nPackage: delta\nArchitecture: any\n"), 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command("dpkg-shlibdeps", "-O", "-edebian/delta/usr/bin/delta")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("packaging: dpkg-shlibdeps (Debian's dpkg-dev): %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	for l := range strings.Lines(string(outb)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "shlibs:Depends="); ok && v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("packaging: dpkg-shlibdeps named no shared library of %s: %q", binary, outb)
}

// compiledModule is a Go module compiled into the binary.
type compiledModule struct{ Path, Version string }

// modulesIn lists the modules compiled into binary (go version -m),
// sorted.
func modulesIn(binary string) ([]compiledModule, error) {
	out, err := exec.Command("go", "version", "-m", binary).Output()
	if err != nil {
		return nil, fmt.Errorf("packaging: go version -m %s: %w", binary, err)
	}
	var mods []compiledModule
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[0] == "dep":
			mods = append(mods, compiledModule{f[1], f[2]})
		case len(f) >= 3 && f[0] == "=>" && len(mods) > 0: // a replacement: the code compiled in is its
			mods[len(mods)-1] = compiledModule{f[1], f[2]}
		}
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	return mods, nil
}

// escapePath is a module path as the module cache spells it: each
// capital letter as "!" and the letter in lower case.
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

var licenseNames = []string{"LICENSE", "LICENSE.txt", "LICENSE.md", "LICENCE", "COPYING", "LICENSE-MIT", "LICENSE.MIT"}

// licenseOf finds a module's licence text in the module cache.
func licenseOf(modcache string, m compiledModule) (string, []byte, error) {
	dir := filepath.Join(modcache, escapePath(m.Path)+"@"+m.Version)
	for _, n := range licenseNames {
		if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
			return n, b, nil
		}
	}
	return "", nil, fmt.Errorf("packaging: no licence file in %s (looked for %v): the .deb's copyright file cannot name %s's terms", dir, licenseNames, m.Path)
}

// licenseKind names a licence text's kind, for the summary; the text
// itself follows it.
func licenseKind(text []byte) string {
	t := string(text)
	switch {
	case strings.Contains(t, "Apache License") && strings.Contains(t, "Version 2.0"):
		return "Apache-2.0"
	case strings.Contains(t, "Mozilla Public License") && strings.Contains(t, "2.0"):
		return "MPL-2.0"
	case strings.Contains(t, "Permission is hereby granted, free of charge"):
		return "MIT"
	case strings.Contains(t, "Neither the name") || strings.Contains(t, "neither the name"):
		return "BSD-3-Clause"
	case strings.Contains(t, "Redistribution and use in source and binary forms"):
		return "BSD-2-Clause"
	case strings.Contains(t, "Permission to use, copy, modify, and/or distribute") || strings.Contains(t, "Permission to use, copy, modify, and distribute this software for any"):
		return "ISC"
	}
	return "see its text below"
}

// commonLicenses are the licences whose texts Debian keeps in
// /usr/share/common-licenses, by licenseKind.
var commonLicenses = map[string]struct{ name, file, starts string }{
	"Apache-2.0": {"Apache License, Version 2.0", "Apache-2.0", "Apache License"},
	"MPL-2.0":    {"Mozilla Public License, version 2.0", "MPL-2.0", "Mozilla Public License"},
}

var copyrightLine = regexp.MustCompile(`(?m)^\s*Copyright\s.*$`)

// Copyright is /usr/share/doc/delta/copyright for binary: Delta's own
// terms, then each module compiled in with its licence text as the
// module ships it.
func Copyright(binary string) ([]byte, error) {
	mods, err := modulesIn(binary)
	if err != nil {
		return nil, err
	}
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("packaging: go env GOMODCACHE: %w", err)
	}
	modcache := strings.TrimSpace(string(cache))
	var b bytes.Buffer
	b.WriteString(`Delta: lets a person's own computers talk to each other.
Source: https://github.com/delta-roads/delta

Delta itself:
  Copyright 2026 the Delta authors.
  No licence has been chosen yet: all rights are reserved by the authors.

/usr/bin/delta also holds the following Go modules, compiled in. Each is
listed with its version and the licence it ships, whose text follows: in
full, or, for the licences Debian keeps once, by the name of the file in
/usr/share/common-licenses. SQLite (in github.com/mattn/go-sqlite3) is in
the public domain.
`)
	type text struct {
		mod  compiledModule
		name string
		body []byte
	}
	var texts []text
	for _, m := range mods {
		name, body, err := licenseOf(modcache, m)
		if err != nil {
			return nil, err
		}
		holder := "see the licence text"
		if l := copyrightLine.Find(body); l != nil {
			holder = strings.TrimSpace(string(l))
		}
		fmt.Fprintf(&b, "\n  %s %s\n    %s; %s\n", m.Path, m.Version, licenseKind(body), holder)
		texts = append(texts, text{m, name, body})
	}
	for _, t := range texts {
		fmt.Fprintf(&b, "\n\n---- %s %s: %s ----\n\n", t.mod.Path, t.mod.Version, t.name)
		if common, ok := commonLicenses[licenseKind(t.body)]; ok {
			// Debian keeps these texts once (policy 12.5): the module's
			// own words before the licence's are kept.
			if i := bytes.Index(t.body, []byte(common.starts)); i > 0 && len(bytes.TrimSpace(t.body[:i])) > 0 {
				b.Write(bytes.TrimRight(t.body[:i], "\n"))
				b.WriteString("\n\n")
			}
			fmt.Fprintf(&b, "Licensed under the %s; its full text is in /usr/share/common-licenses/%s.", common.name, common.file)
			continue
		}
		b.Write(bytes.TrimRight(t.body, "\n"))
	}
	b.WriteString("\n")
	return b.Bytes(), nil
}

// Changelog is a native package's /usr/share/doc/delta/changelog.gz for
// version, dated at (SOURCE_DATE_EPOCH when set, for a reproducible
// build), compressed with gzip -9n (no name, no time in the header).
func Changelog(version string, at time.Time) ([]byte, error) {
	text := fmt.Sprintf(`delta (%s) unstable; urgency=medium

  * Delta %s. What changed is in the project's history:
    https://github.com/delta-roads/delta/commits

 -- Delta <delta@delta-roads.invalid>  %s
`, debVersion(version), version, at.UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	return gzip9n([]byte(text))
}

func gzip9n(b []byte) ([]byte, error) {
	var out bytes.Buffer
	w, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// buildTime is SOURCE_DATE_EPOCH's time when set, else now.
func buildTime() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Now(), nil
	}
	var sec int64
	if _, err := fmt.Sscan(s, &sec); err != nil {
		return time.Time{}, errors.New("packaging: SOURCE_DATE_EPOCH is not a count of seconds: " + s)
	}
	return time.Unix(sec, 0), nil
}

// ManPage is delta(1) in roff, made from what `delta -h` prints (usage),
// so that it lists the commands the binary has.
func ManPage(usage, version string, at time.Time) ([]byte, error) {
	lines := strings.Split(strings.TrimRight(usage, "\n"), "\n")
	var b strings.Builder
	esc := func(s string) string {
		s = strings.ReplaceAll(s, `\`, `\e`)
		s = strings.ReplaceAll(s, "-", `\-`)
		if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
			s = `\&` + s
		}
		return s
	}
	fmt.Fprintf(&b, ".TH DELTA 1 %q %q \"User Commands\"\n", at.UTC().Format("2006-01-02"), "delta "+version)
	b.WriteString(".SH NAME\ndelta \\- carry an app's requests to the person's other computers, writes at most once\n")
	i := 0
	// The description: the lines before "usage:".
	var desc []string
	for ; i < len(lines) && !strings.HasPrefix(lines[i], "usage:"); i++ {
		if strings.TrimSpace(lines[i]) != "" {
			desc = append(desc, esc(strings.TrimSpace(lines[i])))
		}
	}
	if i == len(lines) {
		return nil, errors.New("packaging: delta -h printed no usage line")
	}
	b.WriteString(".SH SYNOPSIS\n.B delta\n[\\fIcommand\\fR] [\\fIflags\\fR] [\\fIarguments\\fR]\n")
	b.WriteString(".SH DESCRIPTION\n" + strings.Join(desc, "\n") + "\n")
	for ; i < len(lines) && strings.TrimSpace(lines[i]) != "commands:"; i++ {
	}
	if i == len(lines) {
		return nil, errors.New("packaging: delta -h listed no commands")
	}
	b.WriteString(".SH COMMANDS\n")
	i++
	n := 0
	// A command is "  NAME ARGS" with its summary on the next line, indented
	// further, or "  NAME SUMMARY" on one line when it takes no arguments.
	for ; i < len(lines) && strings.HasPrefix(lines[i], "  ") && !strings.HasPrefix(lines[i], "   "); i++ {
		f := strings.Fields(lines[i])
		fmt.Fprintf(&b, ".TP\n.B %s", esc(f[0]))
		summary := strings.Join(f[1:], " ")
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "   ") {
			if len(f) > 1 {
				fmt.Fprintf(&b, " %s", esc(strings.Join(f[1:], " ")))
			}
			i++
			summary = strings.TrimSpace(lines[i])
		}
		fmt.Fprintf(&b, "\n%s\n", esc(summary))
		n++
	}
	if n == 0 {
		return nil, errors.New("packaging: delta -h listed no commands")
	}
	// The rest: paragraphs; the one on exit codes is its own section.
	var para []string
	flush := func() {
		if len(para) == 0 {
			return
		}
		if strings.TrimSpace(para[0]) == "exit codes:" {
			// "  N  meaning", each continuation line indented under the
			// meaning (six spaces).
			b.WriteString(".SH \"EXIT STATUS\"\n")
			for _, l := range para[1:] {
				code, meaning, _ := strings.Cut(strings.TrimSpace(l), " ")
				if !strings.HasPrefix(l, "      ") && code != "" && strings.Trim(code, "0123456789") == "" {
					fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", code, esc(strings.TrimSpace(meaning)))
				} else {
					b.WriteString(esc(strings.TrimSpace(l)) + "\n")
				}
			}
			para = nil
			return
		}
		for i := range para {
			para[i] = strings.TrimSpace(para[i])
		}
		b.WriteString(".PP\n" + esc(strings.Join(para, "\n")) + "\n")
		para = nil
	}
	for ; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "" {
			flush()
			continue
		}
		para = append(para, lines[i])
	}
	flush()
	b.WriteString(`.SH FILES
.TP
.I ~/.local/state/delta
the state folder (or $XDG_STATE_HOME/delta, or DELTA_STATE_DIR): the journal delta.db, config.json, this computer's identity and the logs
.TP
.I /usr/lib/systemd/user/delta.service
Delta without a tray, for a computer with no desktop: systemctl \-\-user enable \-\-now delta
.SH "SEE ALSO"
/usr/share/doc/delta, and the project's README: https://github.com/delta\-roads/delta
`)
	return gzip9n([]byte(b.String()))
}
