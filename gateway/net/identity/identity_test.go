package identity

import (
	"errors"
	"strings"
	"testing"
)

// syncthingVector is a SHA-256 and the device ID Syncthing writes for it
// (its tests' P56IOI7-…): Delta's IDs are spelled as Syncthing spells its
// own, check letters included.
const (
	syncthingPin = "7f7c8723ecca5b4d22061c4981b34c34d865ec376be1eb74330873c9a6f9b205"
	syncthingID  = "P56IOI7-MZJNU2Y-IQGDREY-DM2MGTI-MGL3BXN-PQ6W5BM-TBBZ4TJ-XZWICQ2"
)

func TestSpelledAsSyncthing(t *testing.T) {
	id, err := FromPin(syncthingPin)
	if err != nil {
		t.Fatal(err)
	}
	if got := id.String(); got != syncthingID {
		t.Fatalf("String() = %s, want %s", got, syncthingID)
	}
	if id.Pin() != syncthingPin || id.Short() != "P56IOI7" {
		t.Fatalf("Pin() = %s, Short() = %s", id.Pin(), id.Short())
	}
}

func TestParseAsPeopleType(t *testing.T) {
	want, _ := FromPin(syncthingPin)
	for _, s := range []string{
		syncthingID,
		strings.ToLower(syncthingID),
		strings.ReplaceAll(syncthingID, "-", ""),
		strings.ReplaceAll(syncthingID, "-", " "),
		"p56ioi7m--zjnu2y-iqgdrey-dm2mgti-mgl3bxn-pq6w5bm-tbbz4tj-xzwicq2",
		strings.ReplaceAll(strings.ReplaceAll(syncthingID, "O", "0"), "I", "1"), // read off a screen
	} {
		got, err := Parse(s)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v", s, got, err)
		}
	}
}

func TestParseRefusesWithCause(t *testing.T) {
	for _, c := range []struct{ in, says string }{
		{"", "has 0 letters"},
		{"P56IOI7-MZJNU2Y", "has 14 letters"},
		{strings.Replace(syncthingID, "MZJNU2Y", "MZJNU3Y", 1), "mistyped in group 1 or 2"},
		{strings.Replace(syncthingID, "XZWICQ2", "XZWICQ3", 1), "mistyped in group 7 or 8"},
		{strings.Replace(syncthingID, "P56", "P5!", 1), "is not a letter"},
	} {
		_, err := Parse(c.in)
		if err == nil || !errors.Is(err, ErrNotID) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", c.in, err, c.says)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for i := range 200 {
		var id ID
		for j := range id {
			id[j] = byte(i*31 + j*7)
		}
		got, err := Parse(id.String())
		if err != nil || got != id {
			t.Fatalf("Parse(String()) of %x = %v, %v", id, got, err)
		}
		b, _ := id.MarshalText()
		var back ID
		if err := back.UnmarshalText(b); err != nil || back != id {
			t.Fatalf("text round trip of %x: %v", id, err)
		}
	}
	if _, err := FromPin("abc"); err == nil {
		t.Fatal("FromPin took a short pin")
	}
}
