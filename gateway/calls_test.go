package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/static"
	"github.com/delta-roads/delta/gateway/net/ticket"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
	"github.com/delta-roads/delta/ui"
)

// TestConcurrentSameRequestID: 50 calls with one request id at once
// through the caller's Delta reach the owner app exactly once; every other
// caller gets the recorded answer, marked replayed.
func TestConcurrentSameRequestID(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	const id, n = "same-id-50", 50

	var wg sync.WaitGroup
	results := make([]*gatewaytest.Response, n)
	for i := range n {
		wg.Go(func() {
			results[i] = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/hold/50", []byte("one body"), "X-Delta-Request-Id", id)
		})
	}
	<-app.Arrived() // the one forwarded request is at the app
	app.Release("/hold/50")
	wg.Wait()

	replayed := 0
	for i, r := range results {
		if r.Status != 201 || r.Outcome() != "answered" || string(r.Body) != "one body" {
			t.Errorf("caller %d: %d %q %s", i, r.Status, r.Outcome(), r.Body)
		}
		if r.Header.Get("X-Delta-Replayed") == "true" {
			replayed++
		}
	}
	if replayed != n-1 {
		t.Errorf("%d answers marked replayed, want %d", replayed, n-1)
	}
	studio.waitReceiptDone(t, "node-laptop", id)
	if got := app.RequestsFor(id); got != 1 {
		t.Errorf("the owner app saw %d requests, want exactly 1", got)
	}
}

// TestConcurrentAtOwner: 50 requests with one id sent straight to the
// owner's peer API (as if from 50 callers' Deltas sharing one identity):
// the app sees exactly one; the others get in_progress or the replay.
func TestConcurrentAtOwner(t *testing.T) {
	checkNoLeaks(t)
	_, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	tk := netKey.Mint(ticket.Claims{Node: "node-laptop", Name: "laptop", Expires: time.Now().Add(time.Minute)})
	const id, n = "owner-50", 50
	send := func() (int, string, string) {
		req, _ := http.NewRequest("POST", "http://"+studio.g.PeerAddr()+"/delta/v1/apps/notes/hold/owner", bytes.NewReader([]byte("b")))
		req.Header.Set("Authorization", "Delta "+tk)
		req.Header.Set("X-Delta-Request-Id", id)
		req.Header.Set("X-Delta-Digest", proto.Digest("POST", "notes", "/hold/owner", []byte("b")))
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Error(err)
			return 0, "", ""
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("X-Delta-Outcome"), resp.Header.Get("X-Delta-Replayed")
	}
	var wg sync.WaitGroup
	var answered, inProgress, replayed atomic.Int32
	record := func(status int, outcome, rep string) {
		switch {
		case status == 201 && outcome == "answered" && rep == "true":
			replayed.Add(1)
		case status == 201 && outcome == "answered":
			answered.Add(1)
		case status == 409 && outcome == "in_progress":
			inProgress.Add(1)
		default:
			t.Errorf("unexpected reply %d %q", status, outcome)
		}
	}
	wg.Go(func() { record(send()) })
	<-app.Arrived()
	for range n - 1 {
		wg.Go(func() { record(send()) })
	}
	// Release once the others have been refused or are waiting: half are
	// sent while the first is held, the rest race with its answer.
	app.Release("/hold/owner")
	wg.Wait()
	if answered.Load() != 1 || answered.Load()+inProgress.Load()+replayed.Load() != n {
		t.Errorf("answered %d, in_progress %d, replayed %d; want 1 answered and %d in all", answered.Load(), inProgress.Load(), replayed.Load(), n)
	}
	if got := app.RequestsFor(id); got != 1 {
		t.Errorf("the owner app saw %d requests, want exactly 1", got)
	}
}

// flakyTickets hands out forged tickets for the first bad requests, then
// good ones.
type flakyTickets struct {
	bad  atomic.Int32
	good peerclient.Tickets
	asks atomic.Int32
}

func (f *flakyTickets) Ticket(ctx context.Context, peer string, renew bool) (string, error) {
	f.asks.Add(1)
	if f.bad.Add(-1) >= 0 {
		return "v1.eyJuIjoibm9kZS1sYXB0b3AifQ.Zm9yZ2Vk", nil
	}
	return f.good.Ticket(ctx, peer, renew)
}

