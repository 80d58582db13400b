package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: a .m file and a darwin preamble that are right pass; a
// misspelt selector, a pointer of the wrong type, a missing struct member
// and an exported function called with the wrong arguments are each
// refused, naming the file; Linux-only files are not checked.
func TestCheck(t *testing.T) {
	cc, err := exec.LookPath("clang")
	if err != nil {
		if cc, err = exec.LookPath("clang-14"); err != nil {
			t.Skip("clang is not installed (Debian: apt-get install clang; make deps does it as root)")
		}
	}
	sdkRoot, _ := filepath.Abs("../..")
	root := t.TempDir()
	files := map[string]string{
		"good/a_darwin.m": `#import <Foundation/Foundation.h>
#include "_cgo_export.h"
void f(void) { @autoreleasepool { NSString *s = [NSString stringWithUTF8String:"x"]; deltaDone((char *)[s UTF8String], 1); } }
`,
		"good/a_darwin.go": "//go:build darwin && cgo\n\npackage good\n\n/*\n#cgo CFLAGS: -x objective-c -fobjc-arc\n#import <Foundation/Foundation.h>\nstatic void g(void) { NSLog(@\"%@\", [[NSUUID UUID] UUIDString]); }\n*/\nimport \"C\"\n\n//export deltaDone\nfunc deltaDone(what *C.char, n C.int) {}\n",
		"good/b_linux.go":  "//go:build linux\n\npackage good\n\n/*\nthis is not C at all\n*/\nimport \"C\"\n",
		"bad/selector_darwin.m": `#import <Foundation/Foundation.h>
void f(void) { NSString *s = [NSString stringWithUTF9String:"x"]; (void)s; }
`,
		"bad/pointer_darwin.m": `#import <Foundation/Foundation.h>
#include <string.h>
void f(char *buf) { NSString *s = @"x"; strlcpy(buf, s, 4); }
`,
		"bad/member_darwin.go": "//go:build darwin\n\npackage bad\n\n/*\n#include <net/if.h>\nstatic int h(struct ifreq *r) { return (int)r->ifr_ifru.ifru_functionaltype; }\n*/\nimport \"C\"\n",
		"bad/export_darwin.m":  "#include \"_cgo_export.h\"\nvoid f(void) { deltaCalled(\"x\"); }\n",
		"bad/export_darwin.go": "//go:build darwin && cgo\n\npackage bad\n\nimport \"C\"\n\n//export deltaCalled\nfunc deltaCalled(a, b *C.char) {}\n",
	}
	for name, src := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The stubs are the repository's.
	os.Symlink(filepath.Join(sdkRoot, "tools"), filepath.Join(root, "tools"))
	units, err := findUnits(root)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, u := range units {
		if err := u.check(cc, root); err != nil {
			got[u.name] = err.Error()
		} else {
			got[u.name] = ""
		}
	}
	want := map[string]string{
		"good/a_darwin.m":                     "",
		"good/a_darwin.go (cgo preamble)":     "",
		"bad/selector_darwin.m":               "stringWithUTF9String",
		"bad/pointer_darwin.m":                "strlcpy",
		"bad/member_darwin.go (cgo preamble)": "ifru_functionaltype",
		"bad/export_darwin.m":                 "deltaCalled",
		"bad/export_darwin.go (cgo preamble)": "",
	}
	for name, says := range want {
		res, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s was not checked (checked: %v)", name, got)
		case says == "" && res != "":
			t.Errorf("%s was refused:\n%s", name, res)
		case says != "" && !strings.Contains(res, says):
			t.Errorf("%s: %q, want a refusal naming %q", name, res, says)
		}
	}
	if _, ok := got["good/b_linux.go (cgo preamble)"]; ok {
		t.Error("a Linux-only file was checked as macOS code")
	}
}
