// Command testlog reads `go test -json` on stdin and prints what a person
// needs from a long run: each package's result, the whole output of every
// test that failed, and at the end the list of tests that were skipped,
// each with the reason it gave. It exits 1 when anything failed (make
// unit uses it where a run must say what it left out, as on macOS).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	failed, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testlog:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// summarize reads the events of r and writes the summary to w; it
// reports whether anything failed.
func summarize(r io.Reader, w io.Writer) (failed bool, err error) {
	out := map[string]*strings.Builder{} // package/test → its output
	var skipped []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if json.Unmarshal(line, &e) != nil || e.Action == "" {
			// Not an event: a build error or a line of make's.
			fmt.Fprintln(w, string(line))
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			b := out[key]
			if b == nil {
				b = &strings.Builder{}
				out[key] = b
			}
			b.WriteString(e.Output)
		case "fail":
			failed = true
			if e.Test != "" {
				fmt.Fprintf(w, "--- FAIL: %s (%s)\n%s", e.Test, e.Package, text(out[key]))
			} else {
				fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n%s", e.Package, e.Elapsed, packageLines(out[key]))
			}
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "build-fail":
			failed = true
		case "pass":
			if e.Test == "" {
				fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
			}
		case "skip":
			if e.Test == "" {
				fmt.Fprintf(w, "?   \t%s\t[no test files]\n", e.Package)
			} else {
				skipped = append(skipped, fmt.Sprintf("%s %s: %s", e.Package, e.Test, reason(out[key])))
			}
		}
		if e.Action == "pass" || e.Action == "fail" || e.Action == "skip" {
			delete(out, key)
		}
	}
	if err := sc.Err(); err != nil {
		return failed, err
	}
	sort.Strings(skipped)
	fmt.Fprintf(w, "\nskipped here: %d\n", len(skipped))
	for _, s := range skipped {
		fmt.Fprintln(w, "  "+s)
	}
	return failed, nil
}

func text(b *strings.Builder) string {
	if b == nil {
		return ""
	}
	return b.String()
}

// packageLines is a failed package's own output, less its per-test lines.
func packageLines(b *strings.Builder) string {
	var keep []string
	for l := range strings.Lines(text(b)) {
		if !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// reason is the reason a skipped test gave: its output less the run and
// result lines.
func reason(b *strings.Builder) string {
	var words []string
	for l := range strings.Lines(text(b)) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		// "file_test.go:12: the reason"
		if i := strings.Index(l, ": "); i > 0 && strings.Contains(l[:i], "_test.go:") {
			l = l[i+2:]
		}
		words = append(words, l)
	}
	if len(words) == 0 {
		return "(no reason given)"
	}
	return strings.Join(words, " ")
}
