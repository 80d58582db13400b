package static_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/static"
	"github.com/delta-roads/delta/gateway/net/identity"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/net/ticket"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/kit"
)

// idOf is the ID of the certificate in a state folder.
func idOf(t *testing.T, dir string) identity.ID {
	t.Helper()
	id, _, err := static.OwnID(dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// withOwner registers a gatewaytest owner app as "owner" on studio and
// opens the kit on laptop.
func withOwner(t *testing.T, laptop, studio *gatewaytest.Delta) (*kit.Client, *gatewaytest.OwnerApp) {
	t.Helper()
	app := gatewaytest.StartOwnerApp(t)
	studio.Register(t, "owner", app.URL)
	c, err := kit.Open(laptop.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, app
}

// TestSealedCallsAndReads: two Deltas paired by ID carry a call and a read
// over TLS; the owner knows the caller by the name it paired the proven ID
// with, and its node is that ID; each Delta says its own ID.
func TestSealedCallsAndReads(t *testing.T) {
	laptop, studio := gatewaytest.SealedPair(t, "laptop", "studio")
	c, _ := withOwner(t, laptop, studio)
	ctx := context.Background()
	id := kit.NewRequestID()
	ans, err := c.Call(ctx, "studio", "owner", "POST", "/answer/1", []byte("sealed"), &kit.CallOptions{RequestID: id})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Status != 201 || string(ans.Body) != "sealed" || ans.Road != "lan" {
		t.Fatalf("answer: %+v", ans)
	}
	if r, err := c.Get(ctx, "studio", "owner", "/anything", nil); err != nil || r.Status != 200 {
		t.Fatalf("read: %+v %v", r, err)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := idOf(t, laptop.Dir).String()
	if st.Self.ID != want || st.Self.Node != want {
		t.Fatalf("laptop's status says it is %+v, want id %s", st.Self, want)
	}
	sc, err := kit.Open(studio.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	rs, err := sc.Receipts(ctx, "")
	if err != nil || len(rs) == 0 {
		t.Fatalf("receipts: %v %v", rs, err)
	}
	if rs[0].Caller != "laptop" || rs[0].CallerNode != want {
		t.Fatalf("studio's receipt names the caller %q, node %q; want laptop, %s", rs[0].Caller, rs[0].CallerNode, want)
	}
}

// TestSealedDirectRead: with laptop's Delta stopped, the kit reads studio
// directly over the lan road, TLS pinned to studio's ID, with laptop's
// certificate and a read ticket signed by laptop's key (direct.json).
func TestSealedDirectRead(t *testing.T) {
	laptop, studio := gatewaytest.SealedPair(t, "laptop", "studio")
	app := gatewaytest.StartOwnerApp(t)
	studio.Register(t, "owner", app.URL)
	gatewaytest.WaitFor(t, 10*time.Second, "laptop's direct.json has a read ticket", func() bool {
		d, err := localapi.ReadDirect(laptop.Dir)
		return err == nil && len(d.Peers) == 1 && d.Peers[0].Ticket != "" && d.ClientCert != ""
	})
	d, _ := localapi.ReadDirect(laptop.Dir)
	if pin := d.Peers[0].Roads[0].Pin; pin != idOf(t, studio.Dir).Pin() {
		t.Fatalf("direct.json pins studio's road to %q, not its ID's pin", pin)
	}
	if rd := d.Peers[0].Roads[0]; rd.ConnectTimeoutMS != roads.Road(rd.Road).ConnectTimeout().Milliseconds() {
		t.Errorf("direct.json gives the %s road a connect timeout of %d ms, not Delta's own", rd.Road, rd.ConnectTimeoutMS)
	}
	laptop.G.Close()
	c, err := kit.Open(laptop.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Get(context.Background(), "studio", "owner", "/around", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != 200 || r.Header.Get(kit.HeaderDirect) != "true" {
		t.Fatalf("direct read: %d %v", r.Status, r.Header)
	}
}

// TestImpostorRefusedAtDoor: a computer with laptop's config (studio's
// address and ID, the name laptop) but its own key cannot pose as laptop:
// its handshake proves its own ID, not laptop's, and studio's door
// refuses it whatever ticket it signs (naming the ID it proved); nothing
// reaches studio's app. (Before issue 66 the handshake itself refused it;
// a computer that is not paired may now ask to pair, and nothing else.)
func TestImpostorRefusedAtDoor(t *testing.T) {
	laptop, studio := gatewaytest.SealedPair(t, "laptop", "studio")
	app := gatewaytest.StartOwnerApp(t)
	studio.Register(t, "owner", app.URL)
	thiefDir := t.TempDir()
	thiefCert, thiefPin, err := pintls.LoadOrCreate(thiefDir, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	thiefID, _ := identity.FromPin(thiefPin)
	raw, err := net.Dial("tcp", studio.PeerAddr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pintls.Handshake(ctx, raw, idOf(t, studio.Dir).Pin(), &thiefCert)
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := ticket.MintSigned(thiefCert.PrivateKey.(crypto.Signer), ticket.Claims{Node: idOf(t, laptop.Dir).String(), Name: "laptop", Expires: time.Now().Add(time.Minute)})
	io.WriteString(conn, "POST /delta/v1/apps/owner/answer/stolen HTTP/1.1\r\nHost: studio\r\nAuthorization: Delta "+tk+"\r\nContent-Length: 1\r\n\r\nx")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 403 || !strings.Contains(string(body), thiefID.String()) || !strings.Contains(string(body), "not a paired peer's") {
		t.Fatalf("the impostor was not refused at the door: %d %s", resp.StatusCode, body)
	}
	if n := app.Requests(); n != 0 {
		t.Fatalf("the impostor's request reached studio's app (%d requests)", n)
	}
}

// proxy accepts on loopback and hands each connection to serve with a
// connection to target; it stops when the test ends.
func proxy(t *testing.T, serve func(client, server net.Conn)) func(target string) string {
	return func(target string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		t.Cleanup(func() { ln.Close(); wg.Wait() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				s, err := net.Dial("tcp", target)
				if err != nil {
					c.Close()
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer c.Close()
					defer s.Close()
					serve(c, s)
				}()
			}
		}()
		return ln.Addr().String()
	}
}

// TestManInTheMiddleRefused: a listener between laptop and studio that
// answers TLS with a certificate of its own is refused at the handshake:
// nothing is sent, the call says so, and laptop's lan road says why.
func TestManInTheMiddleRefused(t *testing.T) {
	mitmCert, mitmPin, err := pintls.LoadOrCreate(t.TempDir(), "studio")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var heard []byte
	laptop, studio := gatewaytest.SealedPairVia(t, "laptop", "studio", proxy(t, func(c, _ net.Conn) {
		tc := tls.Server(c, pintls.ServerConfig(mitmCert))
		b, _ := io.ReadAll(tc) // whatever laptop would tell it
		mu.Lock()
		heard = append(heard, b...)
		mu.Unlock()
	}))
	c, app := withOwner(t, laptop, studio)
	ctx := context.Background()
	_, err = c.Call(ctx, "studio", "owner", "POST", "/answer/mitm", []byte("for studio only"), nil)
	var u *kit.Unavailable
	if !errors.As(err, &u) || !u.NothingSent {
		t.Fatalf("a call through a man in the middle: %v, want nothing sent", err)
	}
	if !strings.Contains(u.Detail, "not the pinned") || !strings.Contains(u.Detail, mitmPin) {
		t.Fatalf("the refusal does not say why: %s", u.Detail)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lan := st.Peers[0].Roads[0]
	if lan.State != localapi.RoadDown || !strings.Contains(lan.LastError, "not the pinned") {
		t.Fatalf("laptop's lan road: %+v", lan)
	}
	mu.Lock()
	defer mu.Unlock()
	if bytes.Contains(heard, []byte("for studio only")) || app.Requests() != 0 {
		t.Fatalf("the man in the middle heard %q; studio's app saw %d requests", heard, app.Requests())
	}
}

// TestTamperedAnswerNeverReachesTheApp: a road that changes one byte of a
// big answer on its way back (after the handshake) breaks the TLS record's
// authentication: the read fails, and the app never gets a changed body
// as an answer.
func TestTamperedAnswerNeverReachesTheApp(t *testing.T) {
	var flipped atomic.Int64
	flip := func(c, s net.Conn) {
		go func() { io.Copy(s, c); s.Close() }()
		r := bufio.NewReader(s)
		for {
			head := make([]byte, 5)
			if _, err := io.ReadFull(r, head); err != nil {
				return
			}
			body := make([]byte, int(head[3])<<8|int(head[4]))
			if _, err := io.ReadFull(r, body); err != nil {
				return
			}
			if len(body) >= 8<<10 { // an answer's record, never a handshake's
				body[len(body)/2] ^= 0x20
				flipped.Add(1)
			}
			if _, err := c.Write(append(head, body...)); err != nil {
				return
			}
		}
	}
	laptop, studio := gatewaytest.SealedPairVia(t, "laptop", "studio", proxy(t, flip))
	big := bytes.Repeat([]byte("the whole answer "), 8<<10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(big) })}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	studio.Register(t, "big", "http://"+ln.Addr().String())
	c, err := kit.Open(laptop.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Get(context.Background(), "studio", "big", "/", nil)
	if err == nil {
		t.Fatalf("a tampered answer reached the app: %d, %d bytes, whole: %v", r.Status, len(r.Body), bytes.Equal(r.Body, big))
	}
	if flipped.Load() == 0 {
		t.Fatalf("the road changed no byte, so the read's failure (%v) proves nothing", err)
	}
	t.Logf("the read: %v", err)
}
