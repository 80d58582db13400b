package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/ui/uitest"
)

// TestTray runs the delta binary with its real tray on a private session
// bus and uses it the way a panel and a person do: the menu, read with
// dbusmenu's GetLayout, shows the peer, its road and an unsettled call;
// clicking "Ask now" makes the gateway ask the owner; the menu follows the
// call as it settles; a notification is shown when it becomes unsettled and
// one when it settles; studio's shared app is listed in its submenu, and
// "Open notes in Browser" makes the forward and asks the desktop to open
// it; "Quit Delta" stops the process cleanly.
func TestTray(t *testing.T) {
	bus := uitest.StartBus(t)
	notes := bus.ServeNotifications(t)
	watcher := bus.ServeWatcher(t)
	laptop, studio := twoProcs(t)
	laptop.tray = true
	// The desktop's opener: a stand-in that notes what it is asked to
	// open (no browser here).
	desktop := t.TempDir()
	opened := filepath.Join(desktop, "opened")
	if err := os.WriteFile(filepath.Join(desktop, "xdg-open"), []byte("#!/bin/sh\necho \"$1\" >> "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	laptop.env = []string{"DBUS_SESSION_BUS_ADDRESS=" + bus.Addr, "PATH=" + desktop + ":" + os.Getenv("PATH")}
	studio.start(t)
	// notes is shared before laptop starts: the menu asks a peer which
	// apps it shares when its road comes up, and then every minute.
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	laptop.start(t)

	tray := bus.WaitTray(t, laptop.cmd.Process.Pid, 30*time.Second)
	gatewaytest.WaitFor(t, 10*time.Second, "the tray to register with the StatusNotifierWatcher", func() bool {
		return slices.ContainsFunc(watcher.Items(), func(s string) bool { return strings.HasSuffix(s, "/StatusNotifierItem") })
	})
	// The item is on the bus before the app's first draw sets its
	// tooltip: wait for it (a single read raced that draw once).
	gatewaytest.WaitFor(t, 10*time.Second, "the tray's tooltip to name Delta", func() bool {
		tip, err := tray.Property("ToolTip")
		return err == nil && strings.Contains(tip.String(), "Delta")
	})

	// A read puts the lan road up; the menu shows studio by it.
	if r := laptop.c.Must(t, "GET", "/v1/peers/studio/notes/answer/r", nil); r.Status >= 300 {
		t.Fatalf("read: %d %s", r.Status, r.Body)
	}
	tray.WaitMenu(t, 10*time.Second, "studio by lan with its roads", func(m []uitest.MenuItem) bool {
		p, ok := uitest.Find(m, "studio — lan, ")
		return ok && len(p.Children) >= 1 && strings.HasPrefix(p.Children[0].Label, "lan  "+studio.peerAddr+" — up, ")
	})

	// studio's shared apps, asked once its road came up: "Open notes in
	// Browser" makes this computer's forward to it and asks the desktop
	// to open it (issue 66).
	menu := tray.WaitMenu(t, 10*time.Second, "studio's notes in its submenu", func(m []uitest.MenuItem) bool {
		p, _ := uitest.Find(m, "studio — lan, ")
		_, open := uitest.Find(p.Children, "Open notes in Browser")
		_, copyURL := uitest.Find(p.Children, "Copy notes URL")
		return open && copyURL
	})
	studioMenu, _ := uitest.Find(menu, "studio — lan, ")
	openNotes, _ := uitest.Find(studioMenu.Children, "Open notes in Browser")
	if err := tray.Click(openNotes.ID); err != nil {
		t.Fatal(err)
	}
	var asked string
	gatewaytest.WaitFor(t, 10*time.Second, "the desktop asked to open studio's notes", func() bool {
		b, _ := os.ReadFile(opened)
		asked = strings.TrimSpace(string(b))
		return asked != ""
	})
	var fw struct{ Forwards []localapi.Forward }
	json.Unmarshal(laptop.c.Must(t, "GET", localapi.ForwardsPath, nil).Body, &fw)
	if len(fw.Forwards) != 1 || fw.Forwards[0].App != "notes" || !fw.Forwards[0].Open || asked != fw.Forwards[0].BrowserURL {
		t.Errorf("Open notes in Browser asked the desktop to open %q; the forwards: %+v", asked, fw.Forwards)
	}

	// A call whose owner's app is slow: the caller is told outcome_unknown.
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/sleep-then-apply/t", []byte("x"),
		"X-Delta-Request-Id", "tray-1", "X-Delta-App", "editor", "X-Delta-Timeout", "0.5")
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	n := notes.WaitFor(t, "outcome is unknown", 15*time.Second)
	if n.AppName != "Delta" || !strings.Contains(n.Body, "editor → notes on studio: POST /sleep-then-apply/t") || !n.HasImage {
		t.Errorf("unsettled notification: %+v", n)
	}
	const line = "editor → notes on studio: POST /sleep-then-apply/t"
	menu = tray.WaitMenu(t, 10*time.Second, "the unsettled call", func(m []uitest.MenuItem) bool {
		calls, ok := uitest.Find(m, "Delta is asking (1)")
		_, head := uitest.Find(m, "Asking studio about 1 write")
		_, call := uitest.Find(calls.Children, line)
		return ok && head && call
	})
	calls, _ := uitest.Find(menu, "Delta is asking (1)")
	for _, want := range []string{line, "    Outcome unknown, sent ", "    Sent: x", "    It happened…", "    It did not happen…", "    Ask now", "    Copy request id", "    Dismiss…"} {
		if _, ok := uitest.Find(calls.Children, want); !ok {
			t.Errorf("the submenu of the writes Delta asks about lacks %q:\n%s", want, uitest.Lines(menu))
		}
	}

	// "Ask now" asks the owner: its app is still working, so the call
	// stays unknown and the owner's word shows in the menu.
	ask, _ := uitest.Find(calls.Children, "    Ask now")
	if err := tray.Click(ask.ID); err != nil {
		t.Fatal(err)
	}
	gatewaytest.WaitFor(t, 10*time.Second, "the menu's Ask to reach the owner", func() bool {
		return laptop.log.Contains(`action=ask request_id=tray-1 state="outcome unknown"`)
	})
	tray.WaitMenu(t, 10*time.Second, "what the owner said", func(m []uitest.MenuItem) bool {
		s, ok := uitest.Find(m, "    Outcome unknown, sent ")
		return ok && strings.Contains(s.Label, "the owner last said: the app is working on it")
	})

	// The owner's app finishes; the call settles and leaves the menu.
	app.Release("/sleep-then-apply/t")
	gatewaytest.WaitFor(t, 10*time.Second, "the owner's app to carry the call out", func() bool { return app.Effects("/sleep-then-apply/t") == 1 })
	if m, err := tray.Layout(); err == nil {
		if a, ok := uitest.Find(m, "    Ask now"); ok {
			tray.Click(a.ID) // settle it now rather than at the next backoff step
		}
	}
	tray.WaitMenu(t, 30*time.Second, "no write waiting on an owner", func(m []uitest.MenuItem) bool {
		_, none := uitest.Find(m, "No write waits on an owner")
		_, call := uitest.Find(m, line)
		return none && !call
	})
	settled := notes.WaitFor(t, "carried out", 15*time.Second)
	if !strings.Contains(settled.Body, "studio says it was carried out") {
		t.Errorf("settled notification: %+v", settled)
	}
	if c := laptop.c.GetCall(t, "tray-1", 0); c.State != "carried_out" {
		t.Errorf("call is %s, want carried_out", c.State)
	}
	if got := len(notes.All()); got != 2 {
		t.Errorf("%d notifications, want 2 (unsettled, carried out): %+v", got, notes.All())
	}

	// Quit Delta: the process stops cleanly.
	m, err := tray.Layout()
	if err != nil {
		t.Fatal(err)
	}
	quit, ok := uitest.Find(m, "Quit Delta")
	if !ok {
		t.Fatalf("no Quit Delta:\n%s", uitest.Lines(m))
	}
	// A report without Terminal; no uninstaller off a Mac (apt removes it).
	if _, ok := uitest.Find(m, "Report a Problem…"); !ok {
		t.Errorf("no Report a Problem…:\n%s", uitest.Lines(m))
	}
	if _, ok := uitest.Find(m, "Uninstall Delta…"); ok {
		t.Errorf("Uninstall Delta… on Linux:\n%s", uitest.Lines(m))
	}
	if err := tray.Click(quit.ID); err != nil {
		t.Fatal(err)
	}
	if err := laptop.cmd.Wait(); err != nil {
		t.Fatalf("after Quit Delta: %v\n%s", err, laptop.log)
	}
	if _, err := os.Stat(filepath.Join(laptop.dir, "local.json")); !os.IsNotExist(err) {
		t.Errorf("local.json is still there after Quit: %v", err)
	}
	for _, want := range []string{"tray is up", "Quit Delta chosen in the menu", "stopping: listeners close first"} {
		if !laptop.log.Contains(want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

// Without a session bus, Delta runs headless and says why.
func TestHeadlessWithoutSessionBus(t *testing.T) {
	laptop, _ := twoProcs(t)
	laptop.tray = true
	laptop.env = []string{"DBUS_SESSION_BUS_ADDRESS=", "XDG_RUNTIME_DIR=" + t.TempDir()}
	laptop.start(t)
	if r := laptop.c.Must(t, "GET", "/v1/status", nil); r.Status != 200 {
		t.Fatalf("status: %d", r.Status)
	}
	if !laptop.log.Contains("running headless") || !laptop.log.Contains("no DBus session bus") {
		t.Errorf("the log does not say why Delta runs headless:\n%s", laptop.log)
	}
}

// TestTrayPairRequest (issue 66): a computer asking to pair reaches a
// person through the menu and a notification, each with Accept. studio's
// person pairs laptop; laptop's tray, on a private session bus, shows
// "studio asks to pair" with its ID, Accept and Ignore, and a notification
// with an Accept action; clicking the menu's Accept pairs them both ways.
func TestTrayPairRequest(t *testing.T) {
	bus := uitest.StartBus(t)
	notes := bus.ServeNotifications(t)
	notes.SetCaps("body", "actions", "icon-static")
	bus.ServeWatcher(t)
	laptop, studio := unpairedProcs(t)
	laptop.tray = true
	laptop.env = []string{"DBUS_SESSION_BUS_ADDRESS=" + bus.Addr}
	studio.start(t)
	laptop.start(t)
	tray := bus.WaitTray(t, laptop.cmd.Process.Pid, 30*time.Second)
	tray.WaitMenu(t, 10*time.Second, "the first run's words", func(m []uitest.MenuItem) bool {
		_, none := uitest.Find(m, "No computers paired yet")
		return none
	})

	var laptopStatus localapi.Status
	json.Unmarshal(laptop.c.Must(t, "GET", localapi.StatusPath, nil).Body, &laptopStatus)
	var studioStatus localapi.Status
	json.Unmarshal(studio.c.Must(t, "GET", localapi.StatusPath, nil).Body, &studioStatus)
	body, _ := json.Marshal(localapi.PairWith{ID: laptopStatus.Self.ID, Address: laptop.peerAddr})
	if r := studio.c.Must(t, "PUT", localapi.PairPath("laptop"), body); r.Status != 200 || !strings.Contains(string(r.Body), localapi.PairAsked) {
		t.Fatalf("studio pairs laptop: %d %s", r.Status, r.Body)
	}

	n := notes.WaitFor(t, "asks to pair", 15*time.Second)
	if !strings.Contains(n.Summary, "studio asks to pair") || !strings.Contains(n.Body, studioStatus.Self.ID) || !slices.Contains(n.Actions, "accept") {
		t.Errorf("the notification: %+v", n)
	}
	menu := tray.WaitMenu(t, 10*time.Second, "studio's request in the menu", func(m []uitest.MenuItem) bool {
		p, ok := uitest.Find(m, "studio asks to pair")
		_, accept := uitest.Find(p.Children, "Accept")
		return ok && accept
	})
	req, _ := uitest.Find(menu, "studio asks to pair")
	for _, want := range []string{"ID " + studioStatus.Self.ID, "Ignore", "Compare IDs on the Setup Page…"} {
		if _, ok := uitest.Find(req.Children, want); !ok {
			t.Errorf("the request's submenu lacks %q:\n%s", want, uitest.Lines(menu))
		}
	}
	accept, _ := uitest.Find(req.Children, "Accept")
	if err := tray.Click(accept.ID); err != nil {
		t.Fatal(err)
	}
	gatewaytest.WaitFor(t, 20*time.Second, "both to say paired", func() bool {
		return pairedState(t, laptop, "studio") == localapi.PairPaired && pairedState(t, studio, "laptop") == localapi.PairPaired
	})
	tray.WaitMenu(t, 10*time.Second, "the request gone and studio listed", func(m []uitest.MenuItem) bool {
		_, asks := uitest.Find(m, "studio asks to pair")
		_, peer := uitest.Find(m, "studio — ")
		return !asks && peer
	})
}
