package ui

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
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
	for _, key := range []string{"default", NoteAsk} {
		if !slices.Contains(got.Actions, key) {
			t.Errorf("actions %q lack %q", got.Actions, key)
		}
	}
	if slices.Contains(got.Actions, NoteOpen) {
		t.Errorf("actions %q offer Open status page twice (xfce4-notifyd draws the default as a button)", got.Actions)
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
	// A request to pair: Accept accepts it, the body opens the setup page.
	if err := s.Send(PairNote(localapi.PairRequest{ID: "ID-1", Name: "studio", Address: "10.0.0.2:7421"})); err != nil {
		t.Fatal(err)
	}
	got = srv.WaitFor(t, "studio asks to pair", 10*time.Second)
	if !slices.Contains(got.Actions, NoteAccept) || slices.Contains(got.Actions, NoteAsk) {
		t.Errorf("a request to pair's actions: %q", got.Actions)
	}
	for key, want := range map[string]Action{NoteAccept: {Kind: ActAcceptPair, PairID: "ID-1"}, "default": {Kind: ActSetup, Section: "pair"}} {
		if err := srv.Invoke(got.ID, key); err != nil {
			t.Fatal(err)
		}
		select {
		case act := <-acts:
			if act != want {
				t.Errorf("clicking %q on a request to pair gave %+v, want %+v", key, act, want)
			}
		case <-time.After(10 * time.Second): // a failure, not a wait
			t.Fatalf("clicking %q on a request to pair gave nothing", key)
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
