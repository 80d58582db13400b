package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The house's measures (the fourth architecture review, issue 35), held so
// that they stay: tools/arch-numbers prints them.

// goFiles lists the non-test Go files under dir (the module's tree less
// build output and hidden folders).
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != dir || d.Name() == "testdata" || d.Name() == "bin" || d.Name() == "build" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPackageSizes: no package holds more than 2,500 lines of non-test Go.
func TestPackageSizes(t *testing.T) {
	lines := map[string]int{}
	for _, p := range goFiles(t, "..") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines[filepath.Dir(p)] += strings.Count(string(b), "\n")
	}
	if len(lines) < 10 {
		t.Fatalf("found only %d packages", len(lines))
	}
	for dir, n := range lines {
		if n > 2500 {
			t.Errorf("%s holds %d lines of non-test Go, over 2,500: give a concern its own room", dir, n)
		}
	}
}

// TestGatewayStaysWiring: *gateway.Gateway keeps config, lifecycle, events
// and wiring (at most 20 methods of its own); attempts' results are made
// by peerclient alone; the kit and the command line spell the local API's
// paths with localapi's constants only.
func TestGatewayStaysWiring(t *testing.T) {
	methods := 0
	for _, p := range goFiles(t, "../gateway") {
		if filepath.Dir(p) != filepath.Join("..", "gateway") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil {
				if star, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok {
					if id, ok := star.X.(*ast.Ident); ok && id.Name == "Gateway" {
						methods++
					}
				}
			}
		}
	}
	if methods == 0 || methods > 20 {
		t.Errorf("*Gateway has %d methods of its own; it keeps at most 20 (config, lifecycle, events, wiring)", methods)
	}
	for _, p := range goFiles(t, "../gateway") {
		if strings.Contains(p, string(filepath.Separator)+"peerclient"+string(filepath.Separator)) {
			continue
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "peerclient.Result{") {
			t.Errorf("%s builds a peerclient.Result by hand; peerclient's constructors make them", p)
		}
	}
	// One reporter of road health: of the carriers and the faces, only
	// peerclient (the transport) tells the router what an exchange proved
	// about a road, or empties a pool.
	for _, wing := range []string{"../gateway/carry", "../gateway/face"} {
		for _, p := range goFiles(t, wing) {
			if strings.Contains(p, string(filepath.Separator)+"peerclient"+string(filepath.Separator)) {
				continue
			}
			b, _ := os.ReadFile(p)
			for _, reach := range []string{"Router.Report(", "Router.Invalidate(", "roads.Suspecter", ".CloseIdle(", ".DropRoad("} {
				if strings.Contains(string(b), reach) {
					t.Errorf("%s calls %s: only peerclient reports a road's health; ask it", p, reach)
				}
			}
		}
	}
	for _, dir := range []string{"../kit", "."} {
		for _, p := range goFiles(t, dir) {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), `"/v1/`) {
				t.Errorf("%s spells a local API path; localapi's path constants do", p)
			}
		}
	}
}

// floors are the house's wings, lowest first (docs/architecture.md): a
// package under gateway/<wing>/ imports only its own wing and those below
// it; gateway.go sits above face and below the modes that plug into it.
var floors = []string{"wire", "net", "roads", "state", "carry", "face", "", "modes", "gatewaytest"}

// wingOf names the wing of a folder or import path under gateway/ ("" for
// the gateway package itself) and whether it is under gateway/ at all.
func wingOf(p string) (string, bool) {
	p = filepath.ToSlash(p)
	i := strings.Index(p, "gateway")
	if i < 0 || (i > 0 && p[i-1] != '/') {
		return "", false
	}
	rest := p[i+len("gateway"):]
	if rest == "" {
		return "", true
	}
	if rest[0] != '/' {
		return "", false
	}
	w, _, _ := strings.Cut(rest[1:], "/")
	return w, true
}

func floorOf(t *testing.T, wing string) int {
	for i, w := range floors {
		if w == wing {
			return i
		}
	}
	t.Fatalf("gateway/%s is not a wing of the house: add it to floors and to docs/architecture.md", wing)
	return -1
}

// TestFloors: the drawing as a test. No package in a wing imports a
// higher wing; the local API's wire (api/) imports nothing of Delta's but
// itself; netwatch and the kit import nothing under gateway/.
func TestFloors(t *testing.T) {
	const mod = "github.com/delta-roads/delta/"
	checked := 0
	for _, p := range goFiles(t, "..") {
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		dir, _ := filepath.Rel("..", filepath.Dir(p))
		dir = filepath.ToSlash(dir)
		for _, im := range f.Imports {
			path := strings.Trim(im.Path.Value, `"`)
			if !strings.HasPrefix(path, mod) {
				continue
			}
			path = strings.TrimPrefix(path, mod)
			checked++
			top, _, _ := strings.Cut(dir, "/")
			switch {
			case top == "api" && !strings.HasPrefix(path, "api/"):
				t.Errorf("%s imports %s: the local API's wire imports nothing of Delta's but api/", p, path)
			case (top == "netwatch" || top == "kit") && strings.HasPrefix(path, "gateway"):
				t.Errorf("%s imports %s: %s imports nothing under gateway/", p, path, top)
			case top == "gateway":
				from, _ := wingOf(dir)
				to, under := wingOf(path)
				if under && floorOf(t, to) > floorOf(t, from) {
					t.Errorf("%s (wing %q) imports %s (wing %q), a higher floor: move the shared part down", p, from, path, to)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d of Delta's imports", checked)
	}
}
