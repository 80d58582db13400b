package pintls

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

func TestPinnedHandshake(t *testing.T) {
	dir := t.TempDir()
	cert, pin, err := LoadOrCreate(dir, "studio")
	if err != nil {
		t.Fatal(err)
	}
	again, pin2, err := LoadOrCreate(dir, "studio")
	if err != nil || pin2 != pin || string(again.Certificate[0]) != string(cert.Certificate[0]) {
		t.Fatalf("the certificate changed on reload: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, KeyFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", fi.Mode())
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", ServerConfig(cert))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				if cs := c.(*tls.Conn).ConnectionState(); len(b) > 0 && ClientPin(&cs) != pin {
					b = []byte("wrong client pin")
				}
				got <- b
			}()
		}
	}()
	dial := func(want string) (*tls.Conn, error) {
		raw, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return Handshake(context.Background(), raw, want, &cert)
	}
	for i := range 3 {
		c, err := dial(pin)
		if err != nil {
			t.Fatalf("pinned handshake %d: %v", i, err)
		}
		// The first is a full handshake; the later ones resume its
		// session (the ticket is read with the server's first bytes).
		if cs := c.ConnectionState(); cs.DidResume != (i > 0) || len(cs.PeerCertificates) == 0 || Pin(cs.PeerCertificates[0].Raw) != pin {
			t.Errorf("handshake %d: resumed %v, peer certificates %d", i, cs.DidResume, len(cs.PeerCertificates))
		}
		c.Write([]byte("hello"))
		c.CloseWrite()
		io.ReadAll(c) // the server's session ticket, then its close
		c.Close()
		if b := <-got; string(b) != "hello" {
			t.Errorf("handshake %d: the server read %q (a resumed session must carry the client's pin)", i, b)
		}
	}

	_, other, _ := LoadOrCreate(t.TempDir(), "impostor")
	_, err = dial(other)
	var me *MismatchError
	if !errors.As(err, &me) || me.Got != pin || me.Want != other {
		t.Fatalf("wrong pin: %v", err)
	}
	if b := <-got; len(b) != 0 {
		t.Errorf("the server got %q through a refused handshake", b)
	}
}

func TestBrokenFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, CertFile), []byte("junk"), 0o600)
	os.WriteFile(filepath.Join(dir, KeyFile), []byte("junk"), 0o600)
	if _, _, err := LoadOrCreate(dir, "x"); err == nil {
		t.Fatal("junk certificate accepted")
	}
}

// TestCipherSuite: the lan road's TLS uses AES-GCM where the CPU has AES
// instructions (Go's TLS 1.3 prefers it then), else ChaCha20-Poly1305.
func TestCipherSuite(t *testing.T) {
	cert, pin, err := LoadOrCreate(t.TempDir(), "studio")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", ServerConfig(cert))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.(*tls.Conn).Handshake()
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Handshake(context.Background(), raw, pin, &cert)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := tls.CipherSuiteName(c.ConnectionState().CipherSuite)
	hw := (cpu.X86.HasAES && cpu.X86.HasPCLMULQDQ) || (cpu.ARM64.HasAES && cpu.ARM64.HasPMULL)
	want := map[bool]string{true: "TLS_AES_128_GCM_SHA256", false: "TLS_CHACHA20_POLY1305_SHA256"}[hw]
	if got != want {
		t.Errorf("the lan road's cipher suite is %s; with AES instructions %v, want %s", got, hw, want)
	}
	t.Logf("cipher suite %s (AES instructions: %v)", got, hw)
}

// BenchmarkRecordCipher is what the lan road's cipher costs: sealing and
// opening its records (16 KiB, TLS's largest) with AES-128-GCM, whose
// ns/op over 16 KiB gives the CPU time a GiB costs each Delta.
func BenchmarkRecordCipher(b *testing.B) {
	key := make([]byte, 16)
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	nonce := make([]byte, aead.NonceSize())
	rec := make([]byte, 16<<10)
	out := make([]byte, 0, len(rec)+aead.Overhead())
	b.Run("seal", func(b *testing.B) {
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			out = aead.Seal(out[:0], nonce, rec, nil)
		}
	})
	sealed := aead.Seal(nil, nonce, rec, nil)
	b.Run("open", func(b *testing.B) {
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			if _, err := aead.Open(out[:0], nonce, sealed, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRefusedClientKnownBeforeWriting: a server that checks the client's
// certificate refuses another one, and Handshake says so before anything
// is written (in TLS 1.3 the client's handshake ends first; the refusal is
// awaited); the accepted client gets its connection, and a second
// handshake resumes and is accepted at once.
func TestRefusedClientKnownBeforeWriting(t *testing.T) {
	server, serverPin, _ := LoadOrCreate(t.TempDir(), "studio")
	paired, pairedPin, _ := LoadOrCreate(t.TempDir(), "laptop")
	stranger, _, _ := LoadOrCreate(t.TempDir(), "laptop")
	cfg := ServerConfig(server)
	cfg.ClientAuth = tls.RequireAnyClientCert
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if ClientPin(&cs) != pairedPin {
			return errors.New("not paired")
		}
		return nil
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wrote := make(chan int, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				wrote <- len(b)
			}()
		}
	}()
	dial := func(own *tls.Certificate) (*tls.Conn, error) {
		raw, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return Handshake(context.Background(), raw, serverPin, own)
	}
	if _, err := dial(&stranger); err == nil || !strings.Contains(err.Error(), "refused this computer's certificate") {
		t.Fatalf("a stranger's handshake: %v, want a refusal", err)
	}
	if n := <-wrote; n != 0 {
		t.Fatalf("the server read %d bytes from the stranger", n)
	}
	for i := range 2 {
		c, err := dial(&paired)
		if err != nil {
			t.Fatalf("handshake %d of the paired client: %v", i, err)
		}
		io.WriteString(c, "hello")
		c.Close()
		if n := <-wrote; n != 5 {
			t.Fatalf("the server read %d bytes, want 5", n)
		}
	}
	if _, resumed := Handshakes(); resumed == 0 {
		t.Fatal("the second handshake did not resume")
	}
}
