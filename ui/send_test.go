package ui

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

func TestNoteAction(t *testing.T) {
	for _, tc := range []struct {
		key, rid string
		want     Action
		ok       bool
	}{
		{"default", "r1", Action{Kind: ActOpen, CallID: "r1"}, true},
		{NoteOpen, "r1", Action{Kind: ActOpen, CallID: "r1"}, true},
		{NoteAsk, "r1", Action{Kind: ActAsk, CallID: "r1"}, true},
		{NoteOpen, "", Action{Kind: ActOpen}, true},
		{NoteAsk, "", Action{Kind: ActOpen}, false},
		{"other", "r1", Action{}, false},
		{NoteAccept, "pair:ID-1", Action{Kind: ActAcceptPair, PairID: "ID-1"}, true},
		{"default", "pair:ID-1", Action{Kind: ActSetup, Section: "pair"}, true},
		{NoteAsk, "pair:ID-1", Action{}, false},
	} {
		if got, ok := NoteAction(tc.key, tc.rid); got != tc.want || ok != tc.ok {
			t.Errorf("NoteAction(%q, %q) = %+v, %v; want %+v, %v", tc.key, tc.rid, got, ok, tc.want, tc.ok)
		}
	}
	if unbundled("com.delta-roads.delta", "/usr/local/bin/delta") != "" { // a symlink to the bundle's executable
		t.Error("a bundle with an identifier is taken as unbundled")
	}
	if why := unbundled("", "/Users/me/X.app/Contents/MacOS/delta"); !strings.Contains(why, "outside an app bundle") || !strings.Contains(why, "/Users/me/X.app") {
		t.Errorf("a path inside X.app without a bundle identifier: %q", why)
	}
}

// TestAuthorizedLogsOnce: macOS's refusal to let Delta notify is said
// once in delta.log, with where to allow it; an allowance says nothing.
func TestAuthorizedLogsOnce(t *testing.T) {
	authorizedOnce = sync.Once{} // once per process: each run of the test is one
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	authorized(log, true, "")
	authorized(log, false, "Notifications are not allowed for this application")
	authorized(log, false, "Notifications are not allowed for this application")
	if n := strings.Count(buf.String(), "System Settings → Notifications → Delta"); n != 1 || !strings.Contains(buf.String(), "not allowed for this application") {
		t.Errorf("logged %d times:\n%s", n, buf.String())
	}
}