// TestDoorRenewsOnce: a 401 at the peer's door makes the caller renew its
// ticket and send once more on a new connection; a second 401 is
// forbidden, and nothing was carried out.
func TestDoorRenewsOnce(t *testing.T) {
	checkNoLeaks(t)
	ft := &flakyTickets{good: &static.MintedTickets{Key: netKey, Self: localapi.Self{Name: "laptop", Node: "node-laptop"}, Now: time.Now}}
	laptop, studio := pair(t, func(n *node) {
		if n.name == "laptop" {
			n.cfg.Tickets = ft
		}
	})
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)

	ft.bad.Store(1)
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/door", []byte("x"), "X-Delta-Request-Id", "door-1")
	if r.Status != 201 || r.Outcome() != "answered" {
		t.Fatalf("one forged ticket: %d %q %s", r.Status, r.Outcome(), r.Body)
	}
	if got := app.RequestsFor("door-1"); got != 1 {
		t.Errorf("the owner app saw %d requests, want 1", got)
	}
	call := laptop.c.GetCall(t, "door-1", 0)
	if len(call.Attempts) != 2 || !strings.Contains(call.Attempts[0].Error, "401 unauthorized") || call.Attempts[1].Error != "" {
		t.Errorf("attempts %+v; want a door refusal, then success", call.Attempts)
	}

	ft.bad.Store(2)
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/door", []byte("x"), "X-Delta-Request-Id", "door-2")
	if r.Status != 403 || r.Outcome() != "forbidden" || !strings.Contains(r.Err.Detail, "refused us at its door twice") || !strings.Contains(r.Err.Detail, "not carried out") {
		t.Fatalf("two forged tickets: %d %q %s", r.Status, r.Outcome(), r.Err.Detail)
	}
	if got := app.RequestsFor("door-2"); got != 0 {
		t.Errorf("the owner app saw %d requests, want 0", got)
	}
	if call := laptop.c.GetCall(t, "door-2", 0); call.State != "unavailable" || call.Outcome != "forbidden" {
		t.Errorf("call recorded as %s/%s", call.State, call.Outcome)
	}

	ft.bad.Store(1)
	r = laptop.c.Must(t, "GET", "/v1/peers/studio/notes/read", nil)
	if r.Status != 200 || r.Outcome() != "answered" {
		t.Fatalf("read with one forged ticket: %d %q %s", r.Status, r.Outcome(), r.Body)
	}
	ft.bad.Store(2)
	r = laptop.c.Must(t, "GET", "/v1/peers/studio/notes/read", nil)
	if r.Status != 403 || r.Outcome() != "forbidden" {
		t.Fatalf("read with two forged tickets: %d %q %s", r.Status, r.Outcome(), r.Body)
	}
}

// TestRoadRecovery: a lan road that refuses is dropped and one freshly
// chosen road carries the request; a pinned road never detours. The route
// book then believes the lan road down: the read after the call does not
// dial it again (one fall-back in all, the call's).
func TestRoadRecovery(t *testing.T) {
	checkNoLeaks(t)
	dead := gatewaytest.DeadAddr(t)
	laptop, studio := pair(t, func(n *node) {
		if n.name == "laptop" {
			n.peers(map[string]map[string]string{"studio": {"lan": dead, "tailnet": n.otherAddr}})
		}
	})
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)

	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/r", []byte("x"), "X-Delta-Request-Id", "recover-1")
	if r.Status != 201 || r.Header.Get("X-Delta-Route") != "tailnet" {
		t.Fatalf("call: %d via %q: %s", r.Status, r.Header.Get("X-Delta-Route"), r.Body)
	}
	call := laptop.c.GetCall(t, "recover-1", 0)
	if len(call.Attempts) != 2 || call.Attempts[0].Road != "lan" || call.Attempts[0].FirstByte ||
		call.Attempts[1].Road != "tailnet" || !call.Attempts[1].FirstByte {
		t.Errorf("attempts %+v; want lan (nothing written), then tailnet", call.Attempts)
	}

	lanConnects := func() uint64 {
		var st localapi.Status
		json.Unmarshal(laptop.c.Must(t, "GET", "/v1/status", nil).Body, &st)
		return st.Counters.Counters["road_connects_lan"]
	}
	before := lanConnects()
	r = laptop.c.Must(t, "GET", "/v1/peers/studio/notes/x", nil)
	if r.Status != 200 || r.Header.Get("X-Delta-Route") != "tailnet" {
		t.Fatalf("read: %d via %q: %s", r.Status, r.Header.Get("X-Delta-Route"), r.Body)
	}
	if after := lanConnects(); after != before {
		t.Errorf("the read dialled the lan road that had just refused (%d connects, then %d)", before, after)
	}

	for _, method := range []string{"GET", "POST"} {
		body := map[string][]byte{"GET": nil, "POST": []byte("x")}[method] // a read has no body
		r = laptop.c.Must(t, method, "/v1/peers/studio/notes/answer/pinned", body, "X-Delta-Route", "lan", "X-Delta-Request-Id", "pinned-"+method)
		if r.Status != 503 || r.Outcome() != "unavailable" || r.Err.Road != "lan" || !strings.Contains(r.Err.Detail, "connection refused") {
			t.Errorf("%s pinned to a dead lan: %d %q %+v", method, r.Status, r.Outcome(), r.Err)
		}
		if method == "POST" && !strings.HasSuffix(r.Err.Detail, "nothing was sent to studio") {
			t.Errorf("detail %q does not end with \"nothing was sent to studio\"", r.Err.Detail)
		}
	}
	if app.RequestsFor("pinned-POST") != 0 {
		t.Errorf("a pinned call detoured to the owner app")
	}
	st := laptop.c.Must(t, "GET", "/v1/status", nil)
	if !strings.Contains(string(st.Body), `"route_fallbacks": 1`) {
		t.Errorf("status does not count 1 route fallback: %s", st.Body)
	}
	m := laptop.c.Must(t, "GET", "/metrics", nil)
	if !strings.Contains(string(m.Body), "delta_route_fallbacks_total 1") || !strings.Contains(string(m.Body), `delta_calls_total{outcome="answered"} 1`) {
		t.Errorf("metrics: %s", m.Body)
	}
}

