package ui

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
)

var now = time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)

func studio(state localapi.RoadState, held time.Time) localapi.PeerStatus {
	p := localapi.PeerStatus{Name: "studio", Roads: []localapi.RoadStatus{
		{Road: string(roads.Thunderbolt), Address: "169.254.3.2:7422", Interface: "bridge0", State: state, RTTMillis: 0.4, LastError: "", HeldDownUntil: held},
		{Road: string(roads.LAN), Address: "192.168.1.20:7422", Interface: "en0", State: localapi.RoadUp, RTTMillis: 2.1},
		{Road: string(roads.Tailnet), Address: "studio:7421", State: localapi.RoadUnknown},
	}}
	if state == localapi.RoadUp {
		p.Road = string(roads.Thunderbolt)
	} else {
		p.Road = string(roads.LAN)
		p.Roads[0].LastError = "connect to studio via thunderbolt (169.254.3.2:7422 on bridge0) timed out after 2.0 s"
	}
	return p
}

func unknownCall(id string, age time.Duration) *record.Call {
	return &record.Call{RequestID: id, Peer: "studio", App: "notes", CallerApp: "editor", Method: "POST", Path: "/notes/42",
		State: record.Unknown, OwnerState: "running", CreatedAt: now.Add(-age),
		Detail: "studio did not answer; it will not be sent again, and Delta is asking studio what happened"}
}

func needsCall(id string, age time.Duration) *record.Call {
	c := unknownCall(id, age)
	c.State, c.OwnerState, c.Detail = record.NeedsPerson, "app_unknown", "studio's app took the call and its connection broke before it answered; a person must check"
	return c
}

// titles lists the menu as lines, children indented, separators as "--".
func titles(items []Item, indent string) []string {
	var out []string
	for _, it := range items {
		switch {
		case it.Separator:
			out = append(out, indent+"--")
		case it.Enabled():
			out = append(out, indent+it.Title)
		default:
			out = append(out, indent+"("+it.Title+")")
		}
		out = append(out, titles(it.Children, indent+"  ")...)
	}
	return out
}

