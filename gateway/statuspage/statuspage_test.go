package statuspage

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/localapi"
	"github.com/delta-roads/delta/gateway/proto"
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
	if !strings.Contains(row, `<b title="app_unknown">the app took it and its connection broke before it answered: check the app</b>`) {
		t.Errorf("the received call's state:\n%s", row)
	}
	if strings.Count(row, "app_unknown") != 1 {
		t.Errorf("the precise term shows other than on hover:\n%s", row)
	}
}
