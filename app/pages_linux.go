package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// dropProgramPages unmaps the pages of Delta's own program that are
// mapped read-only (its code and read-only data; never its writable data)
// and asks the kernel to map them again in small pages only, without
// reading ahead (MADV_NOHUGEPAGE, MADV_RANDOM): the next use of each maps
// it again from the page cache, with its neighbours that are there. With
// evict, it then also drops the program's pages that nothing maps any more
// from the page cache (POSIX_FADV_DONTNEED on the program's file), so that
// what is used again is read again, a page at a time. It returns how many
// bytes of the program it unmapped.
//
// Why: once started, a Delta uses a small part of its program (Tailscale's
// code and tables are most of it), but Linux had nearly all of it mapped,
// and so counted as Delta's resident memory: 32–35 MB of a 49 MB idle
// Delta (docs/benchmarks.md, "The idle Delta's program"). A program just
// written to disk, as by an install, is in the page cache in large folios
// (up to 2 MiB each, on ext4 and XFS), and Linux maps such a folio whole
// at the first use of any of its pages (here, Linux 6.18: after unmapping
// alone, 27.5 of the 34.6 MB came back within seconds of idling), so the
// first drop evicts them too (8–11 MB came back). Without MADV_RANDOM
// each page read again brings its neighbours with it, 128 KiB: the
// program's pages grew back from 20 to 29 MB between drops, against 16 to
// 23 MB with it. The cost is the first use of a part of the program after
// the first drop, read from disk a page at a time: the first read through
// a static pair idle until then took 17 ms (a fresh pair's first: 6 ms),
// the next 4 ms. Other processes that map the same file (another user's
// Delta) keep the pages they map: the kernel evicts only pages nothing
// maps.
func dropProgramPages(evict bool) (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("dropping the program's pages: %w", err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("dropping the program's pages: %w", err)
	}
	ms := programMappings(smaps, exe)
	var f *os.File
	if evict {
		if f, err = os.Open("/proc/self/exe"); err != nil {
			return 0, fmt.Errorf("dropping the program's pages from the page cache: %w", err)
		}
		defer f.Close()
	}
	// Evicting takes two rounds: the pages that this very code maps again
	// between unmapping and evicting stay in their large folios the first
	// time (measured: 12.8 MB of the program resident after one round,
	// 10.9 after two).
	rounds := 1
	if evict {
		rounds = 2
	}
	var dropped int64
	for round := range rounds {
		dropped = 0
		for _, m := range ms {
			n := m.end - m.start
			if round == 0 {
				// EINVAL: a kernel without transparent huge pages, which
				// maps nothing in 2 MB pieces anyway.
				if err := madvise(m.start, n, unix.MADV_NOHUGEPAGE); err != nil && err != unix.EINVAL {
					return 0, fmt.Errorf("dropping the program's pages at %#x: MADV_NOHUGEPAGE: %w", m.start, err)
				}
				if err := madvise(m.start, n, unix.MADV_RANDOM); err != nil {
					return 0, fmt.Errorf("dropping the program's pages at %#x: MADV_RANDOM: %w", m.start, err)
				}
			}
			if err := madvise(m.start, n, unix.MADV_DONTNEED); err != nil {
				return 0, fmt.Errorf("dropping the program's pages at %#x: MADV_DONTNEED: %w", m.start, err)
			}
			dropped += int64(n)
		}
		if f != nil && dropped > 0 {
			if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
				return dropped, fmt.Errorf("dropping the program's pages from the page cache: POSIX_FADV_DONTNEED: %w", err)
			}
		}
	}
	return dropped, nil
}

func madvise(start, n uintptr, advice int) error {
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, start, n, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}

// mapping is an address range of /proc/self/smaps.
type mapping struct{ start, end uintptr }

// programMappings are the mappings of smaps (/proc/PID/smaps) that map
// the file at path (as /proc/PID/exe names it, " (deleted)" and all)
// read-only and privately, and hold no private copy of any page: a
// program's code and read-only data. A writable mapping (its data), or
// a read-only one with pages written before it was made so (the
// dynamic linker's relocations, RELRO), is never one of them: unmapped,
// those would read as the file's bytes again. Nor is a shared one.
func programMappings(smaps []byte, path string) []mapping {
	var out []mapping
	var cur mapping
	take := false
	for line := range bytes.Lines(smaps) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		if m, perms, p, ok := smapsHeader(line); ok {
			cur, take = m, p == path && path != "" && len(perms) == 4 && perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p'
			continue
		}
		if !take {
			continue
		}
		// "Anonymous:" is the mapping's private copies, in kB; it comes
		// after the header and before the next one.
		if v, ok := bytes.CutPrefix(line, []byte("Anonymous:")); ok {
			take = false
			if string(bytes.TrimSpace(v)) == "0 kB" {
				out = append(out, cur)
			}
		}
	}
	return out
}

// smapsHeader reads a mapping's first line in smaps: start-end perms
// offset major:minor inode path, the path after the fifth run of spaces
// (it may hold spaces itself). ok is false for any other line.
func smapsHeader(line []byte) (m mapping, perms []byte, path string, ok bool) {
	rest := line
	var f [5][]byte
	for i := range f {
		rest = bytes.TrimLeft(rest, " ")
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			if i < 4 { // a field's line ("Rss: 4 kB") has fewer parts
				return mapping{}, nil, "", false
			}
			f[i], rest = rest, nil // no path
			break
		}
		f[i], rest = rest[:j], rest[j:]
	}
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return mapping{}, nil, "", false
	}
	s, err1 := strconv.ParseUint(string(lo), 16, 64)
	e, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return mapping{}, nil, "", false
	}
	return mapping{uintptr(s), uintptr(e)}, f[1], string(bytes.TrimLeft(rest, " ")), true
}
