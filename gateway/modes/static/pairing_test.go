package static_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/static"
	"github.com/delta-roads/delta/gateway/net/identity"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/net/ticket"
	"github.com/delta-roads/delta/gateway/state/statedir"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// pairing is d's GET /v1/pairing.
func pairing(t *testing.T, d *gatewaytest.Delta) localapi.Pairing {
	t.Helper()
	r := d.C.Must(t, "GET", localapi.PairingPath, nil)
	var p localapi.Pairing
	if r.Status != 200 || json.Unmarshal(r.Body, &p) != nil {
		t.Fatalf("GET /v1/pairing on %s: %d %s", d.Name, r.Status, r.Body)
	}
	return p
}

// pairWith is a person on d saying yes to other, named name.
func pairWith(t *testing.T, d *gatewaytest.Delta, name string, other *gatewaytest.Delta) localapi.PairedPeer {
	t.Helper()
	body, _ := json.Marshal(localapi.PairWith{ID: idOf(t, other.Dir).String(), Address: other.PeerAddr})
	r := d.C.Must(t, "PUT", localapi.PairPath(name), body)
	var pp localapi.PairedPeer
	if r.Status != 200 || json.Unmarshal(r.Body, &pp) != nil {
		t.Fatalf("PUT /v1/pairs/%s on %s: %d %s", name, d.Name, r.Status, r.Body)
	}
	return pp
}

// peerState is what d's pairing says of peer name, "" when it is not
// paired there.
func peerState(t *testing.T, d *gatewaytest.Delta, name string) string {
	for _, p := range pairing(t, d).Peers {
		if p.Name == name {
			return p.State
		}
	}
	return ""
}