func TestBuild(t *testing.T) {
	unreachable := localapi.PeerStatus{Name: "attic", Roads: []localapi.RoadStatus{{Road: string(roads.LAN), Address: "192.168.1.30:7422", State: localapi.RoadDown, LastError: "connection refused"}}}
	calls := make([]*record.Call, 12)
	for i := range calls {
		calls[i] = unknownCall(fmt.Sprintf("req-%02d", i), time.Duration(i+1)*time.Minute)
	}
	for _, tc := range []struct {
		name  string
		snap  view.Snapshot
		level view.Level
		want  []string // lines that must appear, in this order
		not   []string // lines that must not appear
	}{
		{
			name:  "all well",
			snap:  view.Snapshot{Peers: []localapi.PeerStatus{studio(localapi.RoadUp, time.Time{})}},
			level: view.OK,
			want: []string{"(All well: 1 peer reachable)", "--", "studio — thunderbolt, 0.4 ms",
				"  (thunderbolt  169.254.3.2:7422 on bridge0 — up, 0.4 ms)", "  (lan  192.168.1.20:7422 on en0 — up, 2.1 ms)", "  (tailnet  studio:7421 — unknown)",
				"--", "(No write waits on an owner)", "--", "Open status page", "--", "Quit Delta"},
			not: []string{"Log in to tailnet…"},
		},
		{
			name:  "thunderbolt held down, lan carries",
			snap:  view.Snapshot{Peers: []localapi.PeerStatus{studio(localapi.RoadDown, now.Add(3*time.Second))}},
			level: view.OK,
			want: []string{"studio — lan, 2.1 ms", "  (thunderbolt  169.254.3.2:7422 on bridge0 — down)",
				"  (    held down until " + now.Add(3*time.Second).Local().Format("15:04:05") + ")",
				"  (    connect to studio via thunderbolt (169.254.3.2:7422 on bridge0) timed out after 2.0 s)"},
		},
		{
			name:  "a peer unreachable",
			snap:  view.Snapshot{Peers: []localapi.PeerStatus{studio(localapi.RoadUp, time.Time{}), unreachable}},
			level: view.Degraded,
			want:  []string{"(attic is unreachable)", "attic — unreachable", "  (lan  192.168.1.30:7422 — down)", "  (    connection refused)"},
		},
		{
			name: "a peer asleep: down on the cable, offline on the tailnet",
			snap: view.Snapshot{Peers: []localapi.PeerStatus{{Name: "attic", Roads: []localapi.RoadStatus{
				{Road: string(roads.LAN), Address: "192.168.1.30:7422", State: localapi.RoadDown, LastError: "i/o timeout"},
				{Road: string(roads.Tailnet), Address: "100.64.0.3:7421", State: localapi.RoadOffline, OfflineSince: now.Add(-time.Hour)}}}}},
			level: view.Degraded,
			want: []string{"(attic is unreachable)", "attic — offline since " + now.Add(-time.Hour).Local().Format("15:04"),
				"  (tailnet  100.64.0.3:7421 — offline)", "  (    offline on the tailnet since " + now.Add(-time.Hour).Local().Format("Mon 2 Jan 15:04") + ")"},
		},
		{
			name:  "an unsettled write",
			snap:  view.Snapshot{Peers: []localapi.PeerStatus{studio(localapi.RoadUp, time.Time{})}, Unsettled: []*record.Call{unknownCall("req-1", 3*time.Minute)}},
			level: view.Asking,
			want: []string{"(Asking studio about 1 write)", "Delta is asking (1)", "  (editor → notes on studio: POST /notes/42 — 3 min)",
				"  (    Outcome unknown, sent 3 min ago; the owner last said: the app is working on it)",
				"  (    studio did not answer; it will not be sent again, and Delta is asking studio what happened)",
				"      Ask now", "      Copy request id", "      Dismiss…"},
		},
		{
			name:  "more unsettled writes than the menu lists",
			snap:  view.Snapshot{Unsettled: calls},
			level: view.Asking,
			want:  []string{"(Asking studio about 12 writes)", "(No computers paired yet)", "Pair a Computer Nearby…", "Delta is asking (12)", "  (editor → notes on studio: POST /notes/42 — 1 min)", "      Dismiss…", "  --", "  (editor → notes on studio: POST /notes/42 — 10 min)", "  2 more on the status page…"},
			not:   []string{"  (editor → notes on studio: POST /notes/42 — 11 min)"},
		},
		{
			name: "a write that needs you, one Delta asks about, a received call to check",
			snap: view.Snapshot{Peers: []localapi.PeerStatus{studio(localapi.RoadUp, time.Time{})},
				Unsettled: []*record.Call{needsCall("n-1", 5*time.Minute), unknownCall("req-1", 3*time.Minute)},
				Received:  []view.Received{{RequestID: "rc-1", CallerName: "nas", ToCheck: true}, {RequestID: "rc-2"}}},
			level: view.NeedsYou,
			want: []string{"(1 write needs you · 1 received call to check · asking about 1 more)", "Needs you (1)", "  (editor → notes on studio: POST /notes/42 — 5 min)",
				"      It happened…", "Received calls to check (1)…", "Delta is asking (1)", "  (editor → notes on studio: POST /notes/42 — 3 min)", "      Dismiss…"},
		},
		{
			name:  "not logged in to the tailnet, login address known",
			snap:  view.Snapshot{Tailnet: &view.TailnetSummary{State: "NeedsLogin", NeedsLogin: true, LoginURL: "https://login.example/a", Message: "not logged in to the tailnet: open https://login.example/a to log in; until then there are no peers"}},
			level: view.Degraded,
			want:  []string{"(Not logged in to the tailnet)", "--", "Open status page", "Log in to tailnet…", "Quit Delta"},
		},
		{
			name:  "connecting to the tailnet",
			snap:  view.Snapshot{Tailnet: &view.TailnetSummary{State: "Starting", Message: "connecting to the tailnet (Starting)"}},
			level: view.OK,
			want:  []string{"(Delta is running; no peers yet)", "(connecting to the tailnet (Starting))"},
			not:   []string{"Log in to tailnet…"},
		},
		{
			name:  "not logged in, no address yet",
			snap:  view.Snapshot{Tailnet: &view.TailnetSummary{State: "NeedsLogin", NeedsLogin: true}},
			level: view.Degraded,
			want:  []string{"(Log in to tailnet… (waiting for a login address))"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Build(tc.snap, now)
			if m.Level != tc.level {
				t.Errorf("level %s, want %s", m.Level, tc.level)
			}
			lines := titles(m.Items, "")
			at := 0
			for _, w := range tc.want {
				i := indexFrom(lines, w, at)
				if i < 0 {
					t.Fatalf("menu lacks %q after line %d:\n%s", w, at, strings.Join(lines, "\n"))
				}
				at = i + 1
			}
			for _, n := range tc.not {
				if indexFrom(lines, n, 0) >= 0 {
					t.Errorf("menu has %q:\n%s", n, strings.Join(lines, "\n"))
				}
			}
		})
	}
}

