package tailnet_test

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/net/ticket"
)

// getOverTailnet sends GET path to nd's tailnet listener from another
// node's tsnet, and returns the status and body.
func getOverTailnet(t *testing.T, from, to *tnode, path string) (int, string) {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return from.n.Dial(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	st, err := to.n.LocalClient().Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+st.TailscaleIPs[0].String()+":7421"+path, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s on %s from %s: %v", path, to.name, from.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestOtherUsers: a node of another tailnet user is refused at the
// tailnet listener, naming who it is; an allow-listed one is served.
func TestOtherUsers(t *testing.T) {
	l := newLab(t)
	laptop := l.start("laptop", "127.0.0.2", nodeOpt{})
	studio := l.start("studio", "127.0.0.3", nodeOpt{})
	stranger := l.start("stranger", "127.0.0.4", nodeOpt{})
	l.sameUser(laptop, studio)
	st, _ := stranger.n.LocalClient().Status(context.Background())
	guesthouse := l.start("guesthouse", "127.0.0.5", nodeOpt{allow: []string{string(st.Self.ID)}})
	l.sameUser(guesthouse)
	waitPeer(t, laptop, studio)

	status, body := getOverTailnet(t, stranger, studio, "/delta/v1/ping")
	if status != 403 || !strings.Contains(body, "tailnet node stranger") || !strings.Contains(body, "not one of this user's computers") {
		t.Errorf("stranger at studio: %d %s", status, body)
	}
	if status, body := getOverTailnet(t, stranger, guesthouse, "/delta/v1/ping"); status != 204 {
		t.Errorf("allow-listed stranger at guesthouse: %d %s", status, body)
	}
	if status, body := getOverTailnet(t, laptop, studio, "/delta/v1/hello"); status != 200 || !strings.Contains(body, `"name":"studio"`) {
		t.Errorf("laptop asks studio's hello: %d %s", status, body)
	}
	// Peers are only this user's computers that answer hello.
	if stranger.n.Known("studio") || laptop.n.Known("stranger") {
		t.Errorf("a stranger became a peer")
	}
	if r := stranger.c.Must(t, "GET", "/v1/peers/studio/notes/x", nil); r.Status != 404 || !strings.Contains(r.Err.Detail, "not one of this computer's peers") {
		t.Errorf("stranger reading from studio: %d %s", r.Status, r.Body)
	}
}

// TestPinMismatch: another server on the peer's lan address, with another
// certificate: forbidden, nothing sent, the log names both fingerprints.
func TestPinMismatch(t *testing.T) {
	_, laptop, studio, app := labPair(t)
	waitRoadUp(t, laptop, studio, "lan")
	lanAddr := ""
	for _, p := range laptop.n.Peers() {
		for _, r := range p.Roads {
			if r.Road == "lan" {
				lanAddr = r.Address
			}
		}
	}
	pinned := studio.n.Pin()
	studio.down() // studio is gone: its hello cannot be fetched again

	cert, impostorPin, err := pintls.LoadOrCreate(t.TempDir(), "impostor")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", lanAddr, pintls.ServerConfig(cert))
	if err != nil {
		t.Fatalf("impostor on %s: %v", lanAddr, err)
	}
	var served atomic.Int32
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	t.Cleanup(func() { ln.Close() })

	for _, method := range []string{"GET", "POST"} {
		body := map[string][]byte{"GET": nil, "POST": []byte("x")}[method] // a read has no body
		r := laptop.c.Must(t, method, "/v1/peers/studio/notes/answer/pin", body, "X-Delta-Route", "lan", "X-Delta-Request-Id", "pin-"+method)
		if r.Status != 403 || r.Outcome() != "forbidden" || !strings.Contains(r.Err.Detail, "nothing was sent to studio") || !strings.Contains(r.Err.Detail, impostorPin) {
			t.Errorf("%s through an impostor: %d %q %q", method, r.Status, r.Outcome(), r.Err.Detail)
		}
	}
	if served.Load() != 0 || app.Requests() != 0 {
		t.Errorf("the impostor served %d requests, the owner app %d", served.Load(), app.Requests())
	}
	call := laptop.c.GetCall(t, "pin-POST", 0)
	if call.State != "unavailable" || call.Outcome != "forbidden" || len(call.Attempts) != 1 || call.Attempts[0].FirstByte {
		t.Errorf("call record: %+v", call)
	}
	if !laptop.log.Contains(pinned) || !laptop.log.Contains(impostorPin) {
		t.Errorf("laptop's log does not name both fingerprints (%s, %s)", pinned, impostorPin)
	}
}

// TestCertificateReplaced: a peer that made a new certificate is reached
// again after one more hello over the tailnet.
func TestCertificateReplaced(t *testing.T) {
	_, laptop, studio, _ := labPair(t)
	waitRoadUp(t, laptop, studio, "lan")
	old := studio.n.Pin()
	studio.down()
	os.Remove(filepath.Join(studio.dir, pintls.CertFile))
	os.Remove(filepath.Join(studio.dir, pintls.KeyFile))
	studio.tcfg.LANPort = portOf(t, laptop, "lan")
	studio.up(t)
	if studio.n.Pin() == old {
		t.Fatal("the certificate was not replaced")
	}
	// The restarted studio answers over the tailnet (a new path can take
	// seconds to set up), then the lan road with its new certificate.
	gatewaytest.WaitFor(t, 60*time.Second, "studio reachable over the tailnet again", func() bool {
		r := laptop.c.Must(t, "GET", "/v1/peers/studio/notes/x", nil, "X-Delta-Route", "tailnet", "X-Delta-Timeout", "2")
		return r.Status == 200
	})
	r := laptop.c.Must(t, "GET", "/v1/peers/studio/notes/x", nil, "X-Delta-Route", "lan")
	if r.Status != 200 || r.Header.Get("X-Delta-Route") != "lan" {
		t.Fatalf("read after the certificate changed: %d %s", r.Status, r.Body)
	}
}

func portOf(t *testing.T, from *tnode, road string) int {
	for _, p := range from.n.Peers() {
		for _, r := range p.Roads {
			if string(r.Road) == road {
				_, port, _ := net.SplitHostPort(r.Address)
				var n int
				fmt.Sscan(port, &n)
				return n
			}
		}
	}
	t.Fatalf("no %s road", road)
	return 0
}

// badTickets hands out a bad ticket the first bad times, then real ones.
type badTickets struct {
	inner peerclient.Tickets
	bad   atomic.Int32
	make  func() string
}

func (b *badTickets) Ticket(ctx context.Context, peer string, renew bool) (string, error) {
	if b.bad.Add(-1) >= 0 {
		return b.make(), nil
	}
	return b.inner.Ticket(ctx, peer, renew)
}

// TestTicketsAtTheDoor: expired, forged, or another caller's tickets are
// refused with 401 at the TLS door; the client renews once and succeeds; a
// second 401 is forbidden; the owner app saw exactly one request.
func TestTicketsAtTheDoor(t *testing.T) {
	l := newLab(t)
	bt := &badTickets{}
	laptop := l.start("laptop", "127.0.0.2", nodeOpt{tickets: func(in peerclient.Tickets) peerclient.Tickets { bt.inner = in; return bt }})
	studio := l.start("studio", "127.0.0.3", nodeOpt{})
	den := l.start("den", "127.0.0.4", nodeOpt{})
	l.sameUser(laptop, studio, den)
	waitPeer(t, laptop, studio)
	waitPeer(t, den, studio)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	waitRoadUp(t, laptop, studio, "lan")

	keyHex, err := os.ReadFile(filepath.Join(studio.dir, "ticket-key"))
	if err != nil {
		t.Fatal(err)
	}
	studioKey, _ := hex.DecodeString(strings.TrimSpace(string(keyHex)))
	laptopPin := pintls.Pin(laptop.n.Certificate().Certificate[0])
	denTicket, err := den.n.Ticket(context.Background(), "studio", false)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func() string{
		"expired": func() string {
			return ticket.Key(studioKey).Mint(ticket.Claims{Node: laptop.n.Self().Node, Name: "laptop", Pin: laptopPin, Expires: time.Now().Add(-time.Second)})
		},
		"forged": func() string {
			return ticket.NewKey().Mint(ticket.Claims{Node: laptop.n.Self().Node, Name: "laptop", Pin: laptopPin, Expires: time.Now().Add(time.Minute)})
		},
		"another caller's": func() string { return denTicket },
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			bt.make = mk
			bt.bad.Store(1)
			id := "ticket-" + strings.NewReplacer(" ", "-", "'", "").Replace(name)
			r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/t", []byte("x"), "X-Delta-Route", "lan", "X-Delta-Request-Id", id+"-once")
			if r.Status != 201 || r.Header.Get("X-Delta-Route") != "lan" {
				t.Fatalf("one bad ticket: %d %s", r.Status, r.Body)
			}
			if n := app.RequestsFor(id + "-once"); n != 1 {
				t.Errorf("the owner app saw %d requests, want 1", n)
			}
			call := laptop.c.GetCall(t, id+"-once", 0)
			if len(call.Attempts) != 2 || !strings.Contains(call.Attempts[0].Error, "401 unauthorized") {
				t.Errorf("attempts: %+v", call.Attempts)
			}
			bt.bad.Store(2)
			r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/t", []byte("x"), "X-Delta-Route", "lan", "X-Delta-Request-Id", id+"-twice")
			if r.Status != 403 || r.Outcome() != "forbidden" {
				t.Fatalf("two bad tickets: %d %s", r.Status, r.Body)
			}
			if n := app.RequestsFor(id + "-twice"); n != 0 {
				t.Errorf("the owner app saw %d requests, want 0", n)
			}
		})
	}
}

// TestRestartKeepsIdentity: a Delta restarted on its state folder keeps its
// tailnet node and its certificate.
func TestRestartKeepsIdentity(t *testing.T) {
	l := newLab(t)
	laptop := l.start("laptop", "127.0.0.2", nodeOpt{})
	studio := l.start("studio", "127.0.0.3", nodeOpt{})
	l.sameUser(laptop, studio)
	waitPeer(t, laptop, studio)
	node, pin, nodes := studio.n.Self().Node, studio.n.Pin(), len(l.control.AllNodes())
	studio.down()
	studio.up(t)
	if studio.n.Self().Node != node || studio.n.Pin() != pin {
		t.Errorf("after a restart: node %s→%s, pin %s→%s", node, studio.n.Self().Node, pin, studio.n.Pin())
	}
	if got := len(l.control.AllNodes()); got != nodes {
		t.Errorf("the control server has %d nodes after the restart, was %d", got, nodes)
	}
	if r := laptop.c.Must(t, "GET", "/v1/peers/studio/x/y", nil, "X-Delta-Route", "tailnet"); r.Status != 404 || !strings.Contains(r.Err.Detail, `no app "x"`) {
		t.Errorf("read after studio's restart: %d %s", r.Status, r.Body)
	}
}