// TestPairingConsent (issue 66): two Deltas started with no peer pair
// only when a person on each side has said yes. laptop's yes asks studio;
// until a person on studio accepts, studio's door admits nothing of
// laptop's but the request, and studio knows no laptop; once accepted,
// both are paired (config.json written, no restart), calls go both ways.
// Unpairing closes the door again.
func TestPairingConsent(t *testing.T) {
	laptop := gatewaytest.Unpaired(t, "laptop")
	studio := gatewaytest.Unpaired(t, "studio")
	app := gatewaytest.StartOwnerApp(t)
	studio.Register(t, "owner", app.URL)
	laptopID := idOf(t, laptop.Dir).String()

	if p := pairing(t, studio); len(p.Peers) != 0 || len(p.Requests) != 0 || p.Self.ID != idOf(t, studio.Dir).String() {
		t.Fatalf("a new Delta's pairing: %+v", p)
	}
	pp := pairWith(t, laptop, "studio", studio)
	if pp.State != localapi.PairAsked || !strings.Contains(pp.Detail, "waiting for a person on studio") {
		t.Fatalf("laptop's yes: %+v, want asked", pp)
	}
	reqs := pairing(t, studio).Requests
	if len(reqs) != 1 || reqs[0].ID != laptopID || reqs[0].Name != "laptop" || reqs[0].Address != laptop.PeerAddr || reqs[0].Road != "lan" {
		t.Fatalf("studio's requests: %+v, want laptop's at %s", reqs, laptop.PeerAddr)
	}
	var st localapi.Status
	if r := studio.C.Must(t, "GET", localapi.StatusPath, nil); json.Unmarshal(r.Body, &st) != nil || len(st.PairRequests) != 1 {
		t.Fatalf("studio's status does not show the request: %s", r.Body)
	}

	// One yes is not a pairing: studio's door refuses laptop's requests,
	// and studio has no peer laptop to call.
	r := laptop.C.Must(t, "POST", "/v1/peers/studio/owner/x", []byte("hi"), "X-Delta-Request-Id", "r-before")
	if r.Status < 400 || app.Requests() != 0 {
		t.Fatalf("laptop's call before studio accepted: %d %s, app requests %d", r.Status, r.Body, app.Requests())
	}
	if r := studio.C.Must(t, "GET", "/v1/peers/laptop/owner/", nil); r.Status != 404 {
		t.Fatalf("studio reached laptop before it accepted: %d %s", r.Status, r.Body)
	}
	if fc, _ := statedir.ReadConfig(studio.Dir); len(fc.Peers) != 0 {
		t.Fatalf("studio's config has peers before a person there said yes: %+v", fc.Peers)
	}

	// studio's person accepts: both are paired, without a restart.
	r = studio.C.Must(t, "POST", localapi.PairRequestPath(laptopID, localapi.PairAccept), nil)
	if r.Status != 200 || json.Unmarshal(r.Body, &pp) != nil || pp.State != localapi.PairPaired {
		t.Fatalf("accept: %d %s", r.Status, r.Body)
	}
	if fc, _ := statedir.ReadConfig(studio.Dir); len(fc.Peers) != 1 || fc.Peers[0].Name != "laptop" || fc.Peers[0].ID != laptopID || fc.Mode != statedir.ModeStatic {
		t.Fatalf("studio's config after accepting: %+v", fc)
	}
	gatewaytest.WaitFor(t, 20*time.Second, "laptop to see studio paired", func() bool { return peerState(t, laptop, "studio") == localapi.PairPaired })
	if len(pairing(t, studio).Requests) != 0 {
		t.Fatal("the request is still listed after it was accepted")
	}
	r = laptop.C.Must(t, "POST", "/v1/peers/studio/owner/x", []byte("hi"), "X-Delta-Request-Id", "r-after")
	if r.Status != 200 || app.Requests() != 1 {
		t.Fatalf("laptop's call once paired: %d %s, app requests %d", r.Status, r.Body, app.Requests())
	}

	// laptop unpairs studio: the pooled connection a read left is closed
	// (a name paired again must not reach the computer it was), and
	// pairing it again is one yes, studio having said its own.
	if r := laptop.C.Must(t, "GET", "/v1/peers/studio/owner/x", nil); r.Status != 200 {
		t.Fatalf("a read once paired: %d %s", r.Status, r.Body)
	}
	if r := laptop.C.Must(t, "DELETE", localapi.PairPath("studio"), nil); r.Status != 204 {
		t.Fatalf("laptop unpairs studio: %d %s", r.Status, r.Body)
	}
	gatewaytest.WaitFor(t, 10*time.Second, "laptop to close its connections to studio", func() bool {
		return laptop.Log.Contains("closed the connections on a dropped road") && laptop.Log.Contains("studio was unpaired here")
	})
	if r := laptop.C.Must(t, "GET", "/v1/peers/studio/owner/x", nil); r.Status != 404 {
		t.Errorf("a read to studio once unpaired: %d %s", r.Status, r.Body)
	}
	if pp := pairWith(t, laptop, "studio", studio); pp.State != localapi.PairPaired {
		t.Fatalf("laptop pairs studio again: %+v, want paired (studio has it)", pp)
	}

	// laptop renamed: what it says of itself changes, not studio's name for
	// it; config.json keeps it.
	if r := laptop.C.Must(t, "PUT", localapi.NamePath, []byte(`{"name": "lap2"}`)); r.Status != 200 || !strings.Contains(string(r.Body), `"lap2"`) {
		t.Fatalf("rename: %d %s", r.Status, r.Body)
	}
	if p := pairing(t, laptop); p.Self.Name != "lap2" {
		t.Errorf("laptop after renaming: %+v", p.Self)
	}
	if fc, _ := statedir.ReadConfig(laptop.Dir); fc.Name != "lap2" {
		t.Errorf("laptop's config after renaming: %q", fc.Name)
	}
	if r := laptop.C.Must(t, "PUT", localapi.NamePath, []byte(`{"name": "<b>"}`)); r.Status != 400 {
		t.Errorf("a name that is not one: %d %s", r.Status, r.Body)
	}
	if peerState(t, studio, "laptop") != localapi.PairPaired {
		t.Error("studio's laptop changed with laptop's own name")
	}

	// Unpaired on studio: its door refuses laptop again.
	if r := studio.C.Must(t, "DELETE", localapi.PairPath("laptop"), nil); r.Status != 204 {
		t.Fatalf("unpair: %d %s", r.Status, r.Body)
	}
	if r := studio.C.Must(t, "DELETE", localapi.PairPath("laptop"), nil); r.Status != 404 {
		t.Fatalf("unpair twice: %d %s", r.Status, r.Body)
	}
	r = laptop.C.Must(t, "POST", "/v1/peers/studio/owner/x", []byte("hi"), "X-Delta-Request-Id", "r-unpaired")
	if r.Status < 400 || app.Requests() != 2 { // the call and the read before
		t.Fatalf("laptop's call once studio unpaired it: %d %s, app requests %d", r.Status, r.Body, app.Requests())
	}
	if fc, _ := statedir.ReadConfig(studio.Dir); len(fc.Peers) != 0 {
		t.Fatalf("studio's config after unpairing: %+v", fc.Peers)
	}
}

