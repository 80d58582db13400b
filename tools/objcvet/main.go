// Command objcvet checks the syntax and types of Delta's macOS C and
// Objective-C without a Mac: every .m file and every darwin cgo preamble
// goes through clang -fsyntax-only for arm64 and x86_64 macOS 12, against
// the stub headers in tools/objcvet/sdk (only the Apple API Delta uses,
// copied from Apple's documentation). cgo's _cgo_export.h is made from the
// package's //export functions. On a Mac it checks against the real SDK
// instead (xcrun --show-sdk-path). make vet runs it.
//
//	go run ./tools/objcvet [-clang PATH] [ROOT]
//
// It exits 1 naming each file clang refused, and 0 with a note when there
// is no clang (Debian: apt-get install clang; make deps does it as root).
// What it cannot prove: that the stubs match the SDK, that the code links,
// or that it behaves (tools/objcvet/sdk/README.md).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"go/build/constraint"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
)

func main() {
	clang := flag.String("clang", "", "the clang to run (default: clang, else clang-14)")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	cc := *clang
	if cc == "" {
		for _, c := range []string{"clang", "clang-14"} {
			if p, err := exec.LookPath(c); err == nil {
				cc = p
				break
			}
		}
	}
	if cc == "" {
		fmt.Println("objcvet: no clang: the macOS code's syntax is not checked here (Debian: apt-get install clang; make deps does it as root)")
		return
	}
	units, err := findUnits(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "objcvet:", err)
		os.Exit(2)
	}
	failed := 0
	for _, u := range units {
		if err := u.check(cc, root); err != nil {
			fmt.Fprintf(os.Stderr, "objcvet: %s:\n%v\n", u.name, err)
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "objcvet: clang refused %d of %d files of Delta's macOS code\n", failed, len(units))
		os.Exit(1)
	}
	fmt.Printf("objcvet: %d files of macOS C and Objective-C pass clang -fsyntax-only (arm64, x86_64)\n", len(units))
}

// unit is one thing clang checks: a .m file, or a Go file's preamble.
type unit struct {
	name   string // as the person knows it: ui/notify_darwin.m, netwatch/media_darwin.go (preamble)
	dir    string // the package's folder, for its _cgo_export.h
	source string
	objc   bool
}

var exportRe = regexp.MustCompile(`(?m)^//export (\w+)\s*\nfunc (\w+)\(([^)]*)\)`)

// findUnits walks root for .m files and darwin Go files that import "C".
func findUnits(root string) ([]unit, error) {
	var units []unit
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "sdk" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case strings.HasSuffix(path, ".m"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			units = append(units, unit{name: rel, dir: filepath.Dir(path), source: string(b), objc: true})
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			pre, ok := preamble(string(b))
			if !ok || !forDarwin(string(b)) {
				return nil
			}
			units = append(units, unit{name: rel + " (cgo preamble)", dir: filepath.Dir(path), source: stripCgo(pre), objc: strings.Contains(pre, "-x objective-c")})
		}
		return nil
	})
	sort.Slice(units, func(i, j int) bool { return units[i].name < units[j].name })
	return units, err
}

// preamble returns the comment just before import "C".
func preamble(src string) (string, bool) {
	i := strings.Index(src, "\nimport \"C\"")
	if i < 0 {
		return "", false
	}
	head := strings.TrimRight(src[:i], " \t\n")
	if !strings.HasSuffix(head, "*/") {
		return "", true // import "C" without a preamble
	}
	start := strings.LastIndex(head, "/*")
	if start < 0 {
		return "", false
	}
	return head[start+2 : len(head)-2], true
}

// forDarwin reports whether a Go file builds for darwin with cgo.
func forDarwin(src string) bool {
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "package ") {
			break
		}
		if constraint.IsGoBuild(line) {
			expr, err := constraint.Parse(line)
			if err != nil {
				return false
			}
			return expr.Eval(func(tag string) bool { return tag == "darwin" || tag == "cgo" || tag == "unix" })
		}
	}
	return false
}