// TestListDismissAsk covers the calls API around an unknown call.
func TestListDismissAsk(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/reset-after-read/l", []byte("x"), "X-Delta-Request-Id", "list-1", "X-Delta-App", "editor")
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if call := laptop.c.GetCall(t, "list-1", 30); call.State != "needs_person" || call.CallerApp != "editor" {
		t.Fatalf("call %s (caller app %q)", call.State, call.CallerApp)
	}
	list := laptop.c.Must(t, "GET", "/v1/calls?state=unsettled", nil)
	if !strings.Contains(string(list.Body), `"request_id": "list-1"`) {
		t.Errorf("unsettled list lacks the call: %s", list.Body)
	}
	if r := laptop.c.Must(t, "POST", "/v1/calls/list-1/ask", nil); r.Status != 200 || !strings.Contains(string(r.Body), `"state": "needs_person"`) {
		t.Errorf("ask: %d %s", r.Status, r.Body)
	}
	// A call that needs a person cannot be set aside (issue "What a
	// person sees": setting aside means "keep asking", never "hide it").
	if r := laptop.c.Must(t, "POST", "/v1/calls/list-1/dismiss", nil); r.Status != 409 || !strings.Contains(r.Err.Detail, "needs a person") {
		t.Errorf("dismiss a call that needs a person: %d %s", r.Status, r.Body)
	}
	list = laptop.c.Must(t, "GET", "/v1/calls?state=unsettled", nil)
	if !strings.Contains(string(list.Body), "list-1") {
		t.Errorf("a call that needs a person left the unsettled list: %s", list.Body)
	}
	for _, p := range []string{"/v1/calls/nope", "/v1/calls/nope/ask", "/v1/calls/nope/dismiss"} {
		method := "POST"
		if p == "/v1/calls/nope" {
			method = "GET"
		}
		if r := laptop.c.Must(t, method, p, nil); r.Status != 404 || !strings.Contains(r.Err.Detail, `"nope"`) {
			t.Errorf("%s %s: %d %s", method, p, r.Status, r.Body)
		}
	}
	if r := laptop.c.Must(t, "GET", "/v1/calls?state=bogus", nil); r.Status != 400 {
		t.Errorf("state=bogus: %d", r.Status)
	}
	// An answered call cannot be asked about.
	laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/l", []byte("x"), "X-Delta-Request-Id", "list-2")
	if r := laptop.c.Must(t, "POST", "/v1/calls/list-2/ask", nil); r.Status != 409 || !strings.Contains(r.Err.Detail, "answered") {
		t.Errorf("ask on an answered call: %d %s", r.Status, r.Body)
	}
	// A minted request id is returned.
	r = laptop.c.Must(t, "DELETE", "/v1/peers/studio/notes/answer/l", nil)
	if id := r.Header.Get("X-Delta-Request-Id"); len(id) != 36 {
		t.Errorf("minted request id %q is not a UUID", id)
	}
}

