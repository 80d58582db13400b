package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/state/journal"
)

// TestBadInput: every malformed request gets a clear JSON error naming the
// problem; nothing is sent and nothing is written to the journal.
func TestBadInput(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, func(n *node) { n.cfg.MaxCallBytes = 8 << 20 })
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	const path = "/v1/peers/studio/notes/answer/1"
	long := strings.Repeat("a", 129)

	cases := []struct {
		name    string
		method  string
		path    string
		body    []byte
		hdr     []string
		noAuth  bool
		status  int
		outcome string
		detail  string // a part of the detail naming the cause
	}{
		{name: "request id with a space", hdr: []string{"X-Delta-Request-Id", "a b"}, status: 400, outcome: "bad_request", detail: "X-Delta-Request-Id"},
		{name: "request id with a slash", hdr: []string{"X-Delta-Request-Id", "a/b"}, status: 400, outcome: "bad_request", detail: "character outside"},
		{name: "request id of only dots", hdr: []string{"X-Delta-Request-Id", "..."}, status: 400, outcome: "bad_request", detail: "only dots"},
		{name: "request id of 129 characters", hdr: []string{"X-Delta-Request-Id", long}, status: 400, outcome: "bad_request", detail: "129 characters"},
		{name: "timeout 0", hdr: []string{"X-Delta-Timeout", "0"}, status: 400, outcome: "bad_request", detail: "more than 0"},
		{name: "timeout -1", hdr: []string{"X-Delta-Timeout", "-1"}, status: 400, outcome: "bad_request", detail: `X-Delta-Timeout "-1"`},
		{name: "timeout 601", hdr: []string{"X-Delta-Timeout", "601"}, status: 400, outcome: "bad_request", detail: "over the limit of 600"},
		{name: "timeout abc", hdr: []string{"X-Delta-Timeout", "abc"}, status: 400, outcome: "bad_request", detail: `"abc"`},
		{name: "timeout 1e9", hdr: []string{"X-Delta-Timeout", "1e9"}, status: 400, outcome: "bad_request", detail: `"1e9"`},
		{name: "timeout with 4 decimals", hdr: []string{"X-Delta-Timeout", "1.0001"}, status: 400, outcome: "bad_request", detail: "3 decimals"},
		{name: "route not a road", hdr: []string{"X-Delta-Route", "wifi"}, status: 400, outcome: "bad_request", detail: "thunderbolt, lan, tailnet"},
		{name: "unknown peer", path: "/v1/peers/nowhere/notes/x", status: 404, outcome: "not_found", detail: `"nowhere" is not one of this computer's peers`},
		{name: "peer name malformed", path: "/v1/peers/-bad/notes/x", status: 400, outcome: "bad_request", detail: "peer name"},
		{name: "body over the limit", body: bytes.Repeat([]byte("x"), 8<<20+1), status: 413, outcome: "bad_request", detail: "over the limit of 8388608 bytes"},
		{name: "no token", noAuth: true, status: 401, outcome: "unauthorized", detail: "no Authorization"},
		{name: "wrong token", hdr: []string{"Authorization", "Bearer nope"}, status: 401, outcome: "unauthorized", detail: "does not match"},
		{name: "Basic with a wrong password", hdr: []string{"Authorization", "Basic eDp5"}, status: 401, outcome: "unauthorized", detail: "the Basic password does not match"},
		{name: "Basic not base64", hdr: []string{"Authorization", "Basic !!"}, status: 401, outcome: "unauthorized", detail: "not base64"},
		{name: "neither Bearer nor Basic", hdr: []string{"Authorization", "Digest x"}, status: 401, outcome: "unauthorized", detail: "neither \"Bearer <secret>\" nor Basic"},
		{name: "a PROPFIND's body over 1 MiB", method: "PROPFIND", body: bytes.Repeat([]byte("x"), 1<<20+1), status: 413, outcome: "bad_request", detail: "a PROPFIND carries at most 1048576 bytes"},
		{name: "foreign Host", hdr: []string{"Host", "evil.example:7420"}, status: 400, outcome: "bad_request", detail: "not a loopback name"},
		{name: "TRACE", method: "TRACE", status: 405, outcome: "bad_request", detail: "TRACE is not carried"},
		{name: "a GET with a body", method: "GET", body: []byte("dropped?"), status: 400, outcome: "bad_request", detail: "a GET carries no body"},
		{name: "CONNECT", method: "CONNECT", status: 405, outcome: "bad_request", detail: "CONNECT asks for a tunnel"},
		{name: "app name malformed once unescaped", path: "/v1/peers/studio/n%2Fotes/x", status: 400, outcome: "bad_request", detail: "app name"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method, p := tc.method, tc.path
			if method == "" {
				method = "POST"
			}
			if p == "" {
				p = path
			}
			body := tc.body
			if body == nil {
				body = []byte("payload")
			}
			id := "bad-" + strings.Repeat("x", i+1)
			hdr := append([]string{"X-Delta-Request-Id", id}, tc.hdr...)
			c := *laptop.c
			if tc.noAuth {
				c.Token = ""
			}
			req := func() *gatewaytest.Response {
				if tc.noAuth {
					r, err := http.NewRequest(method, c.URL+p, bytes.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					resp, err := http.DefaultClient.Do(r)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					out := &gatewaytest.Response{Status: resp.StatusCode, Header: resp.Header}
					out.Err.Detail = readDetail(t, resp)
					return out
				}
				return c.Must(t, method, p, body, hdr...)
			}()
			if req.Status != tc.status || req.Outcome() != tc.outcome {
				t.Fatalf("got %d %q, want %d %q (%s)", req.Status, req.Outcome(), tc.status, tc.outcome, req.Err.Detail)
			}
			if !strings.Contains(req.Err.Detail, tc.detail) {
				t.Errorf("detail %q does not name the cause (%q)", req.Err.Detail, tc.detail)
			}
			if !strings.HasSuffix(req.Err.Detail, "nothing was sent") {
				t.Errorf("detail %q does not end with \"nothing was sent\"", req.Err.Detail)
			}
			if app.Requests() != 0 {
				t.Errorf("the owner app got %d requests", app.Requests())
			}
			if _, err := laptop.g.Journal().Calls().Get(context.Background(), id); err == nil {
				t.Errorf("call %s was written to the journal", id)
			}
		})
	}
	if calls, _ := laptop.g.Journal().Calls().List(context.Background(), journal.CallFilter{}); len(calls) != 0 {
		t.Errorf("the journal holds %d calls after only bad requests", len(calls))
	}
}

