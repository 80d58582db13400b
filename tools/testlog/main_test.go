package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSummarize runs go test -json on a small module of its own with a
// test that passes, one that skips and one that fails, and reads the
// summary.
func TestSummarize(t *testing.T) {
	dir := t.TempDir()
	write(t, dir+"/go.mod", "module x\n\ngo 1.26\n")
	write(t, dir+"/x_test.go", `package x

import "testing"

func TestPasses(t *testing.T) { t.Log("quiet") }
func TestSkips(t *testing.T)  { t.Skip("macOS configures only 127.0.0.1 on lo0") }
func TestFails(t *testing.T)  { t.Fatal("it broke here") }
`)
	cmd := exec.Command("go", "test", "-json", "./...")
	cmd.Dir = dir
	events, _ := cmd.Output() // fails: one test fails
	var out bytes.Buffer
	failed, err := summarize(bytes.NewReader(events), &out)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v", failed, err)
	}
	s := out.String()
	for _, want := range []string{"--- FAIL: TestFails (x)", "it broke here", "FAIL\tx", "skipped here: 1", "x TestSkips: macOS configures only 127.0.0.1 on lo0"} {
		if !strings.Contains(s, want) {
			t.Errorf("the summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "quiet") {
		t.Errorf("a passing test's output is in the summary:\n%s", s)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