// TestDismissedCallComesBack: a call set aside while its outcome is
// unknown, which then comes to need a person (its owner's app took it and
// broke off), comes back: the unsettled list, /v1/status's count, the
// headline and the menu all show it, and it is no longer set aside. While
// it was set aside, the summaries said so instead of "none".
func TestDismissedCallComesBack(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, func(n *node) {
		if n.name == "laptop" {
			n.cfg.Backoff = []time.Duration{time.Hour} // asked only when a person asks
		}
	})
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	status := func() localapi.Status {
		var st localapi.Status
		json.Unmarshal(laptop.c.Must(t, "GET", "/v1/status", nil).Body, &st)
		return st
	}
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/reset-after-read/b", []byte("x"), "X-Delta-Request-Id", "back-1")
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := laptop.c.Must(t, "POST", "/v1/calls/back-1/dismiss", nil); r.Status != 200 || !strings.Contains(string(r.Body), `"dismissed": true`) {
		t.Fatalf("dismiss the unknown call: %d %s", r.Status, r.Body)
	}
	// Set aside: out of the unsettled list, and every summary says so.
	if st := status(); st.Unsettled != 0 || st.Dismissed != 1 {
		t.Errorf("set aside: status counts %d unsettled, %d set aside; want 0 and 1", st.Unsettled, st.Dismissed)
	}
	if list := laptop.c.Must(t, "GET", "/v1/calls?state=dismissed", nil); !strings.Contains(string(list.Body), "back-1") {
		t.Errorf("the set-aside list lacks the call: %s", list.Body)
	}
	snap, err := laptop.g.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, head := view.Overall(snap); !strings.Contains(head, "1 set aside") {
		t.Errorf("headline %q while a call is set aside: it must say so", head)
	}
	if m := ui.Build(snap, time.Now()); !menuHas(m.Items, "Nothing needs you (1 set aside") {
		t.Errorf("the menu does not say a call is set aside")
	}

	// A person asks now: the owner says its app broke off, so the call
	// needs a person, and comes back.
	if r := laptop.c.Must(t, "POST", "/v1/calls/back-1/ask", nil); r.Status != 200 || !strings.Contains(string(r.Body), `"state": "needs_person"`) {
		t.Fatalf("ask: %d %s", r.Status, r.Body)
	}
	c := laptop.c.GetCall(t, "back-1", 0)
	if c.State != "needs_person" || c.Dismissed || c.DismissedBy != "" {
		t.Errorf("after it came to need a person: %s, dismissed %v (by %q)", c.State, c.Dismissed, c.DismissedBy)
	}
	if st := status(); st.Unsettled != 1 || st.Dismissed != 0 || st.NeedsYou != 1 {
		t.Errorf("status counts %d unsettled (%d needing a person), %d set aside; want 1 (1) and 0", st.Unsettled, st.NeedsYou, st.Dismissed)
	}
	if list := laptop.c.Must(t, "GET", "/v1/calls?state=unsettled", nil); !strings.Contains(string(list.Body), "back-1") {
		t.Errorf("the unsettled list lacks the call that needs a person: %s", list.Body)
	}
	if snap, err = laptop.g.Snapshot(t.Context()); err != nil {
		t.Fatal(err)
	}
	if level, head := view.Overall(snap); level != view.NeedsYou || head != "1 write needs you" {
		t.Errorf("headline: %s %q, want needs-you \"1 write needs you\"", level, head)
	}
	m := ui.Build(snap, time.Now())
	if m.Level != view.NeedsYou || !menuHas(m.Items, "Needs you (1)") || menuHas(m.Items, "    Dismiss…") {
		t.Errorf("menu: level %s; want needs-you, \"Needs you (1)\", and no Dismiss… for a call that needs a person", m.Level)
	}
	hist, err := laptop.g.History(t.Context(), "back-1")
	if err != nil || len(hist) == 0 || hist[len(hist)-1].State != record.NeedsPerson || hist[len(hist)-1].Dismissed {
		t.Errorf("history %+v %v: want the last step needs_person, not set aside", hist, err)
	}
}

// menuHas reports whether a menu item's title starts with prefix.
func menuHas(items []ui.Item, prefix string) bool {
	for _, it := range items {
		if strings.HasPrefix(it.Title, prefix) || menuHas(it.Children, prefix) {
			return true
		}
	}
	return false
}
