package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/proto"
	"github.com/delta-roads/delta/gateway/ticket"
)

// TestUncleanPathsRefused: a path with "..", "." or empty segments, plain
// or escaped, is refused before anything routes it, on the local API and
// at the owner's door: never carried to another app, never redirected.
func TestUncleanPathsRefused(t *testing.T) {
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	studio.register(t, "bank", app.URL)
	for _, p := range []string{
		"/v1/peers/studio/notes/items/../../bank/answer/transfer",
		"/v1/peers/studio/notes/items/%2e%2e/%2e%2e/bank/answer/t2",
		"/v1/peers/studio/notes//answer/x",
		"/v1/peers/studio/notes/./answer/y",
		"/v1/peers/studio/notes/a/%2E%2E/answer/z",
		"/v1//calls",
		"/v1/calls/../status",
	} {
		r := laptop.c.Must(t, "POST", p, []byte("x"))
		if r.Status != 400 || r.Outcome() != "bad_request" || r.Header.Get("Location") != "" || !strings.Contains(r.Err.Detail, "nothing was sent") {
			t.Errorf("%s: %d %q Location %q %s", p, r.Status, r.Outcome(), r.Header.Get("Location"), r.Body)
		}
	}
	if n := app.Requests(); n != 0 {
		t.Fatalf("the owner app got %d requests from unclean paths", n)
	}
	// At the owner's door, with a valid ticket: refused, not carried out.
	tk := netKey.Mint(ticket.Claims{Node: "node-laptop", Name: "laptop", Expires: time.Now().Add(time.Minute)})
	req, _ := http.NewRequest("POST", "http://"+laptop.otherAddr+"/delta/v1/apps/notes/items/%2e%2e/%2e%2e/bank/answer/t", strings.NewReader("x"))
	req.Header.Set("Authorization", proto.TicketAuth(tk))
	req.Header.Set(proto.HeaderRequestID, "unclean-1")
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 || resp.Header.Get("Location") != "" || app.Requests() != 0 {
		t.Fatalf("the owner's door on an unclean path: %d Location %q, app requests %d", resp.StatusCode, resp.Header.Get("Location"), app.Requests())
	}
}

// refusedAtOnce sends a request that announces a body it never sends, with
// no credentials, and reports the status line read back and whether the
// connection was closed after it.
func refusedAtOnce(t *testing.T, addr, path string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // a failure, not a wait: the answer comes at once
	if _, err := conn.Write([]byte("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%s %s: no answer to a request without credentials whose body never comes: %v", addr, path, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !resp.Close {
		t.Errorf("%s %s: %d, Connection: close %v", addr, path, resp.StatusCode, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("%s %s: the connection was not closed after the refusal (%v)", addr, path, err)
	}
}

// TestRefusalClosesAtOnce: a client without a ticket (peer API) or token
// (local API) that announces a body and never sends it is refused at once
// and its connection closed; the server does not wait to drain the body.
func TestRefusalClosesAtOnce(t *testing.T) {
	laptop, _ := pair(t, nil)
	refusedAtOnce(t, laptop.otherAddr, "/delta/v1/apps/notes/x")
	refusedAtOnce(t, strings.TrimPrefix(laptop.g.LocalURL(), "http://"), "/v1/peers/studio/notes/x")
}

// TestCallInvalidatesCache: an answered call drops the cached read of its
// URI (RFC 9111 §4.4), so an app reads its own write back.
func TestCallInvalidatesCache(t *testing.T) {
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	const p = "/v1/peers/studio/notes/cache/item?cc=max-age%3D600"
	first := laptop.c.Must(t, "GET", p, nil)
	again := laptop.c.Must(t, "GET", p, nil)
	if string(first.Body) != string(again.Body) || again.Header.Get("Age") == "" {
		t.Fatalf("the read was not cached: %q then %q (Age %q)", first.Body, again.Body, again.Header.Get("Age"))
	}
	if r := laptop.c.Must(t, "PUT", p, []byte("new")); r.Outcome() != "answered" {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	after := laptop.c.Must(t, "GET", p, nil)
	if string(after.Body) == string(first.Body) || after.Header.Get("Age") != "" {
		t.Fatalf("the read after a call to its URI came from the cache: %q (Age %q)", after.Body, after.Header.Get("Age"))
	}
}

// TestStaleOnlyWhenTheRoadFails: a cached answer is served stale when the
// peer cannot be reached, never when the owner's app is down (that is the
// owner's answer).
func TestStaleOnlyWhenTheRoadFails(t *testing.T) {
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	const p = "/v1/peers/studio/notes/cache/s?cc=max-age%3D0"
	if r := laptop.c.Must(t, "GET", p, nil); r.Status != 200 {
		t.Fatalf("read: %d %s", r.Status, r.Body)
	}
	studio.register(t, "notes", "http://"+gatewaytest.DeadAddr(t)) // the app is down
	if r := laptop.c.Must(t, "GET", p, nil); r.Outcome() != "unavailable" {
		t.Fatalf("with the owner's app down: %d %q %s, want unavailable (not stale)", r.Status, r.Outcome(), r.Body)
	}
	studio.g.Close() // now the peer cannot be reached
	if r := laptop.c.Must(t, "GET", p, nil); r.Outcome() != "stale" || r.Header.Get("X-Delta-Stale") == "" {
		t.Fatalf("with the peer unreachable: %d %q %s, want stale", r.Status, r.Outcome(), r.Body)
	}
}

// TestRefusalsLogSummarized: a flood of requests without a ticket is
// counted one by one in /metrics and costs the log one line per source per
// minute.
func TestRefusalsLogSummarized(t *testing.T) {
	logs := &gatewaytest.LogBuffer{}
	laptop, studio := pair(t, func(n *node) {
		if n.name == "studio" {
			n.cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
		}
	})
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	defer tr.CloseIdleConnections()
	const n = 2000
	for range n {
		resp, err := (&http.Client{Transport: tr}).Get("http://" + laptop.otherAddr + "/delta/v1/ping")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("a ping without a ticket: %d", resp.StatusCode)
		}
	}
	m := string(studio.c.Must(t, "GET", "/metrics", nil).Body)
	if !strings.Contains(m, fmt.Sprintf("delta_door_refusals_total %d", n)) {
		t.Errorf("metrics do not count %d refusals:\n%s", n, m)
	}
	if lines := strings.Count(logs.String(), "refused at the door"); lines != 1 {
		t.Errorf("%d log lines for %d refusals from one source within a minute, want 1", lines, n)
	}
}
