package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
)

// TestSummariesSaySetAside: the status's summary line and a call's record
// are computed from the same data as what they sum up: "none" never hides
// a call set aside, and a call set aside before it was settled is not
// "still asked about".
func TestSummariesSaySetAside(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		unsettled, needs, dismissed int
		want, not                   string
	}{
		{0, 0, 0, "unsettled writes: none\n", "set aside"},
		{0, 0, 2, "unsettled writes: none that needs you\nset aside: 2, outcome not known yet", "unsettled writes: none\n"},
		{1, 0, 1, "unsettled writes: 1, Delta is asking their owners; nothing needs you (delta calls --unsettled)\nset aside: 1", "none\n"},
		{3, 1, 0, "unsettled writes: 3: 1 needs you, Delta is asking about the other 2 (delta calls --unsettled)", "nothing needs you"},
		// No "rest" when there is none (issue 36).
		{2, 2, 0, "unsettled writes: 2, and all need you (delta calls --unsettled)", "rest"},
		{1, 1, 0, "unsettled writes: 1, and it needs you (delta calls --unsettled)", "rest"},
		{5, 3, 0, "unsettled writes: 5: 3 need you, Delta is asking about the other 2", "rest"},
	} {
		var b strings.Builder
		writeStatus(&b, &localapi.Status{Self: localapi.Self{Name: "laptop"}, Unsettled: tc.unsettled, NeedsYou: tc.needs, Dismissed: tc.dismissed}, now)
		if !strings.Contains(b.String(), tc.want) || strings.Contains(b.String(), tc.not) {
			t.Errorf("%d unsettled (%d need you), %d set aside:\n%s\nwant %q, not %q", tc.unsettled, tc.needs, tc.dismissed, b.String(), tc.want, tc.not)
		}
	}
	for state, want := range map[string]string{
		"unknown":     "set aside from the local API; still asked about",
		"carried_out": "set aside from the local API before it was settled",
	} {
		var b strings.Builder
		writeRecord(&b, &localapi.Call{RequestID: "r", State: state, Dismissed: true, DismissedBy: "the local API", CreatedAt: now}, now)
		if !strings.Contains(b.String(), want) {
			t.Errorf("a %s call set aside:\n%s\nwant %q", state, b.String(), want)
		}
	}
}

// TestStatusShowsTransfers: what the page shows of transfers, delta
// status shows too (issue 36).
func TestStatusShowsTransfers(t *testing.T) {
	now := time.Now()
	var b strings.Builder
	writeStatus(&b, &localapi.Status{Self: localapi.Self{Name: "laptop"}, Sessions: 1, Transfers: []localapi.Transfer{
		{Kind: localapi.TransferRead, Peer: "studio", App: "films", Path: "/a.mov", Received: 300 << 20, Rate: 40 << 20, Since: now.Add(-8 * time.Second)},
	}}, now)
	for _, want := range []string{"transfers: 1 running a second or more, 1 session open", "  read films/a.mov: 300.0 MiB at 40.0 MiB/s, 8 s (studio)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status:\n%s\nwant %q", b.String(), want)
		}
	}
}

// TestStatusShowsLastDrop: each road says when it was last dropped and
// why, in the log's words, whether it is up again or not (issue 62: nine
// drops in an hour, none of them shown).
func TestStatusShowsLastDrop(t *testing.T) {
	now := time.Now()
	var b strings.Builder
	why := "TCP keepalive found a connection dead: read: connection timed out"
	writeStatus(&b, &localapi.Status{Self: localapi.Self{Name: "laptop"}, Peers: []localapi.PeerStatus{{Name: "studio", Road: "lan", Roads: []localapi.RoadStatus{
		{Road: "lan", Address: "192.168.1.20:7422", State: localapi.RoadUp, RTTMillis: 1, DroppedAt: now.Add(-12 * time.Second), DroppedWhy: why, DropEvidence: "keepalive"},
		{Road: "thunderbolt", Address: "169.254.1.2:7422", State: localapi.RoadDown, LastError: why, LastErrorAt: now, DroppedAt: now, DroppedWhy: why, DropEvidence: "keepalive"},
		{Road: "tailnet", Address: "100.64.0.2:7421", State: localapi.RoadUp},
	}}}}, now)
	lines := strings.Split(b.String(), "\n")
	var lan, tb, ts string
	for _, l := range lines {
		switch {
		case strings.Contains(l, "192.168.1.20"):
			lan = l
		case strings.Contains(l, "169.254.1.2"):
			tb = l
		case strings.Contains(l, "100.64.0.2"):
			ts = l
		}
	}
	if !strings.Contains(lan, "last dropped 12 s ago") || !strings.Contains(lan, why) {
		t.Errorf("the lan road, up again after a drop: %q", lan)
	}
	if strings.Count(tb, why) != 1 {
		t.Errorf("the thunderbolt road, down: its drop said once, not twice: %q", tb)
	}
	if strings.Contains(ts, "dropped") {
		t.Errorf("the tailnet road, never dropped: %q", ts)
	}
}
