package main

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestProgramMappings: of a program's mappings in /proc/PID/smaps, only
// its private read-only ones with no page of their own are taken (code,
// read-only data); never its writable data, its relocations made
// read-only (RELRO: pages of its own), a shared mapping, another file, or
// a file whose name only begins like the program's.
func TestProgramMappings(t *testing.T) {
	const path = "/opt/my apps/delta (deleted)"
	m := func(header string, anon int) string {
		return header + "\nSize:               1024 kB\nRss:                 512 kB\nAnonymous:          " +
			strconv.Itoa(anon) + " kB\nFilePmdMapped:         0 kB\nVmFlags: rd ex mr mw me dw sd\n"
	}
	smaps := m("00400000-01000000 r-xp 00000000 fd:01 1234                               /opt/my apps/delta (deleted)", 0) +
		m("01000000-02000000 r--p 00c00000 fd:01 1234                               /opt/my apps/delta (deleted)", 0) +
		m("02000000-02003000 r--p 01c00000 fd:01 1234                               /opt/my apps/delta (deleted)", 4) +
		m("02003000-02100000 rw-p 01c03000 fd:01 1234                               /opt/my apps/delta (deleted)", 136) +
		m("02100000-02200000 r--s 01d00000 fd:01 1234                               /opt/my apps/delta (deleted)", 0) +
		m("02200000-02300000 r--p 00000000 fd:01 99                                 /opt/my apps/delta (deleted) 2", 0) +
		m("02300000-02400000 rw-p 00000000 00:00 0                                  [heap]", 1024) +
		m("7f0000000000-7f0000100000 r-xp 00000000 fd:01 55                         /usr/lib/x86_64-linux-gnu/libc.so.6", 0) +
		m("7f0000100000-7f0000200000 r--p 00000000 00:00 0 ", 0) +
		m("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]", 0)
	got := programMappings([]byte(smaps), path)
	want := []mapping{{0x400000, 0x1000000}, {0x1000000, 0x2000000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("programMappings = %#v, want %#v", got, want)
	}
	if got := programMappings([]byte(smaps), ""); len(got) != 0 {
		t.Errorf("with no program path: %#v, want none", got)
	}
	// A mapping whose lines end before its Anonymous line is not taken.
	cut := "00400000-01000000 r-xp 00000000 fd:01 1234 /opt/my apps/delta (deleted)\nRss: 4 kB\n" + m("7f0000000000-7f0000100000 r-xp 00000000 fd:01 55 /lib/x", 0)
	if got := programMappings([]byte(cut), path); len(got) != 0 {
		t.Errorf("a mapping with no Anonymous line: %#v, want none", got)
	}
}

// aValue is in the test binary's writable data: dropping the program's
// pages must leave it as it was set.
var aValue = []byte("as built")

// TestDropProgramPages drops this test binary's own program pages: its
// code and read-only data are no longer mapped in large pages nor read
// ahead, fewer of them are mapped just after, it still runs, and its
// writable data is kept.
func TestDropProgramPages(t *testing.T) {
	copy(aValue, "as it is")
	before, cachedBefore := programSmaps(t), programCached(t)
	n, err := dropProgramPages(true)
	if err != nil {
		t.Fatal(err)
	}
	after, cachedAfter := programSmaps(t), programCached(t)
	t.Logf("dropped %d MiB of mappings; resident %d KiB (%d KiB in 2 MiB pages), then %d KiB (%d KiB)",
		n>>20, before.rss, before.pmd, after.rss, after.pmd)
	if n == 0 || after.mappings == 0 {
		t.Fatalf("dropped %d bytes of %d mappings of the program", n, after.mappings)
	}
	if after.pmd != 0 {
		t.Errorf("%d KiB still mapped in 2 MiB pages", after.pmd)
	}
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		after.noHuge = after.mappings // a kernel without them: nothing to mark
	}
	if after.noHuge != after.mappings || after.random != after.mappings {
		t.Errorf("of the program's %d read-only mappings, %d are marked for small pages only and %d for no read-ahead", after.mappings, after.noHuge, after.random)
	}
	if after.rss >= before.rss {
		t.Errorf("resident %d KiB of the program before, %d KiB after", before.rss, after.rss)
	}
	// The page cache keeps a large folio that anything maps: a thread
	// that runs between the unmapping and the eviction maps its folios
	// again. On a busy machine (two busy loops beside the test) that can
	// be every folio; Delta drops its pages only when quiet. So the
	// eviction is asked again, a few times, until it takes.
	for i := 0; i < 5 && cachedAfter >= cachedBefore; i++ {
		if _, err := dropProgramPages(true); err != nil {
			t.Fatal(err)
		}
		cachedAfter = programCached(t)
	}
	t.Logf("in the page cache: %d KiB of the program before, %d KiB after", cachedBefore, cachedAfter)
	if cachedAfter >= cachedBefore {
		t.Errorf("%d KiB of the program in the page cache before, %d KiB after: not evicted", cachedBefore, cachedAfter)
	}
	if string(aValue) != "as it is" {
		t.Errorf("the writable data reads %q after, want %q", aValue, "as it is")
	}
	if _, err := dropProgramPages(false); err != nil { // again: nothing breaks
		t.Fatal(err)
	}
}

