package proto

import (
	"testing"
)

func TestGuaranteeWords(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{NotSent("no road", ""), "no road; nothing was sent"},
		{NotSent("studio did not answer", "studio"), "studio did not answer; nothing was sent to studio"},
		{NotCarriedOut("no app \"notes\" is registered on studio"), "no app \"notes\" is registered on studio; nothing was carried out"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}
