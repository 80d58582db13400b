package ticket

import (
	"strings"
	"testing"
	"time"
)

// FuzzCheck: no string but one the key minted passes Check; a minted
// ticket with any byte changed fails; Check never panics.
func FuzzCheck(f *testing.F) {
	k := Key([]byte("0123456789abcdef0123456789abcdef"))
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	good := k.Mint(Claims{Node: "node-laptop", Name: "laptop", Expires: now.Add(time.Minute), Pin: strings.Repeat("a", 64)})
	for _, s := range []string{good, "", "v1.", "v1..", "v1.e30.", "v1.e30.AAAA", good + "x", strings.Replace(good, "v1.", "v2.", 1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := k.Check(s, now)
		if err != nil {
			return
		}
		if s != good {
			// The fuzzer cannot forge an HMAC: anything else that passes
			// is another spelling of a signed ticket.
			t.Fatalf("%q passed, and only %q was minted", s, good)
		}
		if c.Node == "" || !now.Before(c.Expires) {
			t.Fatalf("%q passed with claims %+v", s, c)
		}
	})
}

// TestTamperedTicketsFail: every one-bit change of a minted ticket fails.
// Found by FuzzCheck's seeds: the signature's last base64 character has
// bits the lenient decoder ignores, so a changed ticket passed (another
// spelling of the same signature); decoding is strict now.
func TestTamperedTicketsFail(t *testing.T) {
	k := Key([]byte("0123456789abcdef0123456789abcdef"))
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	good := k.Mint(Claims{Node: "node-laptop", Name: "laptop", Expires: now.Add(time.Minute)})
	for i := range len(good) {
		b := []byte(good)
		b[i] ^= 0x01
		if _, err := k.Check(string(b), now); err == nil {
			t.Fatalf("a ticket with byte %d changed passed", i)
		}
		// Found by FuzzCheck (testdata/fuzz/FuzzCheck/361fa9329fa77918):
		// base64 decoding skips line breaks, so one inserted anywhere
		// passed.
		for _, br := range []string{"\n", "\r"} {
			if i > 0 {
				if _, err := k.Check(good[:i]+br+good[i:], now); err == nil {
					t.Fatalf("a ticket with %q inserted at %d passed", br, i)
				}
			}
		}
	}
}
