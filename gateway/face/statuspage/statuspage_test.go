package statuspage

import (
	"bytes"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// TestOldErrorShownAsOld: a road that is up shows its last error folded
// away as an earlier one, with its age; a road that is down shows it as
// it is, with its age.
func TestOldErrorShownAsOld(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	snap := view.Snapshot{Self: localapi.Self{Name: "laptop"}, Peers: []localapi.PeerStatus{{Name: "studio", Road: "lan", Roads: []localapi.RoadStatus{
		{Road: "lan", Address: "192.168.1.20:7422", State: localapi.RoadUp, LastError: "dial tcp: i/o timeout (the lan probe)", LastErrorAt: now.Add(-3 * time.Minute)},
		{Road: "thunderbolt", Address: "169.254.1.2:7422", State: localapi.RoadDown, LastError: "connect: no route to host", LastErrorAt: now.Add(-5 * time.Second)},
	}}}}
	d := pageData{Now: now, Snap: snap}
	d.Level, d.Headline = view.Overall(snap)
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, d); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	up := page[strings.Index(page, "192.168.1.20:7422"):strings.Index(page, "169.254.1.2:7422")]
	if !strings.Contains(up, `<details class="olderror muted"><summary>an earlier error, 3 min ago; the road is up now</summary>dial tcp: i/o timeout`) {
		t.Errorf("the road that is up does not fold its old error away:\n%s", up)
	}
	down := page[strings.Index(page, "169.254.1.2:7422"):]
	if strings.Contains(down[:strings.Index(down, "</tr>")], "olderror") || !strings.Contains(down, "<td>connect: no route to host<br><span class=\"muted nowrap\">5 s ago, at ") {
		t.Errorf("the road that is down does not show its error as it is:\n%.600s", down)
	}
}

// render draws the page for snap, with open the card shown open.
func render(t *testing.T, snap view.Snapshot, now time.Time, open string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, newPageData(snap, now, "/s/KEY/", "tok", open)); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// card cuts the card with id out of page.
func card(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `<div class="card" id="`+id+`">`)
	if i < 0 {
		t.Fatalf("no card %s in the page", id)
	}
	c := page[i:]
	if j := strings.Index(c[1:], `<div class="card" id=`); j >= 0 {
		c = c[:j+1]
	}
	return c
}

// TestReceivedInPlainWords: a received call's state is said in plain
// words, with the precise term on hover, never the term alone.
func TestReceivedInPlainWords(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	snap := view.Snapshot{Self: localapi.Self{Name: "studio"}, Received: []view.Received{
		{CallerName: "laptop", RequestID: "r1", App: "notes", Method: "POST", Path: "/a", State: proto.ReceiptAppUnknown, ReceivedAt: now},
	}}
	row := card(t, render(t, snap, now, "receipt-r1"), "receipt-r1")
	if !strings.Contains(row, `<b title="app_unknown">the app took it and its connection broke before it answered</b>`) {
		t.Errorf("the received call's state:\n%s", row)
	}
	if strings.Count(row, "app_unknown") != 2 { // on hover, on the line and in the card
		t.Errorf("the precise term shows other than on hover:\n%s", row)
	}
	if strings.Contains(row, ">app_unknown<") {
		t.Errorf("the precise term shows as text:\n%s", row)
	}
}

