package statuspage

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/localapi"
	"github.com/delta-roads/delta/gateway/proto"
	"github.com/delta-roads/delta/gateway/record"
	"github.com/delta-roads/delta/gateway/view"
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

// TestReceivedInPlainWords: a received call's state is said in plain
// words, with the precise term on hover, never the term alone.
func TestReceivedInPlainWords(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	snap := view.Snapshot{Self: localapi.Self{Name: "studio"}, Received: []view.Received{
		{CallerName: "laptop", RequestID: "r1", App: "notes", Method: "POST", Path: "/a", State: proto.ReceiptAppUnknown, ReceivedAt: now},
	}}
	d := pageData{Now: now, Snap: snap}
	d.Level, d.Headline = view.Overall(snap)
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, d); err != nil {
		t.Fatal(err)
	}
	row := buf.String()[strings.Index(buf.String(), `id="receipt-r1"`):]
	row = row[:strings.Index(row, "</tr>")]
	if !strings.Contains(row, `<b title="app_unknown">the app took it and its connection broke before it answered</b>`) {
		t.Errorf("the received call's state:\n%s", row)
	}
	if strings.Count(row, "app_unknown") != 1 {
		t.Errorf("the precise term shows other than on hover:\n%s", row)
	}
}

// TestReceiptToCheckCard: a received call to check is a card above the
// table, with its state and what to do, what it carried, and a form that
// needs the box ticked; one a person at the caller settled says so in the
// table.
func TestReceiptToCheckCard(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	snap := view.Snapshot{Self: localapi.Self{Name: "studio"}, Received: []view.Received{
		{CallerName: "laptop", Caller: "nodeL", RequestID: "r1", App: "notes", Method: "POST", Path: "/a", State: proto.ReceiptInterrupted, ReceivedAt: now, ToCheck: true,
			Request: &record.Request{Headers: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("pay <the> rent"), Size: 14}},
		{CallerName: "laptop", Caller: "nodeL", RequestID: "r2", App: "notes", Method: "POST", Path: "/b", State: proto.ReceiptAppUnknown, ReceivedAt: now,
			CallerSettled: "not_carried_out", CallerSettledAt: now, CallerSettledNote: "cancelled"},
	}}
	d := pageData{Now: now, Snap: snap, CSRF: "tok"}
	d.Level, d.Headline = view.Overall(snap)
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, d); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if d.Headline != "1 received call to check" || d.Level != view.Unsettled {
		t.Errorf("headline %q (%s)", d.Headline, d.Level)
	}
	card := page[strings.Index(page, `<div class="call tocheck" id="receipt-r1">`):]
	card = card[:strings.Index(card, "</form>")]
	for _, want := range []string{
		`<b title="interrupted">Delta restarted while the app worked on it: check the app</b>`,
		`<pre class="body">pay &lt;the&gt; rent</pre>`,
		`<th>Content-Type</th><td class="mono">text/plain </td>`,
		`action="/page/receipts/nodeL/r1/check"`, `name="csrf" value="tok"`, `name="checked" value="yes" required`,
	} {
		if !strings.Contains(card, want) {
			t.Errorf("the card lacks %s:\n%s", want, card)
		}
	}
	row := page[strings.Index(page, `<tr id="receipt-r2">`):]
	row = row[:strings.Index(row, "</tr>")]
	if !strings.Contains(row, "a person on laptop settled it: it did not happen (not carried out) (“cancelled”)") || strings.Contains(row, "check the app") {
		t.Errorf("the settled one:\n%s", row)
	}
}
