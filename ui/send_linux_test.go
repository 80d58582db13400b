package ui

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/ui/uitest"
)

// TestFreedesktopActions: on a server with the "actions" capability a note
// about a call offers "Open status page" and "Ask now", and a click comes
// back as the action a menu click would be; on a server without, the same
// note is shown with none. Delta's icon goes with each.
func TestFreedesktopActions(t *testing.T) {
	bus := uitest.StartBus(t)
	srv := bus.ServeNotifications(t)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", bus.Addr)

	acts := make(chan Action, 4)
	s := SystemSender(slog.New(slog.DiscardHandler), acts)
	defer s.Close()
	if err := s.Send(Note{Title: "plain server", Body: "b", RequestID: "r0"}); err != nil {
		t.Fatal(err)
	}
	got := srv.WaitFor(t, "plain server", 10*time.Second)
	if len(got.Actions) != 0 || !got.HasImage || got.AppName != "Delta" {
		t.Errorf("on a server without actions: %+v, want no actions and Delta's icon", got)
	}
	s.Close()

	srv.SetCaps("body", "icon-static", "actions")
	s = SystemSender(slog.New(slog.DiscardHandler), acts)
	defer s.Close()
	if err := s.Send(Note{Title: "A write needs you", Body: "b", RequestID: "call-7"}); err != nil {
		t.Fatal(err)
	}
	got = srv.WaitFor(t, "A write needs you", 10*time.Second)
	for _, key := range []string{"default", NoteOpen, NoteAsk} {
		if !slices.Contains(got.Actions, key) {
			t.Errorf("actions %q lack %q", got.Actions, key)
		}
	}
	for key, want := range map[string]Action{NoteAsk: {Kind: ActAsk, CallID: "call-7"}, "default": {Kind: ActOpen, CallID: "call-7"}} {
		if err := srv.Invoke(got.ID, key); err != nil {
			t.Fatal(err)
		}
		select {
		case act := <-acts:
			if act != want {
				t.Errorf("clicking %q gave %+v, want %+v", key, act, want)
			}
		case <-time.After(10 * time.Second): // a failure, not a wait
			t.Fatalf("clicking %q gave nothing", key)
		}
	}
	// Another application's notification's clicks are not Delta's.
	if err := srv.Invoke(999, NoteAsk); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(Note{Title: "3 writes carried out", Body: "b"}); err != nil {
		t.Fatal(err)
	}
	got = srv.WaitFor(t, "3 writes carried out", 10*time.Second)
	if slices.Contains(got.Actions, NoteAsk) {
		t.Errorf("a note about several calls offers Ask now: %q", got.Actions)
	}
	select {
	case act := <-acts:
		t.Errorf("a click on a notification Delta did not send gave %+v", act)
	default:
	}
}

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
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	authorized(log, true, "")
	authorized(log, false, "Notifications are not allowed for this application")
	authorized(log, false, "Notifications are not allowed for this application")
	if n := strings.Count(buf.String(), "System Settings → Notifications → Delta"); n != 1 || !strings.Contains(buf.String(), "not allowed for this application") {
		t.Errorf("logged %d times:\n%s", n, buf.String())
	}
}