// TestReceiptToCheckCard: a received call to check is a one-line card
// under "Needs you" with its one action; open, it shows its state and what
// to do, what it carried, and a form that needs the box ticked; one a
// person at the caller settled says so, under Received.
func TestReceiptToCheckCard(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	snap := view.Snapshot{Self: localapi.Self{Name: "studio"}, Received: []view.Received{
		{CallerName: "laptop", Caller: "nodeL", RequestID: "r1", App: "notes", Method: "POST", Path: "/a", State: proto.ReceiptInterrupted, ReceivedAt: now, ToCheck: true,
			Request: &record.Request{Headers: http.Header{"Content-Type": {"text/plain"}, "X-Delta-Request-Id": {"r1"}}, Body: []byte("pay <the> rent"), Size: 14}},
		{CallerName: "laptop", Caller: "nodeL", RequestID: "r2", App: "notes", Method: "POST", Path: "/b", State: proto.ReceiptAppUnknown, ReceivedAt: now,
			CallerSettled: "not_carried_out", CallerSettledAt: now, CallerSettledNote: "cancelled"},
	}}
	if lvl, head := view.Overall(snap); head != "1 received call to check" || lvl != view.NeedsYou {
		t.Errorf("headline %q (%s)", head, lvl)
	}
	page := render(t, snap, now, "")
	needs := page[strings.Index(page, `>Needs you <span`):strings.Index(page, `>Delta is asking <span`)]
	closed := card(t, needs, "receipt-r1")
	if !strings.Contains(closed, `href="/s/KEY/?open=receipt-r1#check-r1">Check…</a>`) || strings.Contains(closed, "<form") || !strings.Contains(needs, `<span class="count">1</span>`) {
		t.Errorf("the closed card:\n%s", closed)
	}
	if !strings.Contains(page, `<meta http-equiv="refresh" content="5">`) || !strings.Contains(page, `<link rel="icon" type="image/png" href="data:image/png;base64,`) {
		t.Error("the page neither refreshes itself nor has its favicon")
	}
	page = render(t, snap, now, "receipt-r1")
	if strings.Contains(page, `http-equiv="refresh"`) {
		t.Error("the page refreshes itself while a card is open")
	}
	open := card(t, page, "receipt-r1")
	for _, want := range []string{
		`<b title="interrupted">Delta restarted while the app worked on it: check the app</b>`,
		`<pre class="body">pay &lt;the&gt; rent</pre>`,
		`<th>Content-Type</th><td class="mono">text/plain </td>`,
		`action="/s/KEY/page/receipts/nodeL/r1/check"`, `name="csrf" value="tok"`, `name="checked" value="yes" required`,
	} {
		if !strings.Contains(open, want) {
			t.Errorf("the open card lacks %s:\n%s", want, open)
		}
	}
	if strings.Contains(open, "X-Delta-Request-Id") {
		t.Errorf("the open card shows Delta's own headers:\n%s", open)
	}
	settled := card(t, render(t, snap, now, "receipt-r2"), "receipt-r2")
	if !strings.Contains(settled, "settled on laptop") || !strings.Contains(settled, "A person on laptop settled it: it did not happen (not carried out) (“cancelled”)") || strings.Contains(settled, "check the app") {
		t.Errorf("the settled one:\n%s", settled)
	}
}

// TestCallsGrouped: the calls are grouped by what a person must do, each
// one line with its one action, in plain words with the term on hover;
// the app is named by its User-Agent when it gave no X-Delta-App.
func TestCallsGrouped(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	curl := &record.Request{Headers: http.Header{"User-Agent": {"curl/8.1.2"}}}
	snap := view.Snapshot{Self: localapi.Self{Name: "laptop"},
		Unsettled: []*record.Call{
			{RequestID: "n1", Peer: "studio", App: "notes", Method: "POST", Path: "/a", State: record.NeedsPerson, CreatedAt: now.Add(-3 * time.Minute), CallerApp: "editor"},
			{RequestID: "u1", Peer: "studio", App: "notes", Method: "PUT", Path: "/b", State: record.Unknown, CreatedAt: now.Add(-time.Minute), Request: curl},
		},
		Dismissed: []*record.Call{{RequestID: "d1", Peer: "nas", App: "photos", Method: "POST", Path: "/c", State: record.Unknown, Dismissed: true, CreatedAt: now}},
		Settled:   []*record.Call{{RequestID: "s1", Peer: "studio", App: "notes", Method: "POST", Path: "/d", State: record.CarriedOut, SettledBy: "a person", CreatedAt: now}},
	}
	page := render(t, snap, now, "")
	needs := page[strings.Index(page, `>Needs you <span`):strings.Index(page, `>Delta is asking <span`)]
	asking := page[strings.Index(page, `>Delta is asking <span`):strings.Index(page, `<h2>Peers</h2>`)]
	settled := page[strings.Index(page, `<h2>Settled recently`):strings.Index(page, `<h2>Registered apps`)]
	n1 := card(t, needs, "call-n1")
	if !strings.Contains(n1, `<b>editor</b> → notes on studio`) || !strings.Contains(n1, `<span class="state needs" title="needs_person">needs you</span>`) ||
		!strings.Contains(n1, `3 min ago`) || !strings.Contains(n1, `>Settle…</a>`) || strings.Contains(n1, "Ask now") {
		t.Errorf("the call that needs you:\n%s", n1)
	}
	u1 := card(t, asking, "call-u1")
	if !strings.Contains(u1, `<b>curl</b> → notes on studio`) || !strings.Contains(u1, `title="unknown">outcome unknown</span>`) || !strings.Contains(u1, `<button type="submit">Ask now</button>`) {
		t.Errorf("the call Delta asks about:\n%s", u1)
	}
	if d1 := card(t, asking, "call-d1"); !strings.Contains(d1, "outcome unknown, set aside") || !strings.Contains(d1, "<b>an app</b>") {
		t.Errorf("the call set aside:\n%s", d1)
	}
	if s1 := card(t, settled, "call-s1"); !strings.Contains(s1, "carried out by a person") || strings.Contains(s1, "<form") {
		t.Errorf("the call settled:\n%s", s1)
	}
	if !strings.Contains(needs, `<span class="count">1</span>`) || !strings.Contains(asking, `<span class="count">2</span>`) {
		t.Errorf("the groups' counts:\n%s\n%s", needs[:200], asking[:200])
	}
	// A capped list's count says so.
	snap.SettledMore = true
	if page := render(t, snap, now, ""); !strings.Contains(page, `Settled recently <span class="count">1 or more</span>`) {
		t.Errorf("the capped list of settled writes counts them as if whole")
	}
	snap.SettledMore = false
	// Open, the card that needs you holds the settle form.
	n1 = card(t, render(t, snap, now, "call-n1"), "call-n1")
	if !strings.Contains(n1, `id="settle-n1"`) || !strings.Contains(n1, `href="/s/KEY/#call-n1"`) || !strings.Contains(n1, "▾") {
		t.Errorf("the open card:\n%s", n1)
	}
}

