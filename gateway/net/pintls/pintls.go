// Package pintls is the TLS of Delta's lan and thunderbolt roads: each
// computer has a self-signed ECDSA certificate, made on first start and kept
// in its state folder, and publishes the SHA-256 of its DER (the pin) over
// the tailnet. A client accepts exactly the pinned certificate, checked in
// VerifyConnection during an explicit handshake that completes before the
// connection is handed back, so that the first byte written to it is the
// request's.
package pintls

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delta-roads/delta/api/roadfacts"
)

// File names in the state folder.
const (
	CertFile = "tls-cert.pem"
	KeyFile  = "tls-key.pem"
)

// Pin is the hex SHA-256 of a certificate's DER.
func Pin(der []byte) string { return roadfacts.Pin(der) }

// LoadOrCreate returns the certificate kept in dir, making one (ECDSA P-256,
// valid 20 years, named name) on first use, and its pin.
func LoadOrCreate(dir, name string) (tls.Certificate, string, error) {
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err == nil {
		return cert, Pin(cert.Certificate[0]), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return tls.Certificate{}, "", fmt.Errorf("pintls: %s and %s do not make a certificate (%w); remove both to make a new one", certPath, keyPath, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "Delta " + name},
		DNSNames:     []string{"delta-" + name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(20, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("pintls: make certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	if err := writeFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})); err != nil {
		return tls.Certificate{}, "", err
	}
	if err := writeFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); err != nil {
		return tls.Certificate{}, "", err
	}
	cert, err = tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("pintls: read back the new certificate: %w", err)
	}
	return cert, Pin(der), nil
}

// writeFile writes this computer's key or certificate durably: flushed
// before it is renamed into place (as statedir.WriteDurable, which imports
// this package; issue 64, M14), so that a power loss leaves the old one or
// the new one, never an empty identity.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		_, err = f.Write(b)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pintls: write %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // the rename's flush; the file is there either way
		d.Close()
	}
	return nil
}

// ServerConfig is the TLS configuration of a listener serving cert. It
// asks for (but does not verify) a client certificate: tickets are bound to
// its pin (see ClientPin).
func ServerConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13,
		NextProtos: []string{"http/1.1"}, ClientAuth: tls.RequestClientCert}
}

// ClientPin is the pin of the client certificate of a TLS connection, or
// "" if it presented none.
func ClientPin(cs *tls.ConnectionState) string {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		return ""
	}
	return Pin(cs.PeerCertificates[0].Raw)
}

// MismatchError is a handshake refused because the peer's certificate is
// not the pinned one (roadfacts.MismatchError). Nothing was sent.
type MismatchError = roadfacts.MismatchError

