package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/tailnet/tailnettest"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/kit"
)

// waitDirect waits until p's Delta has written a read ticket for peer into
// direct.json, and returns the file.
func waitDirect(t *testing.T, p *proc, peer string) localapi.Direct {
	t.Helper()
	var d localapi.Direct
	gatewaytest.WaitFor(t, 60*time.Second, p.name+"'s direct.json with a read ticket for "+peer, func() bool {
		var err error
		if d, err = localapi.ReadDirect(p.dir); err != nil {
			return false
		}
		for _, dp := range d.Peers {
			if dp.Name == peer && dp.Ticket != "" && len(dp.Roads) > 0 {
				return true
			}
		}
		return false
	})
	return d
}

// TestReadsAroundADownDelta: with the caller's Delta SIGKILLed, reads go
// on directly to the owner's Delta over the lan road (the kit and `delta
// get`, marked direct), calls do not (DeltaDown, nothing at the
// owner), a read ticket is refused for anything but a read and writes
// nothing, and once it has expired reads say so.
func TestReadsAroundADownDelta(t *testing.T) {
	laptop, studio, app := startPair(t)
	d := waitDirect(t, laptop, "studio")
	fi, err := os.Stat(filepath.Join(laptop.dir, localapi.DirectFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("direct.json: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if d.Peers[0].Roads[0].Road != "lan" || d.Peers[0].Roads[0].Address != studio.peerAddr || time.Until(d.Peers[0].Expires) < 9*time.Minute {
		t.Errorf("direct.json says %+v", d.Peers)
	}
	laptop.kill(t)

	kc, err := kit.Open(laptop.dir)
	if err != nil {
		t.Fatalf("Open with the Delta down and direct.json left: %v", err)
	}
	defer kc.Close()
	ans, err := kc.Get(context.Background(), "studio", "notes", "/direct?x=1", nil)
	if err != nil || ans.Status != 200 || string(ans.Body) != "GET /direct?x=1" || !ans.Direct || ans.Road != "lan" || ans.Header.Get("X-Delta-Direct") != "true" {
		t.Fatalf("a read with the local Delta down: %+v %v", ans, err)
	}
	out, errOut, code := delta(t, "--state-dir", laptop.dir, "get", "studio", "notes", "/cli")
	if code != cli.ExitOK || out != "GET /cli" || !strings.Contains(errOut, "Delta is down; the read went directly to studio over lan") {
		t.Errorf("delta get with the local Delta down: exit %d %q %s", code, out, errOut)
	}

	// A call never goes around Delta.
	id := kit.NewRequestID()
	_, err = kc.Call(context.Background(), "studio", "notes", "POST", "/answer/direct", []byte("x"), &kit.CallOptions{RequestID: id})
	var down *kit.DeltaDown
	if !errors.As(err, &down) || !strings.Contains(err.Error(), "nothing was sent") || app.RequestsFor(id) != 0 {
		t.Errorf("a call with the local Delta down: %v (the owner app saw it %d times)", err, app.RequestsFor(id))
	}
	_, _, code = delta(t, "--state-dir", laptop.dir, "call", "studio", "notes", "/answer/cli", "--data", "x")
	if code != cli.ExitDeltaDown {
		t.Errorf("delta call with the local Delta down: exit %d", code)
	}

	// The read ticket itself, used for a call, a question (which could
	// write a fence) or a session, is refused at the door: sent as the kit
	// would, over TLS pinned to studio's ID with laptop's certificate.
	tk := d.Peers[0].Ticket
	own, err := tls.LoadX509KeyPair(filepath.Join(laptop.dir, d.ClientCert), filepath.Join(laptop.dir, d.ClientKey))
	if err != nil {
		t.Fatal(err)
	}
	pin := d.Peers[0].Roads[0].Pin
	peerClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{own}, MinVersion: tls.VersionTLS13,
		InsecureSkipVerify: true, // the pin is the check
		VerifyConnection: func(cs tls.ConnectionState) error {
			if pintls.Pin(cs.PeerCertificates[0].Raw) != pin {
				return errors.New("not studio's certificate")
			}
			return nil
		}}}}
	defer peerClient.CloseIdleConnections()
	for _, tc := range []struct{ method, path string }{
		{"POST", "/delta/v1/apps/notes/answer/with-read-ticket"},
		{"DELETE", "/delta/v1/apps/notes/answer/with-read-ticket"},
		{"GET", "/delta/v1/calls/never-seen?digest=x"},
	} {
		req, _ := http.NewRequest(tc.method, "https://"+studio.peerAddr+tc.path, bytes.NewReader([]byte("x")))
		req.Header.Set("Authorization", "Delta "+tk)
		req.Header.Set("X-Delta-Request-Id", "read-ticket-call")
		req.Header.Set("X-Delta-Digest", strings.Repeat("0", 64))
		resp, err := peerClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 || resp.Header.Get("X-Delta-Outcome") != "forbidden" {
			t.Errorf("%s %s with a read ticket: %d %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("X-Delta-Outcome"))
		}
	}
	if n := app.RequestsFor("read-ticket-call"); n != 0 {
		t.Errorf("the owner app got %d requests under the read ticket's call", n)
	}
	if r := studio.c.Must(t, "GET", "/v1/receipts", nil); strings.Contains(string(r.Body), "read-ticket-call") || strings.Contains(string(r.Body), "never-seen") {
		t.Errorf("a receipt or a fence was written for a read ticket's request: %s", r.Body)
	}
	// A changed ticket is refused (a fall-back on the same road changes
	// nothing).
	req, _ := http.NewRequest("GET", "https://"+studio.peerAddr+"/delta/v1/apps/notes/x", nil)
	req.Header.Set("Authorization", "Delta "+tk[:len(tk)-2]+map[bool]string{true: "AB", false: "BA"}[strings.HasSuffix(tk, "BA")])
	if resp, err := peerClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("a changed read ticket: %v %v", resp, err)
	}

	// After the ticket's expiry (the kit's clock past it), reads say why.
	kc.Now = func() time.Time { return time.Now().Add(11 * time.Minute) }
	_, err = kc.Get(context.Background(), "studio", "notes", "/late", nil)
	if !errors.As(err, &down) || !strings.Contains(err.Error(), "read ticket for studio expired") {
		t.Errorf("a read after the ticket's expiry: %v", err)
	}

	// Back up, the Delta is used again (not read around).
	laptop.start(t)
	ans, err = kc.Get(context.Background(), "studio", "notes", "/back", nil)
	if err != nil || ans.Direct {
		t.Errorf("a read with the Delta back: %+v %v", ans, err)
	}
}

