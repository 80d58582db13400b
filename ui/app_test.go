package ui

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway"
	"github.com/delta-roads/delta/gateway/modes/static"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/state/statedir"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// fakeTray records what it is shown and lets the test click.
type fakeTray struct {
	mu     sync.Mutex
	menus  []Menu
	wake   chan struct{}
	clicks chan Action
}

func (f *fakeTray) Show(m Menu) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.menus = append(f.menus, m)
	close(f.wake)
	f.wake = make(chan struct{})
}

func (f *fakeTray) Clicks() <-chan Action { return f.clicks }

// waitMenu waits until the tray shows a menu for which cond holds.
func (f *fakeTray) waitMenu(t *testing.T, what string, cond func(Menu) bool) Menu {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		var last Menu
		if n := len(f.menus); n > 0 {
			last = f.menus[n-1]
		}
		wake := f.wake
		f.mu.Unlock()
		if cond(last) {
			return last
		}
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("the menu never showed %s; last: %+v", what, last)
		}
	}
}

// The event loop against a real gateway (static mode, journal on disk):
// a journal change redraws the menu; Copy request id, Open status page,
// Dismiss… and Quit do what they say.
func TestAppLoop(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"name": "laptop", "network_key": "00112233445566778899aabbccddeeff",
		"peers": [{"name": "studio", "roads": {"lan": "127.0.0.1:9"}}]}`), 0o600)
	// The test writes to the gateway's own journal, so that its changes
	// reach the gateway's Changed.
	db, err := journal.Open(filepath.Join(dir, "delta.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := gateway.Config{StateDir: dir, Listen: "127.0.0.1:0", Backoff: []time.Duration{time.Hour}, Journal: db}
	fc, err := statedir.ReadConfig(dir)
	if err == nil {
		err = static.Attach(&cfg, fc, "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	tray := &fakeTray{wake: make(chan struct{}), clicks: make(chan Action)}
	var mu sync.Mutex
	var opened, copied, revealed []string
	uninstalls := 0
	quit := make(chan struct{})
	report := filepath.Join(t.TempDir(), "Delta bug report.tar.gz")
	app := &App{Source: g, Tray: tray, Log: slog.New(slog.DiscardHandler),
		Open: func(u string) error { mu.Lock(); opened = append(opened, u); mu.Unlock(); return nil },
		Copy: func(s string) error { mu.Lock(); copied = append(copied, s); mu.Unlock(); return nil },
		Quit: func() { close(quit) },
		// Report a Problem… and Uninstall Delta… (issue 64, M4).
		Report:    func(context.Context) (string, error) { return report, os.WriteFile(report, []byte("a report"), 0o600) },
		Reveal:    func(p string) error { mu.Lock(); revealed = append(revealed, p); mu.Unlock(); return nil },
		Uninstall: func() error { mu.Lock(); uninstalls++; mu.Unlock(); return nil }}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { app.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	tray.waitMenu(t, "studio", func(m Menu) bool { _, ok := m.Find("peer/studio"); return ok })

	db.Calls().Begin(ctx, &record.Call{RequestID: "r1", Peer: "studio", App: "notes", Method: "POST", Path: "/a", Digest: "d"})
	db.Calls().Move(ctx, "r1", journal.Transition{From: []record.CallState{record.Sending}, To: record.Unknown, NextAsk: time.Now().Add(time.Hour)})
	m := tray.waitMenu(t, "the unsettled call", func(m Menu) bool { _, ok := m.Find("call/r1/ask"); return ok })
	if m.Level != view.Asking {
		t.Errorf("level %s, want asking", m.Level)
	}

	for _, key := range []string{"call/r1/copy", "open", "call/r1/dismiss", "call/r1/happened", "call/r1/nothappened", "report", "uninstall"} {
		it, ok := m.Find(key)
		if !ok {
			t.Fatalf("the menu has no %s", key)
		}
		tray.clicks <- *it.Action
	}
	tray.clicks <- Action{Kind: ActQuit} // processed after the others: one loop
	<-quit
	cancel()
	wg.Wait() // the report is written off the loop
	mu.Lock()
	defer mu.Unlock()
	if b, _ := os.ReadFile(report); string(b) != "a report" || len(revealed) != 1 || revealed[0] != report || uninstalls != 1 {
		t.Errorf("Report a Problem… revealed %q; Uninstall Delta… ran %d times", revealed, uninstalls)
	}
	if len(copied) != 1 || copied[0] != "r1" {
		t.Errorf("copied %q, want the request id", copied)
	}
	if len(opened) != 4 || !strings.HasPrefix(opened[0], g.LocalURL()+"/login?code=") || !strings.HasSuffix(opened[1], "#call-r1") ||
		!strings.HasSuffix(opened[2], "#settle-r1") || !strings.HasSuffix(opened[3], "#settle-r1") {
		t.Errorf("opened %q: want a login link, then one to the call, then two to its settlement", opened)
	}
}

// fakeSource is a gateway with two peers as the menu sees it: studio,
// reached by the lan, and attic, with no road up.
type fakeSource struct{ done chan struct{} }

func (s fakeSource) Snapshot(context.Context) (view.Snapshot, error) {
	return view.Snapshot{Self: localapi.Self{Name: "laptop"}, Peers: []localapi.PeerStatus{{Name: "studio", Road: "lan"}, {Name: "attic"}}}, nil
}
func (s fakeSource) Changed() <-chan struct{} { return make(chan struct{}) }
func (s fakeSource) Done() <-chan struct{}    { return s.done }
func (s fakeSource) Ask(context.Context, string) (*record.Call, error) {
	return nil, record.ErrNotFound
}
func (s fakeSource) LoginLink() string { return "http://127.0.0.1:7420/login?code=C" }

// TestAppPeerApps: the menu asks the peers which apps they share (the
// local API's, here a stand-in) and lists them in each peer's submenu;
// "Open notes in Browser" makes the forward (there was none) and opens
// its browser URL, "Copy notes URL" copies the forward's URL once there
// is one without making another; "Share an App…" and "Pair a Computer…"
// open the setup page at their sections. A peer with no road up is not
// asked (no connects to a computer that is away, every minute).
func TestAppPeerApps(t *testing.T) {
	tray := &fakeTray{wake: make(chan struct{}), clicks: make(chan Action)}
	var mu sync.Mutex
	var opened, copied, made, asked []string
	var fwd *localapi.Forward
	app := &App{Source: fakeSource{done: make(chan struct{})}, Tray: tray, Log: slog.New(slog.DiscardHandler),
		Open: func(u string) error { mu.Lock(); opened = append(opened, u); mu.Unlock(); return nil },
		Copy: func(s string) error { mu.Lock(); copied = append(copied, s); mu.Unlock(); return nil },
		PeerApps: func(_ context.Context, peer string) ([]localapi.PeerApp, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, peer)
			return []localapi.PeerApp{{App: "notes", Forward: fwd}}, nil
		},
		Forward: func(_ context.Context, peer, name string) (*localapi.Forward, error) {
			mu.Lock()
			defer mu.Unlock()
			made = append(made, peer+"/"+name)
			fwd = &localapi.Forward{Peer: peer, App: name, URL: "http://127.0.0.1:4100/", BrowserURL: "http://notes.studio.x.localhost:4100/", Open: true}
			return fwd, nil
		}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { app.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	m := tray.waitMenu(t, "studio's notes", func(m Menu) bool { _, ok := m.Find("peer/studio/app/notes"); return ok })
	open, _ := m.Find("peer/studio/app/notes")
	if open.Title != "Open notes in Browser" || open.Action.Kind != ActOpenApp {
		t.Fatalf("%+v", open)
	}
	tray.clicks <- *open.Action
	m = tray.waitMenu(t, "notes' address after Open", func(m Menu) bool {
		c, _ := m.Find("peer/studio/app/notes/copy")
		return c.Action != nil && c.Action.Kind == ActCopyURL
	})
	c, _ := m.Find("peer/studio/app/notes/copy")
	tray.clicks <- *c.Action
	for _, key := range []string{"setup/share", "setup/pair"} {
		it, _ := m.Find(key)
		tray.clicks <- *it.Action
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(made) != 1 || made[0] != "studio/notes" || len(copied) != 1 || copied[0] != "http://127.0.0.1:4100/" {
		t.Errorf("forwards made %v, copied %v", made, copied)
	}
	if slices.Contains(asked, "attic") || !slices.Contains(asked, "studio") {
		t.Errorf("the peers asked: %v, want studio's road and not attic, which has none up", asked)
	}
	if _, ok := m.Find("peer/attic/apps"); ok {
		t.Error("attic, never asked, says something of its apps")
	}
	// Open's own goroutine opens it: in any order with the setup page's.
	want := []string{"http://notes.studio.x.localhost:4100/", "http://127.0.0.1:7420/login?code=C&open=setup#share", "http://127.0.0.1:7420/login?code=C&open=setup#pair"}
	slices.Sort(want)
	slices.Sort(opened)
	if !slices.Equal(opened, want) {
		t.Errorf("opened %q, want %q", opened, want)
	}
}
