package view

import (
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/wire/record"
)

func peer(name string, road roads.Road, states ...localapi.RoadState) localapi.PeerStatus {
	p := localapi.PeerStatus{Name: name, Road: string(road)}
	for i, st := range states {
		p.Roads = append(p.Roads, localapi.RoadStatus{Road: string(roads.All[i]), State: st})
	}
	return p
}

// TestOverall: "All well" only when every peer's current road is known to
// be up.
func TestOverall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		snap  Snapshot
		level Level
		head  string
	}{
		{"no peers", Snapshot{}, "ok", "Delta is running; no peers yet"},
		{"all up", Snapshot{Peers: []localapi.PeerStatus{peer("studio", roads.Thunderbolt, "up")}}, "ok", "All well: 1 peer reachable"},
		{"current road not checked yet", Snapshot{Peers: []localapi.PeerStatus{peer("studio", roads.Thunderbolt, "unknown")}}, "ok", "Reaching studio…"},
		{"two not checked", Snapshot{Peers: []localapi.PeerStatus{peer("a", roads.Thunderbolt, "unknown"), peer("b", roads.Thunderbolt, "unknown")}}, "ok", "Reaching 2 peers…"},
		{"down", Snapshot{Peers: []localapi.PeerStatus{peer("studio", "", "down")}}, "degraded", "studio is unreachable"},
		{"asking wins", Snapshot{Unsettled: []*record.Call{{Peer: "studio", State: record.Unknown}}, Peers: []localapi.PeerStatus{peer("studio", "", "down")}}, "asking", "Asking studio about 1 write"},
		{"asking two peers", Snapshot{Unsettled: []*record.Call{{Peer: "studio", State: record.Unknown}, {Peer: "nas", State: record.Unknown}, {Peer: "nas", State: record.Unknown}}}, "asking", "Asking 2 peers about 3 writes"},
		{"needs you wins", Snapshot{Unsettled: []*record.Call{{Peer: "studio", State: record.NeedsPerson}, {Peer: "studio", State: record.Unknown}}, Dismissed: []*record.Call{{}}}, "needs-you", "1 write needs you · asking about 1 more"},
		{"two need you", Snapshot{Unsettled: []*record.Call{{State: record.NeedsPerson}, {State: record.NeedsPerson}}}, "needs-you", "2 writes need you"},
		{"a received call to check", Snapshot{Received: []Received{{ToCheck: true}, {}}, Peers: []localapi.PeerStatus{peer("studio", roads.Thunderbolt, "up")}}, "needs-you", "1 received call to check"},
		{"more unsettled than listed", Snapshot{Unsettled: []*record.Call{{Peer: "studio", State: record.NeedsPerson}, {Peer: "studio", State: record.Unknown}}, UnsettledMore: true}, "needs-you", "at least 1 write needs you · asking about at least 1 more"},
		{"more to check than listed", Snapshot{Received: []Received{{ToCheck: true}, {ToCheck: true}}, ReceivedMore: true}, "needs-you", "at least 2 received calls to check"},
		{"both", Snapshot{Unsettled: []*record.Call{{State: record.NeedsPerson}}, Received: []Received{{ToCheck: true}, {ToCheck: true}}}, "needs-you", "1 write needs you · 2 received calls to check"},
		{"asking, set aside", Snapshot{Unsettled: []*record.Call{{Peer: "studio", State: record.Unknown}}, Dismissed: []*record.Call{{}}}, "asking", "Asking studio about 1 write · 1 set aside, still asked about"},
		{"login", Snapshot{Tailnet: &TailnetSummary{NeedsLogin: true}}, "degraded", "Not logged in to the tailnet"},
		{"set aside", Snapshot{Dismissed: []*record.Call{{}}, Peers: []localapi.PeerStatus{peer("studio", roads.Thunderbolt, "up")}}, "ok", "All well: 1 peer reachable · 1 set aside, still asked about"},
	} {
		level, head := Overall(tc.snap)
		if level != tc.level || head != tc.head {
			t.Errorf("%s: %q %q, want %q %q", tc.name, level, head, tc.level, tc.head)
		}
	}
}