// TestReadsAroundADownDeltaTLS: in tailnet mode the direct read goes on the
// lan road's pinned TLS, with the client certificate the read ticket is
// bound to.
func TestReadsAroundADownDeltaTLS(t *testing.T) {
	c := tailnettest.Start(t, tailnettest.Options{})
	laptop, studio := tailnetPair(t, c)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	laptop.waitRoad(t, "studio", "lan", "up")
	d := waitDirect(t, laptop, "studio")
	if d.ClientCert == "" || d.Peers[0].Roads[0].Pin == "" {
		t.Fatalf("direct.json names no certificate or pin: %+v", d)
	}
	laptop.kill(t)
	kc, err := kit.Open(laptop.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	ans, err := kc.Get(context.Background(), "studio", "notes", "/over-tls", nil)
	if err != nil || ans.Status != 200 || !ans.Direct || ans.Road != "lan" {
		t.Fatalf("a direct read over pinned TLS: %+v %v", ans, err)
	}
	_, err = kc.Get(context.Background(), "studio", "notes", "/x", &kit.ReadOptions{Route: "tailnet"})
	var down *kit.DeltaDown
	if !errors.As(err, &down) || !strings.Contains(err.Error(), "the tailnet road lives inside Delta") {
		t.Errorf("a direct read pinned to the tailnet: %v", err)
	}
}
