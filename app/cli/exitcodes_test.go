package cli

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestExitCodeTables: the exit codes are one table. delta -h prints
// ExitCodes, and the README's and docs/protocol.md's tables say exactly
// the same codes with the same meanings, in order; every code is there
// once.
func TestExitCodeTables(t *testing.T) {
	seen := map[int]bool{}
	for i, x := range ExitCodes {
		if x.Code != i || seen[x.Code] {
			t.Fatalf("ExitCodes[%d] is code %d: the table must list 0, 1, 2, … once each", i, x.Code)
		}
		seen[x.Code] = true
	}
	if len(ExitCodes) != ExitNotFound+1 {
		t.Fatalf("ExitCodes has %d codes, the last constant is %d", len(ExitCodes), ExitNotFound)
	}
	row := regexp.MustCompile(`^\| (\d+) \| (.*) \|$`)
	for _, doc := range []string{"../../README.md", "../../docs/protocol.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, table, ok := strings.Cut(string(b), "| code | meaning |\n|---|---|\n")
		if !ok {
			t.Errorf("%s has no exit code table", doc)
			continue
		}
		var got []string
		for _, l := range strings.Split(table, "\n") {
			m := row.FindStringSubmatch(l)
			if m == nil {
				break
			}
			got = append(got, m[1]+" "+m[2])
		}
		var want []string
		for _, x := range ExitCodes {
			want = append(want, strconv.Itoa(x.Code)+" "+x.Meaning)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s's exit code table differs from cli.ExitCodes:\n%s\nwant:\n%s", doc, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	var help bytes.Buffer
	(&Program{}).Usage(&help)
	for _, x := range ExitCodes {
		if !strings.Contains(help.String(), fmt.Sprintf("\n  %2d  ", x.Code)) {
			t.Errorf("delta -h does not list exit code %d", x.Code)
		}
	}
}