// Handshake runs the client side of TLS over raw, accepting only the
// certificate whose pin is want, and returns the connection once the
// handshake is complete. If own is not nil it is presented as the client
// certificate. On failure raw is closed; a wrong certificate is a
// *MismatchError.
func Handshake(ctx context.Context, raw net.Conn, want string, own *tls.Certificate) (*tls.Conn, error) {
	addr := raw.RemoteAddr().String()
	var mismatch *MismatchError
	cfg := &tls.Config{
		InsecureSkipVerify: true, // the pin, checked below, is the whole trust
		MinVersion:         tls.VersionTLS13,
		NextProtos:         []string{"http/1.1"},
		VerifyConnection: func(cs tls.ConnectionState) error {
			err := roadfacts.VerifyPin(addr, want)(cs)
			errors.As(err, &mismatch)
			return err
		},
	}
	if own != nil {
		cfg.Certificates = []tls.Certificate{*own}
	}
	cache := &signalCache{ClientSessionCache: sessionCache(want, own), put: make(chan struct{})}
	cfg.ClientSessionCache = cache
	c := tls.Client(raw, cfg)
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		if mismatch != nil {
			return nil, mismatch
		}
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	if own != nil {
		if err := awaitAccepted(ctx, c, cache.put); err != nil {
			c.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
	}
	if c.ConnectionState().DidResume {
		handshakes.resumed.Add(1)
	} else {
		handshakes.full.Add(1)
	}
	return c, nil
}

var handshakes struct{ full, resumed atomic.Uint64 }

// Handshakes counts the client handshakes made since the start: full ones,
// and those that resumed a session.
func Handshakes() (full, resumed uint64) { return handshakes.full.Load(), handshakes.resumed.Load() }

// sessions are the TLS 1.3 sessions a handshake may resume instead of a
// full one (a probe of the lan road every few seconds, a call's new
// connection): no certificates cross the road again and no signature is
// made or checked. One cache per pair of pins, the peer's and our own: a
// session is resumed only with the certificates it was made with, so a
// resumed connection is as pinned as a full handshake (VerifyConnection
// sees the session's certificates and checks them again), and a peer that
// changed its certificate, or a Delta that changed its own, gets a full
// handshake.
var sessions = struct {
	sync.Mutex
	m map[string]tls.ClientSessionCache
}{m: map[string]tls.ClientSessionCache{}}

// maxSessionCaches bounds the caches kept (one per peer, in practice).
const maxSessionCaches = 256

func sessionCache(want string, own *tls.Certificate) tls.ClientSessionCache {
	key := want
	if own != nil && len(own.Certificate) > 0 {
		key += "|" + Pin(own.Certificate[0])
	}
	sessions.Lock()
	defer sessions.Unlock()
	c, ok := sessions.m[key]
	if !ok {
		if len(sessions.m) >= maxSessionCaches {
			clear(sessions.m)
		}
		c = tls.NewLRUClientSessionCache(8)
		sessions.m[key] = c
	}
	return c
}

// signalCache is a session cache that says when the server's first session
// ticket has arrived.
type signalCache struct {
	tls.ClientSessionCache
	put  chan struct{}
	once sync.Once
}

func (s *signalCache) Put(key string, cs *tls.ClientSessionState) {
	s.ClientSessionCache.Put(key, cs)
	s.once.Do(func() { close(s.put) })
}

// AcceptWait bounds how long a client waits for the server to accept its
// certificate after the handshake.
const AcceptWait = 5 * time.Second

// awaitAccepted waits until the server has accepted this computer's
// certificate. In TLS 1.3 the client's side of the handshake ends before
// the server has checked the client's certificate: a refusal would come
// only as the answer to the first request, after the request had been
// written, and a call refused so would look as if it might have been
// carried out. Delta's peer listeners send their session ticket only
// after the client's certificate passed (crypto/tls does, when it asked
// for one), so its arrival is the acceptance, and an alert is the
// refusal; nothing of a request is written before either.
func awaitAccepted(ctx context.Context, c *tls.Conn, accepted <-chan struct{}) error {
	select {
	case <-accepted: // a resumed session's ticket may have come already
		return nil
	default:
	}
	read := make(chan error, 1)
	go func() {
		var b [1]byte
		n, err := c.Read(b[:])
		if n > 0 {
			err = errors.New("the peer sent data before any request")
		}
		read <- err
	}()
	wait := time.NewTimer(AcceptWait)
	defer wait.Stop()
	var err error
	select {
	case <-accepted:
	case err = <-read:
		if err == nil || errors.Is(err, io.EOF) {
			err = errors.New("the peer closed the connection after the handshake: it did not accept this computer's certificate")
		} else {
			err = fmt.Errorf("the peer refused this computer's certificate: %w", err)
		}
		return err
	case <-wait.C:
		err = fmt.Errorf("the peer did not accept this computer's certificate within %s", AcceptWait)
	case <-ctx.Done():
		err = ctx.Err()
	}
	// Stop the read, and take the connection back whole: a read that timed
	// out leaves a tls.Conn usable.
	c.SetReadDeadline(time.Unix(1, 0))
	rerr := <-read
	c.SetReadDeadline(time.Time{})
	if err == nil && rerr != nil && !errors.Is(rerr, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("the peer refused this computer's certificate: %w", rerr)
	}
	return err
}