// TestBadAppRegistration: only loopback http URLs are accepted.
func TestBadAppRegistration(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, nil)
	for _, tc := range []struct{ body, detail string }{
		{`{"url": "http://192.168.1.20:8080"}`, "not on a loopback address"},
		{`{"url": "http://example.com:8080"}`, "not on a loopback address"},
		{`{"url": "https://127.0.0.1:8080"}`, "must start with http://"},
		{`{"url": "http://127.0.0.1"}`, "has no port"},
		{`{"url": "http://127.0.0.1:80/api"}`, "without path"},
		{`{"url": "http://user:pw@127.0.0.1:80"}`, "credentials"},
		{`{"address": "http://127.0.0.1:80"}`, "unknown field"},
		{`not json`, "is not {\"url\""},
		{`{"url": "http://127.0.0.1:0"}`, "not one of 1-65535"},
		{`{"url": "http://127.0.0.1:65536"}`, "not one of 1-65535"},
		{`{"url": "http://127.0.0.1:8080?x=1"}`, "without path"},
		{`{"url": "http://127.0.0.1:8080?"}`, "without path"},
		{`{"url": "http://127.0.0.1:8080#f"}`, "without path"},
		{`{"url": "http:127.0.0.1:8080"}`, "without path"},
		{`{"url": "http://localhost:8080"}`, "not on a loopback address"}, // a name a hosts file can move
		{`{"url": "http://[::1%25lo]:8080"}`, "not on a loopback address"},
		{`{"url": "http://127.0.0.1:8080"} {"url": "http://10.0.0.1:1"}`, "more follows"},
		{`{"url": "http://127.0.0.1:8080", "url": "http://10.0.0.1:1"}`, `holds "url" twice`}, // of two, Delta and a person could each read another
		{`{"url": "` + studio.g.LocalURL() + `"}`, "one of Delta's own doors"},
		{`{"url": "http://` + laptop.otherAddr + `"}`, "one of Delta's own doors"}, // studio's peer listener
		{`{"url": "http://127.0.0.1:8080", "secret": "mine"}`, "unknown field"},
	} {
		r := studio.c.Must(t, "PUT", "/v1/apps/notes", []byte(tc.body))
		if r.Status != 400 || r.Outcome() != "bad_request" || !strings.Contains(r.Err.Detail, tc.detail) {
			t.Errorf("%s: %d %q %q, want 400 naming %q", tc.body, r.Status, r.Outcome(), r.Err.Detail, tc.detail)
		}
	}
	if r := studio.c.Must(t, "GET", "/v1/apps/notes", nil); r.Status != 404 {
		t.Errorf("a refused registration left app notes behind: %d %s", r.Status, r.Body)
	}
	// A good one, then re-pointed: the secret stays.
	s1 := studio.register(t, "notes", "http://127.0.0.1:9")
	s2 := studio.register(t, "notes", "HTTP://[::1]:10/")
	if s1 == "" || s1 != s2 {
		t.Errorf("secret changed on re-registration: %q → %q", s1, s2)
	}
	if r := studio.c.Must(t, "GET", "/v1/apps/notes", nil); !strings.Contains(string(r.Body), `"url": "http://[::1]:10"`) {
		t.Errorf("the registered URL is not kept as http://HOST:PORT: %s", r.Body)
	}
	// Another name that differs only in case: a person could not tell
	// which app a call went to.
	if r := studio.c.Must(t, "PUT", "/v1/apps/Notes", []byte(`{"url": "http://127.0.0.1:11"}`)); r.Status != 400 || !strings.Contains(r.Err.Detail, "differs only in case") {
		t.Errorf("app Notes beside notes: %d %s", r.Status, r.Body)
	}
	if r := studio.c.Must(t, "DELETE", "/v1/apps/notes", nil); r.Status != 204 {
		t.Errorf("delete: %d", r.Status)
	}
	if r := studio.c.Must(t, "DELETE", "/v1/apps/notes", nil); r.Status != 404 {
		t.Errorf("second delete: %d", r.Status)
	}
}