func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"notes":                "notes",
		"exe\u202Etxt":         "exe⟨U+202E⟩txt",
		"a\nb\tc":              "a b c",
		"bell\u0007":           "bell⟨U+0007⟩",
		"isolate\u2066x\u2069": "isolate⟨U+2066⟩x⟨U+2069⟩",
		"bad \xff utf8":        "bad \uFFFD utf8",
		"naïve café":           "naïve café",
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOwnerWordsAndAppName: what an owner said is said in plain words;
// a call is named by its app, else its User-Agent's product, else "an
// app"; a page link opens a card.
func TestOwnerWordsAndAppName(t *testing.T) {
	for state, want := range map[string]string{
		"running":       "the app is working on it",
		"app_unknown":   "the app took it and its connection broke before it answered",
		"never_arrived": "it never arrived",
		"expired":       "it keeps no record that old",
	} {
		if got := OwnerWords(state); got != want {
			t.Errorf("OwnerWords(%q) = %q, want %q", state, got, want)
		}
	}
	ua := func(v string) *record.Request {
		return &record.Request{Headers: map[string][]string{"User-Agent": {v}}}
	}
	for _, tc := range []struct {
		c    record.Call
		want string
	}{
		{record.Call{CallerApp: "editor", Request: ua("curl/8.1.2")}, "editor"},
		{record.Call{Request: ua("curl/8.1.2")}, "curl"},
		{record.Call{Request: ua("python-requests/2.31.0 extra")}, "python-requests"},
		{record.Call{}, "an app"},
	} {
		if got := AppName(&tc.c); got != tc.want {
			t.Errorf("AppName(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
	if got := PageAt("http://127.0.0.1:7420/login?code=X", "call-a b", "settle-a b"); got != "http://127.0.0.1:7420/login?code=X&open=call-a+b#settle-a b" {
		t.Errorf("PageAt: %q", got)
	}
}

func TestCallWords(t *testing.T) {
	sent := func(reply string) []record.Attempt { return []record.Attempt{{N: 1, FirstByte: true, Reply: reply}} }
	for _, tc := range []struct {
		state record.CallState
		at    []record.Attempt
		want  string
	}{
		{record.Unavailable, nil, "not sent"},
		{record.Unavailable, []record.Attempt{{N: 1}, {N: 2}}, "not sent"},
		{record.Unavailable, sent("app_unavailable"), "sent; not carried out: the app was not listening"},
		{record.Unavailable, sent("owner_failed"), "sent; not carried out: the owner's Delta failed before its app"},
		{record.Unavailable, sent("no_room"), "sent; not carried out: no room there for its body"},
		{record.Unavailable, sent("too_large"), "sent; not carried out: too large for the owner"},
		{record.Unavailable, sent("body_cut"), "sent; not carried out: its body did not arrive whole"},
		{record.Unavailable, sent(""), "sent; not carried out"},
		{record.Unavailable, append([]record.Attempt{{N: 1}}, sent("app_not_found")...), "sent; not carried out: no such app there"},
		{record.Answered, sent(""), "answered"},
		{record.Unknown, sent(""), "outcome unknown"},
	} {
		if got := CallWords(tc.state, tc.at); got != tc.want {
			t.Errorf("CallWords(%s, %+v) = %q, want %q", tc.state, tc.at, got, tc.want)
		}
	}
}

func TestSpan(t *testing.T) {
	for d, want := range map[time.Duration]string{2 * time.Second: "2 s", 1500 * time.Millisecond: "1.5 s", 10 * time.Minute: "10 min",
		90 * time.Minute: "1 h 30 min", 2 * time.Hour: "2 h", 0: "0 s"} {
		if got := Span(d); got != want {
			t.Errorf("Span(%s) = %q, want %q", d, got, want)
		}
	}
}

// TestClipWords: an error is cut between words, never in one
// ("connectio…"), and only when it is longer than asked.
func TestClipWords(t *testing.T) {
	e := "probe: connect to beta via lan (127.0.0.1:7502) failed: dial tcp 127.0.0.1:7502: connect: connection refused"
	if got := ClipWords(e, len(e)); got != e {
		t.Errorf("ClipWords cut what fits: %q", got)
	}
	got := ClipWords(e, 100)
	if got != "probe: connect to beta via lan (127.0.0.1:7502) failed: dial tcp 127.0.0.1:7502: connect …" || len([]rune(got)) > 100 {
		t.Errorf("ClipWords(…, 100) = %q", got)
	}
	if got := ClipWords(strings.Repeat("x", 50), 10); got != strings.Repeat("x", 9)+"…" {
		t.Errorf("one long word: %q", got)
	}
}

// TestRequest: a call is said as its method and path, a gRPC one by its
// service and method.
func TestRequest(t *testing.T) {
	for _, tc := range []struct {
		grpc         bool
		method, path string
		want         string
	}{
		{false, "POST", "/notes/1", "POST /notes/1"},
		{true, "POST", "/n.N/Add", "gRPC n.N/Add"},
		{false, "PUT", "/" + strings.Repeat("a", 60), "PUT /" + strings.Repeat("a", 8) + "…"},
	} {
		if got := Request(tc.grpc, tc.method, tc.path, 10); got != tc.want {
			t.Errorf("%v %s %s: %q, want %q", tc.grpc, tc.method, tc.path, got, tc.want)
		}
	}
	if got := CallLine(&record.Call{App: "notes", Peer: "studio", CallerApp: "grpc-go", GRPC: true, Method: "POST", Path: "/notes.Notes/Add"}); !strings.HasSuffix(got, "notes on studio: gRPC notes.Notes/Add") {
		t.Errorf("CallLine: %q", got)
	}
}

// TestKeptSize: a body not kept is said as what it was: over 64 KiB, or
// streamed as it came (a gRPC call's), with its size once it ended whole.
func TestKeptSize(t *testing.T) {
	for _, tc := range []struct {
		r    record.Request
		want string
	}{
		{record.Request{Truncated: true, Size: 70000}, "70000 bytes (over 64 KiB: only the size and digest are kept)"},
		{record.Request{Truncated: true, Size: 1029}, "1029 bytes (it streamed as it came: only its size is kept)"},
		{record.Request{Truncated: true}, "not kept (it streamed as it came; its size is kept once it ends whole)"},
	} {
		if got := Excerpt(&tc.r, 60); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
}