func indexFrom(lines []string, s string, from int) int {
	for i := from; i < len(lines); i++ {
		if lines[i] == s {
			return i
		}
	}
	return -1
}

// Actions carry what they act on, and keys stay put when only the numbers
// change, so a tray can update titles in place instead of rebuilding.
func TestBuildActionsAndShape(t *testing.T) {
	s := view.Snapshot{Peers: []localapi.PeerStatus{studio(localapi.RoadUp, time.Time{})}, Unsettled: []*record.Call{unknownCall("req-1", time.Minute)}}
	m := Build(s, now)
	for key, want := range map[string]Action{
		"call/req-1/ask":     {Kind: ActAsk, CallID: "req-1"},
		"call/req-1/copy":    {Kind: ActCopyID, CallID: "req-1"},
		"call/req-1/dismiss": {Kind: ActDismiss, CallID: "req-1"},
		"open":               {Kind: ActOpen},
		"quit":               {Kind: ActQuit},
	} {
		it, ok := m.Find(key)
		if !ok || it.Action == nil || *it.Action != want {
			t.Errorf("%s: %+v, want %+v", key, it.Action, want)
		}
	}
	later := Build(s, now.Add(5*time.Minute))
	if later.Shape() != m.Shape() {
		t.Errorf("the shape changed with time alone:\n%s\n%s", m.Shape(), later.Shape())
	}
	s.Unsettled = nil
	if Build(s, now).Shape() == m.Shape() {
		t.Error("settling the call did not change the shape")
	}
}

// TestLocalNetworkItem: a road whose error carries macOS's Local Network
// hint gets an item that opens System Settings at that pane.
func TestLocalNetworkItem(t *testing.T) {
	p := studio(localapi.RoadDown, time.Time{})
	blocked := fmt.Errorf("connect to studio via thunderbolt (169.254.3.2:7422 on bridge0): dial tcp 169.254.3.2:7422: connect: %w (%w)", syscall.EHOSTUNREACH, roads.ErrLocalNetwork)
	p.Roads[0].LastError, p.Roads[0].Hint = blocked.Error(), roads.HintOf(blocked)
	m := Build(view.Snapshot{Peers: []localapi.PeerStatus{p}}, now)
	var found *Item
	var walk func([]Item)
	walk = func(items []Item) {
		for i := range items {
			if strings.HasSuffix(items[i].Key, "/local-network") {
				found = &items[i]
			}
			walk(items[i].Children)
		}
	}
	walk(m.Items)
	if found == nil || found.Action == nil || found.Action.Kind != ActSettings || found.Action.URL != LocalNetworkSettings {
		t.Fatalf("no Local Network item that opens System Settings:\n%s", strings.Join(titles(m.Items, ""), "\n"))
	}
	refused := fmt.Errorf("connect: %w", syscall.ECONNREFUSED)
	p.Roads[0].LastError, p.Roads[0].Hint = refused.Error(), roads.HintOf(refused)
	m = Build(view.Snapshot{Peers: []localapi.PeerStatus{p}}, now)
	found = nil
	walk(m.Items)
	if found != nil {
		t.Errorf("a Local Network item for another error")
	}
}

func TestNoticesInMenu(t *testing.T) {
	n := "The local API's port 7420 is taken on this computer (another user's Delta?): this Delta's is 127.0.0.1:51234, in local.json, where apps and the kit find it."
	m := Build(view.Snapshot{Notices: []string{n}}, now)
	lines := strings.Join(titles(m.Items, ""), "\n")
	if !strings.Contains(lines, "port 7420 is taken") {
		t.Errorf("the menu does not show the notice:\n%s", lines)
	}
}