// TestBadgesAndColours: a count of nothing is not red; a call settled as
// not carried out is not shown in the colour of good news (issue 36).
func TestBadgesAndColours(t *testing.T) {
	for _, tc := range []struct {
		state record.CallState
		want  string
	}{{record.CarriedOut, "settled"}, {record.NotCarriedOut, "not-done"}, {record.NeedsPerson, "needs"}} {
		if got := funcs["statecls"].(func(record.CallState, bool) string)(tc.state, false); got != tc.want {
			t.Errorf("statecls(%s) = %q, want %q", tc.state, got, tc.want)
		}
	}
	if !strings.Contains(statusPageHTML, `<h2{{if or .NeedsYou .ToCheck}} class="needs"{{end}}>`) {
		t.Error(`"Needs you" is red whatever its count`)
	}
}

// TestListening: the page says whether each registered app listens now.
func TestListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if got := listening("http://" + addr); got != "listening" {
		t.Errorf("a listening app: %q", got)
	}
	ln.Close()
	if got := listening("http://" + addr); !strings.HasPrefix(got, "not listening: connection refused") {
		t.Errorf("an app gone: %q", got)
	}
}

// TestLastDropOnPage: the page's roads say when each was last dropped and
// why, or that it never was since Delta started.
func TestLastDropOnPage(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	snap := view.Snapshot{Self: localapi.Self{Name: "laptop"}, Peers: []localapi.PeerStatus{{Name: "studio", Road: "lan", Roads: []localapi.RoadStatus{
		{Road: "lan", Address: "192.168.1.20:7422", State: localapi.RoadUp, DroppedAt: now.Add(-2 * time.Minute), DroppedWhy: "the peer's Delta closed a connection that no app had ended: EOF", DropEvidence: "closed"},
		{Road: "tailnet", Address: "100.64.0.2:7421", State: localapi.RoadUp},
	}}}}
	page := render(t, snap, now, "")
	lan := page[strings.Index(page, "192.168.1.20:7422"):strings.Index(page, "100.64.0.2:7421")]
	if !strings.Contains(lan, `<td class="dropped">the peer&#39;s Delta closed a connection that no app had ended: EOF<br><span class="muted nowrap">2 min ago, at `) {
		t.Errorf("the lan road's last drop:\n%s", lan)
	}
	ts := page[strings.Index(page, "100.64.0.2:7421"):]
	if !strings.Contains(ts[:strings.Index(ts, "</tr>")], "never since Delta started") {
		t.Errorf("the tailnet road, never dropped:\n%.600s", ts)
	}
}
