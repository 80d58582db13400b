package ticket

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Signed tickets are static mode's with IDs: "s1." base64url(JSON payload)
// "." base64url(ECDSA-SHA256 signature, ASN.1), minted by the caller with
// its own identity key and checked by the owner with the public key of the
// certificate that the same TLS connection proved. No key is shared
// between computers: whoever holds a peer's config but not its key can
// neither make the TLS handshake nor sign a ticket as it.

// MintSigned returns a ticket for c signed with key (the computer's
// certificate's private key).
func MintSigned(key crypto.Signer, c Claims) (string, error) {
	payload, _ := json.Marshal(c)
	head := "s1." + base64.RawURLEncoding.EncodeToString(payload)
	sum := sha256.Sum256([]byte(head))
	sig, err := key.Sign(rand.Reader, sum[:], crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("sign a ticket: %w", err)
	}
	return head + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// CheckSigned verifies a signed ticket t with pub at now and returns its
// claims.
func CheckSigned(pub crypto.PublicKey, t string, now time.Time) (Claims, error) {
	var c Claims
	ek, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return c, fmt.Errorf("%w: the connection's certificate has no ECDSA key", ErrForged)
	}
	if !strings.HasPrefix(t, "s1.") {
		return c, ErrMalformed
	}
	head, sig, payload, err := split(t, "s1.")
	if err != nil {
		return c, err
	}
	sum := sha256.Sum256([]byte(head))
	if !ecdsa.VerifyASN1(ek, sum[:], sig) {
		return c, ErrForged
	}
	if json.Unmarshal(payload, &c) != nil || c.Node == "" {
		return c, ErrMalformed
	}
	return c, checkTime(c, now)
}

// IsSigned reports whether t is a signed ticket (by its prefix alone).
func IsSigned(t string) bool { return strings.HasPrefix(t, "s1.") }

// split takes a ticket apart: what is signed, the signature and the
// payload, checking the alphabet and the base64.
func split(t, prefix string) (head string, sig, payload []byte, err error) {
	i := strings.LastIndexByte(t, '.')
	if !strings.HasPrefix(t, prefix) || i <= len(prefix) {
		return "", nil, nil, ErrMalformed
	}
	// Only base64url's alphabet and the dots: Go's decoder skips '\r' and
	// '\n' even when strict, so a ticket with one inside would otherwise
	// pass as another spelling of the signed one (found by FuzzCheck).
	for j := range len(t) {
		if ch := t[j]; !(ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.') {
			return "", nil, nil, ErrMalformed
		}
	}
	head = t[:i]
	if sig, err = base64.RawURLEncoding.Strict().DecodeString(t[i+1:]); err != nil {
		return "", nil, nil, ErrMalformed
	}
	if payload, err = base64.RawURLEncoding.Strict().DecodeString(head[len(prefix):]); err != nil {
		return "", nil, nil, ErrMalformed
	}
	return head, sig, payload, nil
}

// checkTime refuses claims that expired or live too long.
func checkTime(c Claims, now time.Time) error {
	if !now.Before(c.Expires) {
		return fmt.Errorf("%w (at %s)", ErrExpired, c.Expires.UTC().Format(time.RFC3339))
	}
	if c.Expires.After(now.Add(Lifetime + MaxSkew)) {
		return fmt.Errorf("%w: it is valid until %s, longer than a ticket lives (%s, and %s of clock difference)",
			ErrTooLong, c.Expires.UTC().Format(time.RFC3339), Lifetime, MaxSkew)
	}
	return nil
}

// CheckSigned is CheckSigned(pub, t, now), remembered under the pin of the
// certificate whose key pub is: a ticket checked for one certificate is
// never taken as checked for another.
func (c *Checked) CheckSigned(pin string, pub crypto.PublicKey, t string, now time.Time) (Claims, error) {
	k := pin + "\x00" + t
	c.mu.Lock()
	cl, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return cl, checkTime(cl, now)
	}
	cl, err := CheckSigned(pub, t, now)
	if err != nil {
		return cl, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxChecked {
		c.m = map[string]Claims{}
	}
	c.m[k] = cl
	c.mu.Unlock()
	return cl, nil
}
