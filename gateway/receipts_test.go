package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// receiptOf reads studio's receipt id through its local API.
func receiptOf(t *testing.T, n *node, id string) localapi.Receipt {
	t.Helper()
	r := n.c.Must(t, "GET", "/v1/receipts/"+id, nil)
	var v struct{ Receipts []localapi.Receipt }
	if err := json.Unmarshal(r.Body, &v); r.Status != 200 || err != nil || len(v.Receipts) != 1 {
		t.Fatalf("GET /v1/receipts/%s: %d %s", id, r.Status, r.Body)
	}
	return v.Receipts[0]
}

func headline(t *testing.T, n *node) string {
	t.Helper()
	s, err := n.g.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, h := view.Overall(s)
	return h
}

// TestReceiptsRoundTrip, through two Deltas (issue 25 §2): the owner keeps
// what a call carried and shows it; its receipt is one to check, and its
// headline says so; when the caller's person settles the call, the
// caller's Delta tells the owner, which records who settled it and how and
// stops listing it to check; a person at the owner can mark another one
// checked.
func TestReceiptsRoundTrip(t *testing.T) {
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	secret := studio.register(t, "notes", app.URL)

	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/reset-after-read/rent", []byte(`{"text":"pay the rent"}`),
		"X-Delta-Request-Id", "rt-1", "Content-Type", "application/json", "Authorization", "Bearer "+laptop.g.Token(), "X-Delta-App", "editor")
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	c := laptop.c.GetCall(t, "rt-1", 10)
	if c.State != "needs_person" {
		t.Fatalf("state %s, want needs_person", c.State)
	}

	// The owner shows what it received.
	rc := receiptOf(t, studio, "rt-1")
	if rc.State != "app_unknown" || !rc.ToCheck || rc.Caller != "laptop" || rc.Digest != c.Digest {
		t.Fatalf("studio's receipt: %+v (the call's digest %s)", rc, c.Digest)
	}
	if rc.Request == nil || string(rc.Request.Body) != `{"text":"pay the rent"}` || rc.Request.Size != 23 || rc.Request.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("what studio kept of the call: %+v", rc.Request)
	}
	for _, h := range []string{"Authorization", "X-Delta-Forward-Secret", "X-Delta-Digest"} {
		if v := rc.Request.Header.Get(h); v != "" {
			t.Errorf("studio kept %s: %q", h, v)
		}
	}
	if strings.Contains(string(studio.c.Must(t, "GET", "/v1/receipts", nil).Body), secret) {
		t.Error("studio's receipts show the app's forward secret")
	}
	if h := headline(t, studio); h != "1 received call to check" {
		t.Errorf("studio's headline: %q", h)
	}

	// The caller's person settles it; studio hears of it.
	if r := laptop.c.Must(t, "POST", "/v1/calls/rt-1/settle", []byte(`{"state": "carried_out", "note": "the rent is in the notes"}`)); r.Status != 200 {
		t.Fatalf("settle: %d %s", r.Status, r.Body)
	}
	gatewaytest.WaitFor(t, 10*time.Second, "studio to hear of laptop's settlement", func() bool {
		return receiptOf(t, studio, "rt-1").CallerSettled != nil
	})
	rc = receiptOf(t, studio, "rt-1")
	if s := rc.CallerSettled; s.State != "carried_out" || s.Note != "the rent is in the notes" || rc.ToCheck || rc.State != "app_unknown" {
		t.Fatalf("studio's receipt after laptop's settlement: %+v %+v", rc, s)
	}
	if h := headline(t, studio); strings.Contains(h, "to check") {
		t.Errorf("studio's headline after laptop's settlement: %q", h)
	}
	// laptop records that it told studio once studio has answered.
	gatewaytest.WaitFor(t, 10*time.Second, "laptop to record that studio was told", func() bool {
		untold, err := laptop.g.Journal().Calls().UntoldSettlements(context.Background(), "")
		return err == nil && len(untold) == 0
	})

	// A person at studio checks another one.
	if r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/reset-after-read/b", []byte("second"), "X-Delta-Request-Id", "rt-2"); r.Outcome() != "outcome_unknown" {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	studio.waitReceiptDone(t, "node-laptop", "rt-2")
	for _, bad := range []string{`{"note": 1}`, `{"note": "` + strings.Repeat("x", 1001) + `"}`, `{"other": ""}`} {
		if r := studio.c.Must(t, "POST", "/v1/receipts/rt-2/check", []byte(bad)); r.Status != 400 {
			t.Errorf("check %s: %d %s", bad, r.Status, r.Body)
		}
	}
	if r := studio.c.Must(t, "POST", "/v1/receipts/nope/check", []byte(`{}`)); r.Status != 404 || !strings.Contains(string(r.Body), "received no call nope") {
		t.Errorf("check an unknown id: %d %s", r.Status, r.Body)
	}
	if r := studio.c.Must(t, "POST", "/v1/receipts/rt-2/check", []byte(`{"caller": "kitchen"}`)); r.Status != 404 || !strings.Contains(string(r.Body), "from laptop, not from kitchen") {
		t.Errorf("check naming another caller: %d %s", r.Status, r.Body)
	}
	r = studio.c.Must(t, "POST", "/v1/receipts/rt-2/check", []byte(`{"note": "not in the app: never happened"}`))
	var checked localapi.Receipt
	if json.Unmarshal(r.Body, &checked); r.Status != 200 || checked.Checked == nil || checked.Checked.By != "the local API" || checked.ToCheck {
		t.Fatalf("check: %d %s", r.Status, r.Body)
	}
	if h := headline(t, studio); strings.Contains(h, "to check") {
		t.Errorf("studio's headline after its person checked: %q", h)
	}
	// Checked again: refused, naming the first check, which stands.
	r = studio.c.Must(t, "POST", "/v1/receipts/rt-2/check", []byte(`{"note": "again"}`))
	if r.Status != 409 || r.Outcome() != "conflict" || !strings.Contains(string(r.Body), `checked already`) || !strings.Contains(string(r.Body), `not in the app: never happened`) {
		t.Fatalf("check again: %d %s", r.Status, r.Body)
	}
	r = studio.c.Must(t, "GET", "/v1/receipts/rt-2", nil)
	if !strings.Contains(string(r.Body), `"note": "not in the app: never happened"`) || strings.Contains(string(r.Body), `"again"`) {
		t.Fatalf("after a refused second check: %s", r.Body)
	}

	// On studio's page: the card of a call to check shows what it
	// carried, and its form marks it checked.
	if r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/reset-after-read/d", []byte("fourth, in plain text"), "X-Delta-Request-Id", "rt-4"); r.Outcome() != "outcome_unknown" {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	studio.waitReceiptDone(t, "node-laptop", "rt-4")
	base := studio.g.LocalURL()
	// `delta open --receipt rt-4`'s link logs in and opens the card.
	resp, _ := pageDo(t, "GET", view.PageAt(studio.g.LoginLink(), "receipt-rt-4", "receipt-rt-4"), nil, nil)
	loc := resp.Header.Get("Location")
	page, open, _ := strings.Cut(loc, "?")
	if !strings.HasPrefix(page, "/s/") || open != "open=receipt-rt-4" {
		t.Errorf("the login link with a card to open sends the browser to %q", loc)
	}
	page = base + page
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "delta_session" {
			cookie = c
		}
	}
	_, body := pageDo(t, "GET", page+"?open=receipt-rt-4", cookie, nil)
	card := body[strings.Index(body, `<div class="card" id="receipt-rt-4">`):]
	card = card[:strings.Index(card, "</form>")]
	if !strings.Contains(body, "1 received call to check") || !strings.Contains(card, `<pre class="body">fourth, in plain text</pre>`) ||
		!strings.Contains(card, `action="`+strings.TrimPrefix(page, base)+`page/receipts/node-laptop/rt-4/check"`) {
		t.Fatalf("studio's page, the call to check:\n%s", card)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(card)[1]
	check := page + "page/receipts/node-laptop/rt-4/check"
	if resp, body := pageDo(t, "POST", check, cookie, url.Values{"csrf": {csrf}}, "Origin", base); resp.StatusCode != 400 || !strings.Contains(body, "I checked") {
		t.Errorf("checked without the box ticked: %d %s", resp.StatusCode, body)
	}
	if resp, _ := pageDo(t, "POST", check, cookie, url.Values{"csrf": {"guess"}, "checked": {"yes"}}, "Origin", base); resp.StatusCode != 403 {
		t.Errorf("checked with a wrong CSRF token: %d", resp.StatusCode)
	}
	if receiptOf(t, studio, "rt-4").Checked != nil {
		t.Fatal("a refused form checked the receipt")
	}
	if resp, _ := pageDo(t, "POST", check, cookie, url.Values{"csrf": {csrf}, "checked": {"yes"}, "note": {"the app has it"}}, "Origin", base); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("check from the page: %d", resp.StatusCode)
	}
	if rc := receiptOf(t, studio, "rt-4"); rc.Checked == nil || rc.Checked.By != "the status page" || rc.Checked.Note != "the app has it" || rc.ToCheck {
		t.Fatalf("after the page's check: %+v", rc)
	}
	_, body = pageDo(t, "GET", page, cookie, nil)
	if _, open := pageDo(t, "GET", page+"?open=receipt-rt-1", cookie, nil); !strings.Contains(open, "A person on laptop settled it: it happened (carried out) (“the rent is in the notes”)") {
		t.Errorf("studio's page, the card of the call laptop's person settled:\n%s", open)
	}
	if strings.Contains(body, "call to check") || strings.Contains(body, "check the app") || !strings.Contains(body, "is marked checked by you") ||
		!strings.Contains(body, `title="app_unknown">settled on laptop</span>`) || !strings.Contains(body, `title="app_unknown">checked</span>`) {
		t.Errorf("studio's page after the checks:\n%s", body[strings.Index(body, "<h2>Received"):])
	}

	// A call the app is still working on cannot be checked.
	if r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/hold/h", []byte("x"), "X-Delta-Request-Id", "rt-3", "X-Delta-Timeout", "0.3"); r.Outcome() != "outcome_unknown" {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	if r := studio.c.Must(t, "POST", "/v1/receipts/rt-3/check", []byte(`{}`)); r.Status != 409 || !strings.Contains(string(r.Body), "it is running") {
		t.Errorf("check a running call: %d %s", r.Status, r.Body)
	}
	app.Release("/hold/h")
	studio.waitReceiptDone(t, "node-laptop", "rt-3")

	// On laptop, a write that named no app (rt-2, sent by Go's client
	// without X-Delta-App) is named by its User-Agent wherever it is
	// listed: settled recently, and among the recent writes.
	if r := laptop.c.Must(t, "POST", "/v1/calls/rt-2/settle", []byte(`{"state": "not_carried_out"}`)); r.Status != 200 {
		t.Fatalf("settle rt-2: %d %s", r.Status, r.Body)
	}
	snap, err := laptop.g.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, c := range append(append([]*record.Call{}, snap.Settled...), snap.Recent...) {
		if c.RequestID == "rt-2" {
			if got := view.AppName(c); got != "Go-http-client" {
				t.Errorf("rt-2 is named %q, want Go-http-client (its User-Agent)", got)
			}
			named++
		}
	}
	if named != 2 {
		t.Errorf("rt-2 is listed %d times among the settled and recent writes, want 2", named)
	}
}

// TestCappedListsSayOrMore: when a snapshot lists fewer calls than there
// are, the counts a person reads say "at least", never the cap as if it
// were all.
func TestCappedListsSayOrMore(t *testing.T) {
	laptop, studio := pair(t, func(n *node) { n.cfg.Backoff = []time.Duration{time.Hour} })
	gateway.CapLists(t, 2, 1, 1)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	for _, id := range []string{"cap-1", "cap-2", "cap-3"} {
		if r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/hold/"+id, []byte("x"), "X-Delta-Request-Id", id, "X-Delta-Timeout", "0.2"); r.Outcome() != "outcome_unknown" {
			t.Fatalf("%s: %d %s", id, r.Status, r.Body)
		}
	}
	defer app.ReleaseAll()
	snap, err := laptop.g.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, head := view.Overall(snap); len(snap.Unsettled) != 2 || !snap.UnsettledMore || head != "Asking studio about at least 2 writes" {
		t.Errorf("3 unsettled, 2 listed: %d listed, more %v, headline %q", len(snap.Unsettled), snap.UnsettledMore, head)
	}
}