func readDetail(t *testing.T, resp *http.Response) string {
	t.Helper()
	var v struct{ Detail string }
	if err := jsonDecode(resp.Body, &v); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	return v.Detail
}

// TestUnknownApp: a call to an app the peer does not have is refused at the
// peer before any receipt; the caller records it as not carried out.
func TestUnknownApp(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, nil)
	for _, method := range []string{"GET", "POST"} {
		r := laptop.c.Must(t, method, "/v1/peers/studio/ghost/x", nil, "X-Delta-Request-Id", "ghost-"+method)
		if r.Status != 404 || r.Outcome() != "not_found" || !strings.Contains(r.Err.Detail, `no app "ghost" is registered on studio`) {
			t.Fatalf("%s: %d %q %q", method, r.Status, r.Outcome(), r.Err.Detail)
		}
	}
	call := laptop.c.GetCall(t, "ghost-POST", 0)
	if call.State != "unavailable" || call.Outcome != "not_found" || !strings.Contains(call.Detail, "nothing was carried out") {
		t.Errorf("call recorded as %s/%s: %s", call.State, call.Outcome, call.Detail)
	}
	if rs, _ := studio.g.Journal().Receipts().List(context.Background()); len(rs) != 0 {
		t.Errorf("studio wrote %d receipts for an unknown app", len(rs))
	}
}

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// TestStreamedCallOverTheLimit: a call whose body has no length (chunked)
// and grows past this computer's max_call_bytes is cut at the limit. Its
// first bytes have left by then, but the owner gives its app a streamed
// body only whole, with the caller's count of it, which a cut body never
// has: the app is told 413 bad_request, carried_out false, at once, and
// the journal says not_carried_out; studio's app sees nothing (issue 63,
// U6: it was told outcome_unknown).
func TestStreamedCallOverTheLimit(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, func(n *node) { n.cfg.MaxCallBytes = 8 << 20 })
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	body := &endless{}
	body.n.Store(9 << 20)
	req, _ := http.NewRequest("POST", laptop.c.URL+"/v1/peers/studio/notes/answer/big", io.NopCloser(body))
	req.ContentLength = -1 // chunked
	req.Header.Set("Authorization", "Bearer "+laptop.c.Token)
	req.Header.Set(localapi.HeaderRequestID, "big-1")
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatalf("the app got no answer: %v (%d bytes of its body read)", err, body.read.Load())
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var eb localapi.ErrorBody
	json.Unmarshal(b, &eb)
	if resp.StatusCode != 413 || resp.Header.Get(localapi.HeaderOutcome) != "bad_request" || eb.Guarantee() != localapi.NotCarried ||
		!strings.Contains(eb.Detail, "over the limit of 8388608 bytes") || !strings.HasSuffix(eb.Detail, "nothing was carried out") {
		t.Fatalf("a streamed call over the limit: %d %s %s", resp.StatusCode, resp.Header.Get(localapi.HeaderOutcome), b)
	}
	t.Logf("told: %s", eb.Detail)
	c, err := laptop.g.Journal().Calls().Get(context.Background(), "big-1")
	if err != nil || c.State != "not_carried_out" || c.Detail != eb.Detail {
		t.Errorf("its record: %v %+v", err, c)
	}
	if app.Requests() != 0 {
		t.Errorf("studio's app got %d requests", app.Requests())
	}
}
