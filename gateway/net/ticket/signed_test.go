package ticket

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSignedTickets(t *testing.T) {
	mine, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	c := Claims{Node: "ID-OF-LAPTOP", Name: "laptop", Expires: now.Add(Lifetime), Scope: ScopeRead}
	tk, err := MintSigned(mine, c)
	if err != nil {
		t.Fatal(err)
	}
	if !IsSigned(tk) || IsSigned(Key("0123456789abcdef").Mint(c)) {
		t.Fatal("IsSigned does not tell the kinds apart")
	}
	got, err := CheckSigned(&mine.PublicKey, tk, now)
	if err != nil || got.Node != c.Node || !got.ReadOnly() {
		t.Fatalf("CheckSigned = %+v, %v", got, err)
	}
	var checked Checked
	for range 2 { // the second is remembered
		if _, err := checked.CheckSigned("pin-a", &mine.PublicKey, tk, now); err != nil {
			t.Fatal(err)
		}
	}
	// Another computer's key: forged, remembered or not.
	if _, err := CheckSigned(&other.PublicKey, tk, now); !errors.Is(err, ErrForged) {
		t.Fatalf("with another key: %v", err)
	}
	if _, err := checked.CheckSigned("pin-b", &other.PublicKey, tk, now); !errors.Is(err, ErrForged) {
		t.Fatalf("remembered for another certificate: %v", err)
	}
	// A payload changed after signing: studio's name under laptop's signature.
	payload, _ := json.Marshal(Claims{Node: "ID-OF-STUDIO", Name: "studio", Expires: c.Expires})
	forged := "s1." + base64.RawURLEncoding.EncodeToString(payload) + "." + tk[strings.LastIndexByte(tk, '.')+1:]
	if _, err := CheckSigned(&mine.PublicKey, forged, now); !errors.Is(err, ErrForged) {
		t.Fatalf("a changed payload: %v", err)
	}
	// Time, and the other kind.
	if _, err := CheckSigned(&mine.PublicKey, tk, c.Expires); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired: %v", err)
	}
	if _, err := checked.CheckSigned("pin-a", &mine.PublicKey, tk, c.Expires); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired, remembered: %v", err)
	}
	long, _ := MintSigned(mine, Claims{Node: "n", Expires: now.Add(time.Hour)})
	if _, err := CheckSigned(&mine.PublicKey, long, now); !errors.Is(err, ErrTooLong) {
		t.Fatalf("an hour: %v", err)
	}
	if _, err := CheckSigned(&mine.PublicKey, Key("0123456789abcdef").Mint(c), now); !errors.Is(err, ErrMalformed) {
		t.Fatalf("an HMAC ticket: %v", err)
	}
	if _, err := CheckSigned(&mine.PublicKey, tk+"\n", now); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a newline: %v", err)
	}
}