// stripCgo removes the #cgo lines, which only cgo reads.
func stripCgo(pre string) string {
	var out []string
	for l := range strings.Lines(pre) {
		if strings.HasPrefix(strings.TrimSpace(l), "#cgo ") {
			out = append(out, "\n") // keep the line numbers
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}

// cType maps a cgo parameter type to C.
func cType(goType string) (string, error) {
	switch strings.TrimSpace(goType) {
	case "*C.char":
		return "char*", nil
	case "C.int":
		return "int", nil
	case "C.long":
		return "long", nil
	case "unsafe.Pointer":
		return "void*", nil
	}
	return "", fmt.Errorf("objcvet: no C type for the exported parameter type %q (add it to cType)", goType)
}

// exportHeader is _cgo_export.h for the Go files in dir: a prototype per
// //export function (parameters only; Delta's exports return nothing).
func exportHeader(dir string) (string, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var b strings.Builder
	b.WriteString("#pragma once\n")
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if !forDarwin(string(src)) {
			continue
		}
		for _, m := range exportRe.FindAllStringSubmatch(string(src), -1) {
			if m[1] != m[2] {
				return "", fmt.Errorf("%s: //export %s names another function (%s)", f, m[1], m[2])
			}
			params, err := cParams(m[3])
			if err != nil {
				return "", fmt.Errorf("%s: %s: %w", f, m[1], err)
			}
			fmt.Fprintf(&b, "extern void %s(%s);\n", m[1], params)
		}
	}
	return b.String(), nil
}

// cParams is a Go parameter list as C's: "action, id *C.char, n C.int"
// is "char*, char*, int" (names may share a type); "" is "void".
func cParams(list string) (string, error) {
	var out []string
	pending := 0
	for _, p := range strings.Split(list, ",") {
		fields := strings.Fields(p)
		switch len(fields) {
		case 0:
			continue
		case 1: // a name whose type comes after the next
			pending++
			continue
		}
		ct, err := cType(strings.Join(fields[1:], " "))
		if err != nil {
			return "", err
		}
		for range pending + 1 {
			out = append(out, ct)
		}
		pending = 0
	}
	if pending > 0 {
		return "", fmt.Errorf("parameters %q end without a type", list)
	}
	if len(out) == 0 {
		return "void", nil
	}
	return strings.Join(out, ", "), nil
}

// check runs clang on u for both of the Mac's architectures.
func (u unit) check(cc, root string) error {
	tmp, err := os.MkdirTemp("", "objcvet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	hdr, err := exportHeader(u.dir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "_cgo_export.h"), []byte(hdr), 0o644); err != nil {
		return err
	}
	ext, lang := ".c", "c"
	if u.objc {
		ext, lang = ".m", "objective-c"
	}
	file := filepath.Join(tmp, "unit"+ext)
	if err := os.WriteFile(file, []byte(u.source), 0o644); err != nil {
		return err
	}
	var errs []error
	for _, target := range []string{"arm64-apple-macos12", "x86_64-apple-macos12"} {
		args := []string{"-fsyntax-only", "-x", lang, "-target", target, "-fblocks", "-Wno-unused-function", "-I", tmp}
		if u.objc {
			args = append(args, "-fobjc-arc")
		}
		if runtime.GOOS == "darwin" {
			sdk, err := exec.Command("xcrun", "--show-sdk-path").Output()
			if err != nil {
				return fmt.Errorf("xcrun --show-sdk-path: %v", err)
			}
			// The real SDK's warnings (a deprecation) are the real
			// build's business: only errors fail here.
			args = append(args, "-isysroot", strings.TrimSpace(string(sdk)))
		} else {
			// Against the stubs every warning is an error: a pointer of
			// the wrong type is a mistake.
			args = append(args, "-Werror", "-nostdlibinc", "-isystem", filepath.Join(root, "tools", "objcvet", "sdk"))
		}
		out, err := exec.Command(cc, append(args, file)...).CombinedOutput()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s", target, strings.ReplaceAll(string(out), file, u.name)))
		}
	}
	return errors.Join(errs...)
}
