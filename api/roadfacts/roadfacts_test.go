package roadfacts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"
)

// selfSigned is a certificate as a Delta makes its own: self-signed, its
// pin the whole trust.
func selfSigned(t *testing.T, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestVerifyPin: over a real TLS handshake on loopback, the pinned
// certificate is accepted and any other refused with a *MismatchError
// that names the address and both fingerprints, before the client sends
// a byte of its request; a peer that shows no certificate is refused.
func TestVerifyPin(t *testing.T) {
	studio, stranger := selfSigned(t, "studio"), selfSigned(t, "stranger")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{studio}})
			b, _ := io.ReadAll(s) // what the client sent, if the handshake held
			got <- string(b)
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	dial := func(want string) error {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, VerifyConnection: VerifyPin(addr, want)})
		if err != nil {
			return err
		}
		c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		return c.Close()
	}

	if err := dial(Pin(studio.Certificate[0])); err != nil {
		t.Fatalf("the pinned certificate was refused: %v", err)
	}
	if b := <-got; !strings.HasPrefix(b, "GET /") {
		t.Errorf("the pinned road carried %q", b)
	}

	err = dial(Pin(stranger.Certificate[0]))
	var mm *MismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("another certificate: %v, want a *MismatchError", err)
	}
	if mm.Addr != addr || mm.Want != Pin(stranger.Certificate[0]) || mm.Got != Pin(studio.Certificate[0]) ||
		!strings.Contains(mm.Error(), addr) || !strings.Contains(mm.Error(), mm.Got) {
		t.Errorf("mismatch: %+v (%v)", mm, mm)
	}
	if b := <-got; b != "" {
		t.Errorf("a refused road carried %q", b)
	}

	if err := VerifyPin(addr, "x")(tls.ConnectionState{}); err == nil || !strings.Contains(err.Error(), "no certificate") {
		t.Errorf("no certificate: %v", err)
	}
	ln.Close()
	<-done
}

// TestPin is the hex SHA-256 of the certificate's DER.
func TestPin(t *testing.T) {
	if p := Pin([]byte("abc")); p != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("Pin(abc) = %s", p)
	}
}
