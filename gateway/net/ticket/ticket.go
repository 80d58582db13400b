// Package ticket mints and checks Delta's tickets: short-lived, HMAC-signed
// statements "this is node N, named M, until T" that a caller presents as
// `Authorization: Delta <ticket>` on a road where the peer cannot see the
// caller's tailnet identity (DESIGN §4).
//
// A ticket is "v1." base64url(JSON payload) "." base64url(HMAC-SHA256 of
// everything before the second dot). The key never leaves the computer that
// checks the tickets.
package ticket

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Lifetime is how long a ticket is valid (DESIGN §8).
const Lifetime = 10 * time.Minute

// Errors from Check; callers branch on them with errors.Is.
var (
	ErrMalformed = errors.New("ticket is malformed")
	ErrForged    = errors.New("ticket's signature does not match")
	ErrExpired   = errors.New("ticket has expired")
	ErrTooLong   = errors.New("ticket lives too long")
)

// MaxSkew is how far ahead of this computer's clock the minting computer's
// may run: a ticket is refused if it expires later than Lifetime+MaxSkew
// from now (whoever holds a key cannot make a ticket for a year).
const MaxSkew = 5 * time.Minute

// Claims is what a ticket says.
type Claims struct {
	Node    string    `json:"n"` // the caller's stable node ID
	Name    string    `json:"m"` // the caller's computer name
	Expires time.Time `json:"e"`
	// Pin, if not empty, binds the ticket to the caller's TLS client
	// certificate (the hex SHA-256 of its DER): presented with any other
	// certificate it is refused.
	Pin string `json:"p,omitempty"`
	// Scope limits what the ticket admits: "" everything the peer API
	// serves its caller, ScopeRead reads only.
	Scope string `json:"s,omitempty"`
}

// ScopeRead is the scope of a read ticket: it admits reads (GET, HEAD,
// OPTIONS of an app) and pings, nothing else (a call, a session, a
// question that could write a fence). Delta keeps one per peer for the
// kit, which reads around a down Delta with it (docs/protocol.md).
const ScopeRead = "read"

// ReadOnly reports whether the ticket admits reads only.
func (c Claims) ReadOnly() bool { return c.Scope != "" }

// Key signs and checks tickets.
type Key []byte

// NewKey returns a fresh random key.
func NewKey() Key {
	k := make(Key, 32)
	rand.Read(k)
	return k
}

// LoadOrCreate reads the hex key at path, or makes one and writes it with
// mode 0600 if the file does not exist.
func LoadOrCreate(path string) (Key, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		k, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(k) < 16 {
			return nil, fmt.Errorf("ticket key %s is not at least 16 hex-encoded bytes; remove it to make a new one", path)
		}
		return k, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read ticket key: %w", err)
	}
	k := NewKey()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(hex.EncodeToString(k)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write ticket key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("write ticket key: %w", err)
	}
	return k, nil
}

// Mint returns a ticket for c signed with k.
func (k Key) Mint(c Claims) string {
	payload, _ := json.Marshal(c)
	head := "v1." + base64.RawURLEncoding.EncodeToString(payload)
	return head + "." + base64.RawURLEncoding.EncodeToString(k.sign(head))
}

func (k Key) sign(s string) []byte {
	m := hmac.New(sha256.New, k)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// Check verifies t at now and returns its claims.
func (k Key) Check(t string, now time.Time) (Claims, error) {
	var c Claims
	head, sig, payload, err := split(t, "v1.")
	if err != nil {
		return c, err
	}
	if !hmac.Equal(sig, k.sign(head)) {
		return c, ErrForged
	}
	if json.Unmarshal(payload, &c) != nil || c.Node == "" {
		return c, ErrMalformed
	}
	return c, checkTime(c, now)
}

// Checked remembers tickets already checked, so that a caller's ticket,
// sent on every request for up to Lifetime, is verified once (its HMAC, its
// base64, its JSON) and then found by its exact spelling. The zero value
// is ready; it holds at most maxChecked tickets and forgets them all when
// full. Expiry is checked every time.
type Checked struct {
	mu sync.Mutex
	m  map[string]Claims
}

const maxChecked = 1024

// Check is k.Check(t, now), remembered.
func (c *Checked) Check(k Key, t string, now time.Time) (Claims, error) {
	c.mu.Lock()
	cl, ok := c.m[t]
	c.mu.Unlock()
	if ok {
		if !now.Before(cl.Expires) {
			return cl, fmt.Errorf("%w (at %s)", ErrExpired, cl.Expires.UTC().Format(time.RFC3339))
		}
		return cl, nil
	}
	cl, err := k.Check(t, now)
	if err != nil {
		return cl, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxChecked {
		c.m = map[string]Claims{}
	}
	c.m[t] = cl
	c.mu.Unlock()
	return cl, nil
}