// programCached is how much of the program's code and read-only data
// is in the page cache, mapped or not (mincore(2) on its mappings), in
// KiB.
func programCached(t *testing.T) int64 {
	t.Helper()
	smaps, exe := readSmaps(t)
	page := uintptr(os.Getpagesize())
	var kib int64
	for _, m := range programMappings(smaps, exe) {
		vec := make([]byte, (m.end-m.start+page-1)/page)
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, m.start, m.end-m.start, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			t.Fatalf("mincore at %#x: %v", m.start, e)
		}
		for _, v := range vec {
			if v&1 != 0 {
				kib += int64(page) / 1024
			}
		}
	}
	return kib
}

// readSmaps is this process's /proc/self/smaps and the path of its
// program.
func readSmaps(t *testing.T) (smaps []byte, exe string) {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	smaps, err = os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	return smaps, exe
}

// smapsFigures are /proc/self/smaps's figures for the program's
// read-only mappings.
type smapsFigures struct {
	mappings, noHuge, random int
	rss, pmd                 int64 // KiB
}

func programSmaps(t *testing.T) smapsFigures {
	t.Helper()
	b, exe := readSmaps(t)
	type one struct {
		rss, pmd, anon int64
		noHuge, random bool
	}
	var all []*one
	var cur *one
	for line := range bytes.Lines(b) {
		fields := strings.Fields(string(line))
		if len(fields) == 0 {
			continue
		}
		if strings.Contains(fields[0], "-") && len(fields) >= 5 { // a mapping's first line
			cur = nil
			if strings.HasSuffix(strings.TrimSpace(string(line)), " "+exe) && len(fields[1]) == 4 && fields[1][1] == '-' {
				cur = &one{}
				all = append(all, cur)
			}
			continue
		}
		if cur == nil {
			continue
		}
		kib := int64(0)
		if len(fields) >= 2 {
			kib, _ = strconv.ParseInt(fields[1], 10, 64)
		}
		switch fields[0] {
		case "Rss:":
			cur.rss = kib
		case "FilePmdMapped:":
			cur.pmd = kib
		case "Anonymous:":
			cur.anon = kib
		case "VmFlags:":
			cur.noHuge = slices.Contains(fields[1:], "nh")
			cur.random = slices.Contains(fields[1:], "rr")
		}
	}
	var f smapsFigures
	for _, m := range all {
		if m.anon != 0 {
			continue // relocations made read-only: left alone
		}
		f.mappings++
		f.rss += m.rss
		f.pmd += m.pmd
		if m.noHuge {
			f.noHuge++
		}
		if m.random {
			f.random++
		}
	}
	return f
}
