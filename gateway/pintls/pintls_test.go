package pintls

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
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
