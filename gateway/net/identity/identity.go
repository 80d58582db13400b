// Package identity is a computer's ID in static mode, written for people:
// the SHA-256 of its certificate (pintls, made once per state folder and
// holding its key pair), in base32, cut into four parts of 13 letters each
// followed by a check letter (Luhn mod 32), shown in eight groups of seven
// joined by dashes, as Syncthing writes its device IDs:
//
//	MFZWI3D-BONSGYC-YLTMRWG-C43ENR5-QXGZDMM-FZWI3DP-NSGYCYL-TMRWGC4
//
// Two computers pair by their IDs; a connection between them is TLS 1.3
// pinned to the ID both ways, so that an ID is proved by the handshake,
// never taken on a computer's word. The ID and the certificate's pin
// (pintls.Pin, hex) are the same 32 bytes in two spellings: Pin and
// FromPin convert.
package identity

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ID is a computer's identity: the SHA-256 of its certificate's DER.
type ID [32]byte

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// FromCert is the ID of the certificate whose DER is der.
func FromCert(der []byte) ID { return sha256.Sum256(der) }

// FromPin is the ID whose pin (hex SHA-256 of the certificate's DER) is pin.
func FromPin(pin string) (ID, error) {
	var id ID
	b, err := hex.DecodeString(pin)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("pin %q is not 64 hex digits", pin)
	}
	copy(id[:], b)
	return id, nil
}

// Pin is the ID as pintls spells it: lowercase hex.
func (id ID) Pin() string { return hex.EncodeToString(id[:]) }

// IsZero reports whether id is the zero ID (none).
func (id ID) IsZero() bool { return id == ID{} }

// String is the ID for people: 8 groups of 7, dashes between.
func (id ID) String() string {
	raw := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(id[:]) // 52 letters
	var withChecks strings.Builder
	for i := 0; i < 4; i++ {
		part := raw[i*13 : (i+1)*13]
		withChecks.WriteString(part)
		withChecks.WriteByte(luhn32(part))
	}
	s := withChecks.String() // 56
	groups := make([]string, 8)
	for i := range groups {
		groups[i] = s[i*7 : (i+1)*7]
	}
	return strings.Join(groups, "-")
}

// Short is the ID's first group, for a glance (the page, a log line);
// never enough to pair with.
func (id ID) Short() string { return id.String()[:7] }

// MarshalText writes the ID as String does.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads an ID as Parse does.
func (id *ID) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*id = p
	return nil
}

// ErrNotID is wrapped by every error of Parse.
var ErrNotID = errors.New("not a Delta ID")

// Parse reads an ID as a person may have copied it: dashes and spaces
// anywhere or nowhere, any case, 0/1/8 mistyped for O/I/B. A wrong letter
// is caught by its part's check letter, and the error names the group.
func Parse(s string) (ID, error) {
	var id ID
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch {
		case r == '-' || r == ' ':
			continue
		case r == '0':
			r = 'O'
		case r == '1':
			r = 'I'
		case r == '8':
			r = 'B'
		}
		if !strings.ContainsRune(alphabet, r) {
			return id, fmt.Errorf("%w: %q has %q, which is not a letter A-Z or a digit 2-7", ErrNotID, s, r)
		}
		b.WriteRune(r)
	}
	c := b.String()
	if len(c) != 56 {
		return id, fmt.Errorf("%w: %q has %d letters and digits, not 56 (8 groups of 7; delta id prints it)", ErrNotID, s, len(c))
	}
	var raw strings.Builder
	for i := 0; i < 4; i++ {
		part, check := c[i*14:i*14+13], c[i*14+13]
		if luhn32(part) != check {
			g := (i*14+13)/7 + 1
			return id, fmt.Errorf("%w: %q is mistyped in group %d or %d (its check letter does not match)", ErrNotID, s, g-1, g)
		}
		raw.WriteString(part)
	}
	dec, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(raw.String())
	if err != nil || len(dec) != len(id) {
		return id, fmt.Errorf("%w: %q does not decode to 32 bytes", ErrNotID, s)
	}
	copy(id[:], dec)
	return id, nil
}

// luhn32 is the Luhn mod N check character of s over the base32 alphabet,
// as Syncthing computes it (lib/protocol/luhn.go).
func luhn32(s string) byte {
	const n = len(alphabet)
	factor, sum := 1, 0
	for i := range len(s) {
		codepoint := strings.IndexByte(alphabet, s[i])
		addend := factor * codepoint
		if factor == 2 {
			factor = 1
		} else {
			factor = 2
		}
		addend = addend/n + addend%n
		sum += addend
	}
	remainder := sum % n
	return alphabet[(n-remainder)%n]
}