// A long transfer is listed under its peer, with what it moved and how
// fast.
func TestTransfersInMenu(t *testing.T) {
	s := view.Snapshot{Peers: []localapi.PeerStatus{studio(localapi.RoadUp, time.Time{})}, Transfers: []localapi.Transfer{
		{Kind: localapi.TransferRead, Peer: "studio", App: "films", Path: "/a.mov", Road: "thunderbolt", Since: now.Add(-8 * time.Second), Received: 312 << 20, Rate: 39 << 20},
		{Kind: localapi.TransferCall, Peer: "elsewhere", App: "backup", Path: "/b", Road: "lan", Since: now.Add(-3 * time.Second), Sent: 1 << 30, Rate: 300 << 20},
	}}
	got := strings.Join(titles(Build(s, now).Items, ""), "\n")
	if !strings.Contains(got, "read films/a.mov: 312.0 MiB at 39.0 MiB/s, 8 s") {
		t.Errorf("the read is not under studio:\n%s", got)
	}
	if strings.Contains(got, "backup") {
		t.Errorf("another peer's transfer is listed under studio:\n%s", got)
	}
}

// What an app or a peer wrote reaches the menu neutralised: a
// right-to-left override and control characters are made visible.
func TestMenuShowsWhatAppsWroteSafely(t *testing.T) {
	c := unknownCall("rtl", time.Minute)
	c.CallerApp = "invoice\u202Efdp.exe"
	c.Path = "/notes/\u202Egpj.exe"
	c.Detail = "studio says: line one\nline two\u2066"
	got := strings.Join(titles(Build(view.Snapshot{Peers: []localapi.PeerStatus{studio(localapi.RoadUp, time.Time{})}, Unsettled: []*record.Call{c}}, now).Items, ""), "\n")
	if strings.ContainsRune(got, '\u202E') || strings.ContainsRune(got, '\u2066') || !strings.Contains(got, "line one line two⟨U+2066⟩") {
		t.Errorf("the menu shows raw override or control characters:\n%s", got)
	}
	if !strings.Contains(got, "invoice⟨U+202E⟩fdp.exe") {
		t.Errorf("the app's name is not shown neutralised:\n%s", got)
	}
}

// TestMenuLabel: dbusmenu takes "_" for an access key's mark, so Linux
// gets each doubled; macOS shows titles as they are.
func TestMenuLabel(t *testing.T) {
	if got := menuLabel("req_1 of app_unknown", "linux"); got != "req__1 of app__unknown" {
		t.Errorf("linux: %q", got)
	}
	if got := menuLabel("req_1", "darwin"); got != "req_1" {
		t.Errorf("darwin: %q", got)
	}
}

// TestForwardsInMenu: a peer's submenu lists its apps with forwards here,
// each with Copy URL (and Copy browser URL), or why it is not open.
func TestForwardsInMenu(t *testing.T) {
	s := view.Snapshot{Peers: []localapi.PeerStatus{studio(localapi.RoadUp, time.Time{})}, Forwards: []localapi.Forward{
		{Peer: "studio", App: "notes", URL: "http://127.0.0.1:4100/", BrowserURL: "http://notes.studio.k3x9q7m2vd8ra.localhost:4100/", Open: true},
		{Peer: "studio", App: "dav", URL: "http://127.0.0.1:4101/", Error: "listen tcp 127.0.0.1:4101: bind: address already in use"},
		{Peer: "elsewhere", App: "x", URL: "http://127.0.0.1:4102/", Open: true},
	}}
	m := Build(s, now)
	got := strings.Join(titles(m.Items, ""), "\n")
	for _, want := range []string{"notes — http://127.0.0.1:4100/\n    Copy URL\n    Copy browser URL", "dav — forward not open\n    (listen tcp 127.0.0.1:4101: bind: address already in use)"} {
		if !strings.Contains(got, want) {
			t.Errorf("the menu lacks\n%s\nin\n%s", want, got)
		}
	}
	if strings.Contains(got, "4102") {
		t.Errorf("another peer's forward is under studio:\n%s", got)
	}
	var copyURL *Action
	for _, it := range m.Items {
		for _, c := range it.Children {
			if c.Key == "peer/studio/forward/notes" {
				copyURL = c.Children[0].Action
			}
		}
	}
	if copyURL == nil || copyURL.Kind != ActCopyURL || copyURL.URL != "http://127.0.0.1:4100/" {
		t.Errorf("Copy URL: %+v", copyURL)
	}
}

