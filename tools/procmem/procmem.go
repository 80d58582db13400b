// Package procmem reads a process's memory from Linux's /proc, for the
// tests and the benchmark that measure Delta's (make bench, the big
// transfers' peak RSS), and for an idle Delta's own look at whether to
// trim (app/trim.go).
package procmem

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// RSS is pid's resident memory (VmRSS) in bytes; 0 when unknown (no
// /proc, or the process is gone).
func RSS(pid int) int64 { return Field(pid, "VmRSS") }

// Field is one of pid's memory fields in /proc/PID/status, in bytes
// (VmRSS; RssAnon, its own memory; RssFile, the pages of files it maps,
// its program's among them, shared with every process that maps them);
// 0 when unknown.
func Field(pid int, name string) int64 { return field(fmt.Sprintf("/proc/%d/status", pid), name) }

// Rollup is one of pid's fields in /proc/PID/smaps_rollup (its mappings
// summed), in bytes, such as FilePmdMapped (the pages of files it maps in
// 2 MB pieces); 0 when unknown.
func Rollup(pid int, name string) int64 {
	return field(fmt.Sprintf("/proc/%d/smaps_rollup", pid), name)
}

func field(path, name string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