// TestPairingRefusals: the local API's words for a pairing that cannot be.
func TestPairingRefusals(t *testing.T) {
	laptop := gatewaytest.Unpaired(t, "laptop")
	studio := gatewaytest.Unpaired(t, "studio")
	own := idOf(t, laptop.Dir).String()
	other := idOf(t, studio.Dir).String()
	for _, c := range []struct {
		name, body, want string
		status           int
	}{
		{"studio", `{"id": "` + own + `", "address": "127.0.0.1:1"}`, "own ID", 400},
		{"studio", `{"id": "nope", "address": "127.0.0.1:1"}`, "id:", 400},
		{"studio", `{"id": "` + other + `", "address": "studio"}`, "not HOST:PORT", 400},
		{"studio", `{"id": "` + other + `", "address": "127.0.0.1:99999"}`, "1-65535", 400},
		{"studio", `{"id": "` + other + `", "address": "127.0.0.1:1", "road": "tailnet"}`, "not lan or thunderbolt", 400},
		{"<b>", `{"id": "` + other + `", "address": "127.0.0.1:1"}`, "peer name", 400},
		{"studio", `{"id": "` + other + `"`, "body", 400},
	} {
		r := laptop.C.Must(t, "PUT", localapi.PairPath(c.name), []byte(c.body))
		if r.Status != c.status || !strings.Contains(string(r.Body), c.want) {
			t.Errorf("PUT %s %s: %d %s, want %d with %q", c.name, c.body, r.Status, r.Body, c.status, c.want)
		}
	}
	pairWith(t, laptop, "studio", studio)
	body := []byte(`{"id": "` + other + `", "address": "127.0.0.1:1"}`)
	if r := laptop.C.Must(t, "PUT", localapi.PairPath("studio2"), body); r.Status != 409 || !strings.Contains(string(r.Body), "paired already, as studio") {
		t.Errorf("the same ID under a second name: %d %s", r.Status, r.Body)
	}
	if r := laptop.C.Must(t, "POST", localapi.PairRequestPath(other, "accept"), nil); r.Status != 404 {
		t.Errorf("accepting a request nobody made: %d %s", r.Status, r.Body)
	}
	if r := laptop.C.Must(t, "POST", localapi.PairRequestPath(own, "maybe"), nil); r.Status != 404 && r.Status != 400 {
		t.Errorf("an unknown action: %d %s", r.Status, r.Body)
	}
}

// stranger is a computer of its own ID that is paired with nobody.
type stranger struct {
	cert tls.Certificate
	id   identity.ID
}

// newStranger makes a stranger's certificate.
func newStranger(t *testing.T) stranger {
	t.Helper()
	dir := t.TempDir()
	cert, pin, err := pintls.LoadOrCreate(dir, "stranger")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := identity.FromPin(pin)
	return stranger{cert: cert, id: id}
}