// TestLastDropInMenu: a road says when it was last dropped and why, up
// again or not; a down road's error is not said twice.
func TestLastDropInMenu(t *testing.T) {
	p := studio(localapi.RoadUp, time.Time{})
	why := "its probe failed: connect: connection refused"
	p.Roads[0].DroppedAt, p.Roads[0].DroppedWhy, p.Roads[0].DropEvidence = now.Add(-time.Minute), why, "probe"
	got := strings.Join(titles(Build(view.Snapshot{Peers: []localapi.PeerStatus{p}}, now).Items, ""), "\n")
	if !strings.Contains(got, "last dropped "+now.Add(-time.Minute).Local().Format("15:04:05")+": "+why) {
		t.Errorf("the menu of a road dropped and up again:\n%s", got)
	}
	p.Roads[0].State, p.Roads[0].LastError = localapi.RoadDown, why
	got = strings.Join(titles(Build(view.Snapshot{Peers: []localapi.PeerStatus{p}}, now).Items, ""), "\n")
	if strings.Count(got, why) != 1 {
		t.Errorf("a road down for the reason it was dropped says it %d times:\n%s", strings.Count(got, why), got)
	}
}

// TestWithAppItems: "Report a Problem…" and "Uninstall Delta…" come just
// before Quit, each only when the app can do it.
func TestWithAppItems(t *testing.T) {
	m := Build(view.Snapshot{}, time.Now())
	keys := func(m Menu) string {
		var k []string
		for _, it := range m.Items {
			k = append(k, it.Key)
		}
		return strings.Join(k, " ")
	}
	if got := keys(WithAppItems(m, false, false)); got != keys(m) {
		t.Errorf("with nothing to add: %s", got)
	}
	got := keys(WithAppItems(m, true, true))
	if !strings.HasSuffix(got, " report uninstall sep/quit quit") {
		t.Errorf("the menu's end: %s", got)
	}
	if got := keys(WithAppItems(m, true, false)); !strings.HasSuffix(got, " report sep/quit quit") || strings.Contains(got, "uninstall") {
		t.Errorf("without an uninstaller: %s", got)
	}
	it, _ := WithAppItems(m, true, true).Find("uninstall")
	if it.Title != "Uninstall Delta…" || it.Action.Kind != ActUninstall {
		t.Errorf("the uninstall item: %+v", it)
	}
}

// TestRevealAndUninstallCommands: the report is shown selected in Finder
// (its folder elsewhere); the uninstaller runs as root behind macOS's own
// password prompt, its path quoted for the shell even with a space or an
// apostrophe in it.
func TestRevealAndUninstallCommands(t *testing.T) {
	if n, a := RevealCommand("darwin", "/Users/jo/Desktop/r.tar.gz"); n != "open" || strings.Join(a, " ") != "-R /Users/jo/Desktop/r.tar.gz" {
		t.Errorf("on a Mac: %s %v", n, a)
	}
	if n, a := RevealCommand("linux", "/home/jo/Desktop/r.tar.gz"); n != "xdg-open" || strings.Join(a, " ") != "/home/jo/Desktop" {
		t.Errorf("on Linux: %s %v", n, a)
	}
	n, a := UninstallCommand("/Applications/Delta.app/Contents/Resources/uninstall.sh")
	want := `do shell script "'/Applications/Delta.app/Contents/Resources/uninstall.sh'" with administrator privileges with prompt "Delta wants to uninstall itself. Your data is kept."`
	if n != "/usr/bin/osascript" || len(a) != 2 || a[0] != "-e" || a[1] != want {
		t.Errorf("uninstall: %s %q", n, a)
	}
	if _, a := UninstallCommand("/tmp/Jo's Apps/uninstall.sh"); !strings.Contains(a[1], `"'/tmp/Jo'\\''s Apps/uninstall.sh'"`) {
		t.Errorf("a path with an apostrophe: %s", a[1])
	}
}

