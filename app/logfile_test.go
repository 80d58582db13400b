package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogFileRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	l, err := openLogFile(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("a", 39) + "\n" // 40 bytes
	for range 5 {
		if _, err := l.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	cur, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + ".1")
	// 40+40 fit; the third rotates; 40+40 again; the fifth rotates.
	if len(cur) != 40 || len(old) != 80 {
		t.Fatalf("after five 40-byte lines with a 100-byte bound: %d bytes in the log, %d in .1; want 40 and 80", len(cur), len(old))
	}
	for _, name := range []string{path, path + ".1"} {
		if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", name, fi.Mode(), err)
		}
	}
	// Reopening keeps appending and counts what is there.
	l, err = openLogFile(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	l.Write([]byte(line))
	l.Close()
	if cur, _ := os.ReadFile(path); len(cur) != 80 {
		t.Errorf("after reopening and one more line: %d bytes, want 80", len(cur))
	}
}