// ask sends path with body to d's peer API as s, over TLS pinned to d's
// ID: the answer's status and body.
func (s stranger) ask(t *testing.T, d *gatewaytest.Delta, method, path, body string) (int, string) {
	t.Helper()
	raw, err := net.Dial("tcp", d.PeerAddr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pintls.Handshake(ctx, raw, idOf(t, d.Dir).Pin(), &s.cert)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tk, _ := ticket.MintSigned(s.cert.PrivateKey.(crypto.Signer), ticket.Claims{Node: s.id.String(), Name: "stranger", Expires: time.Now().Add(time.Minute)})
	req, _ := http.NewRequest(method, "https://"+d.Name+path, strings.NewReader(body))
	req.Header.Set("Authorization", proto.TicketScheme+tk)
	var buf bytes.Buffer
	req.Write(&buf)
	conn.Write(buf.Bytes())
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStrangerOnlyAsks (issue 66): a computer nobody paired gets through
// studio's TLS (its key proved) and is refused everything at the door but
// the request to pair, which is bounded: a name that is not a name is
// refused, a person's "ignore" is kept, and past MaxPairRequests waiting,
// a new computer is refused while those waiting stay.
func TestStrangerOnlyAsks(t *testing.T) {
	studio := gatewaytest.Unpaired(t, "studio")
	app := gatewaytest.StartOwnerApp(t)
	studio.Register(t, "owner", app.URL)
	s := newStranger(t)
	for _, c := range [][2]string{{"POST", "/delta/v1/apps/owner/x"}, {"GET", "/delta/v1/apps/owner/"}, {"GET", proto.PathAppList}, {"GET", proto.PathPing}, {"GET", proto.PathPair}} {
		if status, body := s.ask(t, studio, c[0], c[1], "{}"); status != 403 || !strings.Contains(body, "not a paired peer's") {
			t.Errorf("a stranger's %s %s: %d %s", c[0], c[1], status, body)
		}
	}
	if app.Requests() != 0 {
		t.Fatalf("a stranger reached studio's app")
	}
	for _, body := range []string{`{"name": "<script>alert(1)</script>", "port": 7421}`, `{"name": "x", "port": 0}`, `{"name": "x", "port": 1, "more": 1}`, strings.Repeat("x", 2000)} {
		if status, got := s.ask(t, studio, "POST", proto.PathPair, body); status != 400 {
			t.Errorf("the request to pair %.40s: %d %s", body, status, got)
		}
	}
	if n := len(pairing(t, studio).Requests); n != 0 {
		t.Fatalf("a bad request to pair was kept: %d", n)
	}
	if status, body := s.ask(t, studio, "POST", proto.PathPair, `{"name": "stranger", "port": 7421}`); status != 202 || !strings.Contains(body, localapi.PairAsked) {
		t.Fatalf("the request to pair: %d %s", status, body)
	}
	if r := pairing(t, studio).Requests; len(r) != 1 || r[0].Name != "stranger" || r[0].ID != s.id.String() {
		t.Fatalf("the request kept: %+v", r)
	}
	if r := studio.C.Must(t, "POST", localapi.PairRequestPath(s.id.String(), localapi.PairIgnore), nil); r.Status != 200 {
		t.Fatalf("ignore: %d %s", r.Status, r.Body)
	}
	if status, _ := s.ask(t, studio, "POST", proto.PathPair, `{"name": "stranger", "port": 7421}`); status != 202 || len(pairing(t, studio).Requests) != 0 {
		t.Fatalf("an ignored computer asked again: %d, and is listed: %+v", status, pairing(t, studio).Requests)
	}
	for i := range static.MaxPairRequests {
		o := newStranger(t)
		if status, body := o.ask(t, studio, "POST", proto.PathPair, fmt.Sprintf(`{"name": "s%d", "port": 7421}`, i)); status != 202 {
			t.Fatalf("request %d: %d %s", i, status, body)
		}
	}
	o := newStranger(t)
	if status, body := o.ask(t, studio, "POST", proto.PathPair, `{"name": "one-too-many", "port": 7421}`); status != 429 {
		t.Fatalf("a request past %d waiting: %d %s", static.MaxPairRequests, status, body)
	}
	if n := len(pairing(t, studio).Requests); n != static.MaxPairRequests {
		t.Fatalf("%d requests kept, want %d", n, static.MaxPairRequests)
	}
	if fc, _ := statedir.ReadConfig(studio.Dir); len(fc.Peers) != 0 {
		t.Fatalf("studio's config has peers no person accepted: %+v", fc.Peers)
	}
}

// TestStrangerTakesNoPeersName: a computer asking to pair under the name
// of a peer paired already is kept without a name (D4): a person names it
// at Accept, and it never shows as that peer.
func TestStrangerTakesNoPeersName(t *testing.T) {
	_, studio := gatewaytest.SealedPair(t, "laptop", "studio")
	s := newStranger(t)
	if status, body := s.ask(t, studio, "POST", proto.PathPair, `{"name": "laptop", "port": 7421}`); status != 202 {
		t.Fatalf("the request to pair: %d %s", status, body)
	}
	r := pairing(t, studio).Requests
	if len(r) != 1 || r[0].Name != "" || r[0].ID != s.id.String() {
		t.Fatalf("a stranger named as a paired peer is kept as %+v", r)
	}
	if r := studio.C.Must(t, "POST", localapi.PairRequestPath(s.id.String(), localapi.PairAccept), nil); r.Status != 400 || !strings.Contains(string(r.Body), "peer name") {
		t.Errorf("accepting it with no name given: %d %s", r.Status, r.Body)
	}
}
