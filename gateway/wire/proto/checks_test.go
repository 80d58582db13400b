package proto

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestChecksAsRegexps holds the loops that check a request id, a
// timeout and a name to the regexps they stand for: the same answer for
// every string tried (edges by hand, then 200,000 drawn from the
// characters that matter, with a fixed seed).
func TestChecksAsRegexps(t *testing.T) {
	checks := []struct {
		name string
		re   *regexp.Regexp
		loop func(string) bool
	}{
		{"request id", regexp.MustCompile(`^[A-Za-z0-9._~:-]{1,128}$`), validRequestID},
		{"timeout", regexp.MustCompile(`^[0-9]{1,3}(\.[0-9]{1,3})?$`), validTimeout},
		{"name", regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`), validName},
	}
	tried := []string{"", ".", "..", "a", "-a", "_a", ".a", "a.", "a-", "1", "1.", ".1", "1.5", "10.250", "1000", "1.1000",
		"1..1", "1.1.1", "123.456", "007", "a\n", "a\x00", "é", "a b", "~", ":", "a~b:c",
		strings.Repeat("a", 62), strings.Repeat("a", 63), strings.Repeat("a", 64),
		strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129)}
	const alphabet = "aZ09._~:-/ \n\xff"
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		tried = append(tried, string(b))
	}
	for _, c := range checks {
		for _, s := range tried {
			if got, want := c.loop(s), c.re.MatchString(s); got != want {
				t.Errorf("%s %q: the loop says %v, the regexp %v", c.name, s, got, want)
			}
		}
	}
}