// TestWithShared: each peer's submenu lists the apps it shares, Open and
// Copy URL for each (Copy URL copies the forward's URL when there is
// one); a forward's own item is left out for an app listed so; a peer
// that could not be asked says so, one that shares nothing says that,
// and one not asked yet is left as it was.
func TestWithShared(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	s := view.Snapshot{Self: localapi.Self{Name: "laptop"}, Peers: []localapi.PeerStatus{{Name: "studio"}, {Name: "kitchen"}, {Name: "attic"}, {Name: "cellar"}},
		Forwards: []localapi.Forward{{Peer: "studio", App: "notes", URL: "http://127.0.0.1:4100/", Open: true}, {Peer: "studio", App: "old", URL: "http://127.0.0.1:4101/", Open: true}}}
	m := WithShared(Build(s, now), map[string]Shared{
		"studio":  {Apps: []localapi.PeerApp{{App: "notes", Forward: &s.Forwards[0]}, {App: "photos"}}},
		"kitchen": {Err: "no road to kitchen"},
		"attic":   {},
	})
	studio, _ := m.Find("peer/studio")
	var titles []string
	for _, c := range studio.Children {
		titles = append(titles, c.Title)
	}
	if want := []string{"old — http://127.0.0.1:4101/", "Open notes in Browser", "Copy notes URL", "Open photos in Browser", "Copy photos URL"}; !slices.Equal(titles, want) {
		t.Errorf("studio's submenu: %q, want %q", titles, want)
	}
	if c, _ := m.Find("peer/studio/app/notes/copy"); c.Action.Kind != ActCopyURL || c.Action.URL != "http://127.0.0.1:4100/" {
		t.Errorf("Copy notes URL: %+v", c.Action)
	}
	if c, _ := m.Find("peer/studio/app/photos/copy"); c.Action.Kind != ActCopyApp || c.Action.Peer != "studio" || c.Action.App != "photos" {
		t.Errorf("Copy photos URL: %+v", c.Action)
	}
	if k, _ := m.Find("peer/kitchen/apps"); k.Title != "Its apps: could not ask now" || k.Tooltip != "no road to kitchen" {
		t.Errorf("kitchen: %+v", k)
	}
	if a, _ := m.Find("peer/attic/apps"); a.Title != "Shares no apps" {
		t.Errorf("attic: %+v", a)
	}
	if _, ok := m.Find("peer/cellar/apps"); ok {
		t.Error("cellar, not asked yet, says something of its apps")
	}
}

// TestPairRequestsInMenu (issue 66): each computer asking to pair is an
// item above the peers, its name escaped, with its ID, Accept, Ignore and
// the setup page.
func TestPairRequestsInMenu(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	s := view.Snapshot{Self: localapi.Self{Name: "laptop"},
		PairRequests: []localapi.PairRequest{{ID: "ID-1", Name: "studio\u202e", Address: "10.0.0.2:7421", At: now}}}
	m := Build(s, now)
	it, ok := m.Find("pair/ID-1")
	if !ok || !strings.HasSuffix(it.Title, " asks to pair") || strings.ContainsRune(it.Title, '\u202e') {
		t.Fatalf("the request's item: %+v", it)
	}
	var titles []string
	for _, c := range it.Children {
		titles = append(titles, c.Title)
	}
	if want := []string{"ID ID-1", "Accept", "Ignore", "Compare IDs on the Setup Page…"}; !slices.Equal(titles, want) {
		t.Errorf("its submenu: %q, want %q", titles, want)
	}
	if a, _ := m.Find("pair/ID-1/accept"); a.Action == nil || *a.Action != (Action{Kind: ActAcceptPair, PairID: "ID-1"}) {
		t.Errorf("Accept: %+v", a.Action)
	}
	if a, _ := m.Find("pair/ID-1/ignore"); a.Action == nil || *a.Action != (Action{Kind: ActIgnorePair, PairID: "ID-1"}) {
		t.Errorf("Ignore: %+v", a.Action)
	}
	if a, _ := m.Find("pair/ID-1/id"); a.Enabled() {
		t.Error("the ID line does something when clicked")
	}
	n := PairNote(s.PairRequests[0])
	if n.PairID != "ID-1" || n.RequestID != "" || strings.ContainsRune(n.Title, '\u202e') || !strings.Contains(n.Body, "ID-1") {
		t.Errorf("the note: %+v", n)
	}
}
