package ticket

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTickets(t *testing.T) {
	k := NewKey()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := k.Mint(Claims{Node: "n1", Name: "laptop", Expires: now.Add(Lifetime)})
	c, err := k.Check(tk, now.Add(Lifetime-time.Second))
	if err != nil || c.Node != "n1" || c.Name != "laptop" {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := k.Check(tk, now.Add(Lifetime)); !errors.Is(err, ErrExpired) {
		t.Errorf("expired: %v", err)
	}
	if _, err := NewKey().Check(tk, now); !errors.Is(err, ErrForged) {
		t.Errorf("other key: %v", err)
	}
	// Changing the claims (another node) breaks the signature.
	parts := strings.Split(tk, ".")
	other := k.Mint(Claims{Node: "n2", Name: "x", Expires: now.Add(Lifetime)})
	if _, err := k.Check(parts[0]+"."+strings.Split(other, ".")[1]+"."+parts[2], now); !errors.Is(err, ErrForged) {
		t.Errorf("swapped claims: %v", err)
	}
	// A key holder cannot mint a ticket for a year: it lives at most
	// Lifetime, give or take MaxSkew of clock difference.
	if _, err := k.Check(k.Mint(Claims{Node: "n1", Name: "laptop", Expires: now.Add(365 * 24 * time.Hour)}), now); !errors.Is(err, ErrTooLong) {
		t.Errorf("a ticket for a year: %v, want ErrTooLong", err)
	}
	if _, err := k.Check(k.Mint(Claims{Node: "n1", Name: "laptop", Expires: now.Add(Lifetime + MaxSkew)}), now); err != nil {
		t.Errorf("a ticket from a clock MaxSkew ahead: %v", err)
	}
	for _, bad := range []string{"", "v1.", "v2.a.b", "v1.a", "v1.a.!!"} {
		if _, err := k.Check(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestLoadOrCreate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ticket-key")
	k1, err := LoadOrCreate(p)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := LoadOrCreate(p)
	if string(k1) != string(k2) {
		t.Errorf("key changed on reload")
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v", fi.Mode())
	}
	os.WriteFile(p, []byte("zz"), 0o600)
	if _, err := LoadOrCreate(p); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("bad key file: %v", err)
	}
}

// TestChecked: a remembered ticket is still refused once expired, and a
// changed one is checked, not found.
func TestChecked(t *testing.T) {
	k := NewKey()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := k.Mint(Claims{Node: "n1", Name: "laptop", Expires: now.Add(Lifetime)})
	var c Checked
	for range 2 {
		if cl, err := c.Check(k, tk, now); err != nil || cl.Node != "n1" {
			t.Fatalf("%+v %v", cl, err)
		}
	}
	if _, err := c.Check(k, tk, now.Add(Lifetime)); !errors.Is(err, ErrExpired) {
		t.Errorf("a remembered ticket past its expiry: %v", err)
	}
	changed := tk[:len(tk)-1] + "A"
	if changed == tk { // one ticket in 16 ends in A already
		changed = tk[:len(tk)-1] + "Q"
	}
	if _, err := c.Check(k, changed, now); err == nil {
		t.Errorf("a changed ticket passed")
	}
	if _, err := c.Check(NewKey(), "v1.x.y", now); err == nil {
		t.Errorf("a malformed ticket passed")
	}
}
