package ui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/atotto/clipboard"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// Tray shows a Menu and reports clicks. The real one is the system tray
// (Systray); tests may use their own.
type Tray interface {
	// Show replaces what the tray shows with m.
	Show(m Menu)
	// Clicks delivers the actions of clicked items.
	Clicks() <-chan Action
}

// Settle is how long the app waits after a change for more before it
// redraws the menu: a burst of changes is one redraw.
const Settle = 150 * time.Millisecond

// Source is what the menu-bar app sees of the gateway (served by
// *gateway.Gateway): what to show, when it changed, and the actions a click
// asks for.
type Source interface {
	// Snapshot reads what the menu shows.
	Snapshot(ctx context.Context) (view.Snapshot, error)
	// Changed closes at the next change to what Snapshot shows.
	Changed() <-chan struct{}
	// Done closes when the gateway is closing.
	Done() <-chan struct{}
	// Ask asks the owner about an unsettled call now; errors wrap
	// record.ErrNotFound for a call that is not there.
	Ask(ctx context.Context, id string) (*record.Call, error)
	// LoginLink mints a one-time link to the status page.
	LoginLink() string
}

// App is the menu-bar app's event loop: gateway changes in, menu out;
// clicks in, gateway actions out.
type App struct {
	Source Source
	Tray   Tray
	Log    *slog.Logger
	// Open opens a URL in the browser. If nil, OpenURL.
	Open func(url string) error
	// Copy puts text on the clipboard. If nil, the system clipboard.
	Copy func(text string) error
	// Quit is called for "Quit Delta".
	Quit func()
	// Report, if not nil, writes a bug report and returns its path: the
	// menu offers "Report a Problem…", and the report is then shown with
	// Reveal (if nil, RevealFile).
	Report func(ctx context.Context) (string, error)
	Reveal func(path string) error
	// Uninstall, if not nil, starts the uninstaller: the menu offers
	// "Uninstall Delta…". It stops this Delta, so it is started, never
	// waited on here.
	Uninstall func() error
	// Now is the clock for ages. If nil, time.Now.
	Now func() time.Time
	// Quitting, if not nil, reports a quit in progress: the menu is not
	// drawn again (on macOS a tray call then may never return).
	Quitting func() bool
	// Notes, if not nil, delivers the actions clicked on notifications
	// ("Open status page", "Ask now"), done as menu clicks are.
	Notes <-chan Action
	// PeerApps asks a peer which apps it shares (GET
	// /v1/peer-apps/PEER), Forward makes this computer's forward to one
	// (PUT /v1/forwards/PEER/APP): the local API's, which the menu is a
	// client of for them. If PeerApps is nil, the peers' submenus list no
	// apps.
	PeerApps func(ctx context.Context, peer string) ([]localapi.PeerApp, error)
	Forward  func(ctx context.Context, peer, app string) (*localapi.Forward, error)
	// AnswerPair accepts (localapi.PairAccept) or ignores a computer's
	// request to pair (POST /v1/pair-requests/ID/ACTION). If nil, the
	// menu's Accept and Ignore open the setup page instead.
	AnswerPair func(ctx context.Context, id, action string) error
	// Sender, if not nil, shows a notification for each computer that
	// asks to pair, with Accept.
	Sender Sender

	wg       sync.WaitGroup
	sharedMu sync.Mutex
	shared   map[string]Shared
	ask      chan struct{}   // asks the peers about their apps again, now
	asked    chan struct{}   // the peers' apps changed: redraw
	roads    string          // the peers and their roads at the last draw (the loop's)
	told     map[string]bool // the requests to pair a note was sent for (the loop's)
}

// SharedEvery is how often the menu asks the peers which apps they share;
// they are also asked when a peer comes, goes, or changes road.
const SharedEvery = time.Minute

// sharedWait bounds the question to one peer about its apps.
const sharedWait = 5 * time.Second

// askShared keeps a.shared: every peer with a road up asked at once, now
// and every SharedEvery (or when a.ask says), until ctx ends. A peer with
// no road up is not asked (the menu would make connects to a computer
// that is away, every minute): what it said last is kept, and it is
// asked when a road comes up (draw's peerRoads).
func (a *App) askShared(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.Source.Done():
			return
		case <-t.C:
		case <-a.ask:
		}
		snap, err := a.Source.Snapshot(ctx)
		if err == nil {
			last := a.sharedNow()
			got := map[string]Shared{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, p := range snap.Peers {
				if p.Road == "" {
					if sh, ok := last[p.Name]; ok {
						got[p.Name] = sh
					}
					continue
				}
				wg.Go(func() {
					qctx, cancel := context.WithTimeout(ctx, sharedWait)
					defer cancel()
					apps, err := a.PeerApps(qctx, p.Name)
					sh := Shared{Apps: apps}
					if err != nil {
						sh = Shared{Err: err.Error()}
					}
					mu.Lock()
					got[p.Name] = sh
					mu.Unlock()
				})
			}
			wg.Wait()
			a.sharedMu.Lock()
			a.shared = got
			a.sharedMu.Unlock()
			poke(a.asked)
		}
		t.Reset(SharedEvery)
	}
}

// peerRoads names the peers and the road each is reached by now.
func peerRoads(s view.Snapshot) string {
	var b strings.Builder
	for _, p := range s.Peers {
		b.WriteString(p.Name + "=" + string(p.Road) + ";")
	}
	return b.String()
}

// poke sends on a channel of one slot unless a send waits there already.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// sharedNow is what the peers shared when last asked.
func (a *App) sharedNow() map[string]Shared {
	a.sharedMu.Lock()
	defer a.sharedMu.Unlock()
	return a.shared
}

// Run draws the menu and follows the gateway until ctx ends.
func (a *App) Run(ctx context.Context) {
	if a.Open == nil {
		a.Open = OpenURL
	}
	if a.Copy == nil {
		a.Copy = clipboard.WriteAll
	}
	if a.Now == nil {
		a.Now = time.Now
	}
	defer a.wg.Wait()
	a.ask, a.asked = make(chan struct{}, 1), make(chan struct{}, 1)
	if a.PeerApps != nil {
		a.wg.Go(func() { a.askShared(ctx) })
	}
	redraw := time.NewTimer(0)
	defer redraw.Stop()
	var changed <-chan struct{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.Source.Done():
			return
		case <-changed:
			changed = nil
			redraw.Reset(Settle)
		case <-redraw.C:
			changed = a.Source.Changed()
			next := a.draw(ctx)
			redraw.Reset(next)
		case <-a.asked:
			redraw.Reset(Settle)
		case act := <-a.Tray.Clicks():
			a.do(ctx, act)
		case act := <-a.Notes:
			a.do(ctx, act)
		}
	}
}

// show shows m, unless a quit is in progress.
func (a *App) show(m Menu) {
	if a.Quitting != nil && a.Quitting() {
		return
	}
	a.Tray.Show(m)
}

// draw shows the menu as it is now and returns when to draw again even if
// nothing changes: ages tick, hold-downs end.
func (a *App) draw(ctx context.Context) time.Duration {
	snap, err := a.Source.Snapshot(ctx)
	if err != nil {
		if ctx.Err() == nil {
			a.Log.Error("menu: could not read the gateway's state", "err", err)
		}
		return 5 * time.Second
	}
	now := a.Now()
	if roads := peerRoads(snap); roads != a.roads && a.PeerApps != nil {
		a.roads = roads // a peer came, went or changed road: ask again
		poke(a.ask)
	}
	a.tellPairRequests(snap.PairRequests)
	a.show(WithAppItems(WithShared(Build(snap, now), a.sharedNow()), a.Report != nil, a.Uninstall != nil))
	next := time.Minute - time.Duration(now.Second())*time.Second // ages are in minutes beyond the first
	if len(snap.Unsettled) > 0 {
		next = min(next, 10*time.Second)
	}
	if len(snap.Transfers) > 0 {
		next = min(next, time.Second) // bytes and rates move
	}
	for _, p := range snap.Peers {
		for _, r := range p.Roads {
			if d := r.HeldDownUntil.Sub(now); d > 0 {
				next = min(next, d+10*time.Millisecond)
			}
		}
	}
	return max(next, Settle)
}

// tellPairRequests sends a note for each request to pair not told yet
// (PairNote), off the loop.
func (a *App) tellPairRequests(reqs []localapi.PairRequest) {
	if a.Sender == nil {
		return
	}
	if a.told == nil {
		a.told = map[string]bool{}
	}
	now := map[string]bool{}
	for _, r := range reqs {
		now[r.ID] = true
		if a.told[r.ID] {
			continue
		}
		n := PairNote(r)
		a.wg.Go(func() {
			if err := a.Sender.Send(n); err != nil {
				a.Log.Warn("could not show a notification for a request to pair", "err", err)
			}
		})
	}
	a.told = now // a request answered and made again is told again
}

// PairNote is the notification for a computer asking to pair.
func PairNote(r localapi.PairRequest) Note {
	return Note{Title: view.Safe(askerName(r)) + " asks to pair with this computer",
		Body:   view.Safe(fmt.Sprintf("ID %s, at %s. Accept only if its own screen shows this ID.", r.ID, r.Address)),
		PairID: r.ID}
}

func (a *App) do(ctx context.Context, act Action) {
	switch act.Kind {
	case ActAcceptPair, ActIgnorePair:
		action := localapi.PairAccept
		if act.Kind == ActIgnorePair {
			action = localapi.PairIgnore
		}
		if a.AnswerPair == nil {
			a.do(ctx, Action{Kind: ActSetup, Section: "pair"})
			return
		}
		a.wg.Go(func() {
			if err := a.AnswerPair(ctx, act.PairID, action); err != nil {
				a.Log.Warn("menu: the request to pair was not answered; the setup page shows it", "id", act.PairID, "action", action, "err", err)
				if err := a.Open(view.PageAt(a.Source.LoginLink(), "setup", "pair")); err != nil {
					a.Log.Warn("could not open the setup page in a browser", "err", err)
				}
				return
			}
			a.Log.Info("menu: a request to pair answered", "id", act.PairID, "action", action)
		})
	case ActQuit:
		a.Log.Info("Quit Delta chosen in the menu")
		if a.Quit != nil {
			a.Quit()
		}
	case ActOpen, ActDismiss, ActSettle:
		// "Dismiss…" and "It happened…" open the page at the call, where a
		// person confirms (the login keeps the #fragment).
		url := a.Source.LoginLink()
		switch act.Kind {
		case ActOpen:
			if act.CallID != "" { // a notification's "Open status page"
				url = view.PageAt(url, "call-"+act.CallID, "call-"+act.CallID)
			}
			if act.ReceiptID != "" {
				url = view.PageAt(url, "receipt-"+act.ReceiptID, "receipt-"+act.ReceiptID)
			}
		case ActDismiss:
			url = view.PageAt(url, "call-"+act.CallID, "call-"+act.CallID)
		case ActSettle:
			url = view.PageAt(url, "call-"+act.CallID, "settle-"+act.CallID)
		}
		if err := a.Open(url); err != nil {
			a.Log.Warn("could not open the status page in a browser", "err", err, "hint", "run `delta open` to print a login link")
		}
	case ActSetup:
		if err := a.Open(view.PageAt(a.Source.LoginLink(), "setup", act.Section)); err != nil {
			a.Log.Warn("could not open the setup page in a browser", "err", err, "hint", "run `delta open --setup` to print a login link")
		}
	case ActOpenApp, ActCopyApp:
		if a.Forward == nil {
			return
		}
		// Making the forward asks Delta (and the peer, a few seconds at
		// most, whether it has the app): never on the menu's loop.
		a.wg.Go(func() {
			f := a.forwardFor(act.Peer, act.App)
			var err error
			if f == nil {
				if f, err = a.Forward(ctx, act.Peer, act.App); err != nil {
					a.Log.Warn("menu: could not make an address on this computer for a peer's app", "peer", act.Peer, "app", act.App, "err", err)
					return
				}
			}
			poke(a.ask) // its address is shown from now on
			if act.Kind == ActCopyApp {
				if err := a.Copy(f.URL); err != nil {
					a.Log.Warn("could not copy the forward's URL to the clipboard", "err", err, "url", f.URL)
				}
				return
			}
			u := f.URL
			if f.BrowserURL != "" {
				u = f.BrowserURL // its cookies its own
			}
			if err := a.Open(u); err != nil {
				a.Log.Warn("could not open a peer's app in a browser", "err", err, "url", u)
			}
		})
	case ActLogin:
		if err := a.Open(act.URL); err != nil {
			a.Log.Warn("could not open the tailnet's login page", "err", err, "url", act.URL)
		}
	case ActSettings:
		if err := a.Open(act.URL); err != nil {
			a.Log.Warn("could not open System Settings", "err", err, "url", act.URL)
		}
	case ActReport:
		if a.Report == nil {
			return
		}
		// Writing it reads the logs and asks Delta's own API: never on
		// the menu's loop.
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			path, err := a.Report(ctx)
			if err != nil {
				a.Log.Warn("menu: could not write the bug report", "err", err)
				return
			}
			a.Log.Info("menu: wrote a bug report", "path", path)
			reveal := a.Reveal
			if reveal == nil {
				reveal = RevealFile
			}
			if err := reveal(path); err != nil {
				a.Log.Warn("menu: could not show the bug report in the file manager", "path", path, "err", err)
			}
		}()
	case ActUninstall:
		if a.Uninstall == nil {
			return
		}
		a.Log.Info("Uninstall Delta chosen in the menu: the uninstaller asks for an administrator's password, then stops Delta")
		if err := a.Uninstall(); err != nil {
			a.Log.Warn("menu: could not start the uninstaller", "err", err)
		}
	case ActCopyURL:
		if err := a.Copy(act.URL); err != nil {
			a.Log.Warn("could not copy the forward's URL to the clipboard", "err", err, "url", act.URL)
		}
	case ActCopyID:
		if err := a.Copy(act.CallID); err != nil {
			a.Log.Warn("could not copy the request id to the clipboard", "err", err, "request_id", act.CallID)
		}
	case ActAsk:
		// Asking may wait on the network: never block the menu on it.
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			c, err := a.Source.Ask(ctx, act.CallID)
			switch {
			case errors.Is(err, record.ErrNotFound):
				a.Log.Warn("menu: there is no such call on this computer", "action", act.Kind, "request_id", act.CallID)
			case err != nil:
				a.Log.Warn("menu: the action on a call failed", "action", act.Kind, "request_id", act.CallID, "err", err)
			default:
				a.Log.Info("menu: action on a call done", "action", act.Kind, "request_id", act.CallID, "state", view.Words(c.State))
			}
		}()
	}
}

// forwardFor is this computer's open forward to app on peer as the peers
// were last asked, nil if there was none: one there is is used as it is
// (its address, token and timeout are a person's choices).
func (a *App) forwardFor(peer, app string) *localapi.Forward {
	for _, pa := range a.sharedNow()[peer].Apps {
		if pa.App == app && pa.Forward != nil && pa.Forward.Open {
			return pa.Forward
		}
	}
	return nil
}

// RevealFile shows the file at path in the file manager: selected in a
// Finder window on macOS (open -R), its folder elsewhere (xdg-open).
func RevealFile(path string) error {
	name, args := RevealCommand(runtime.GOOS, path)
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	go cmd.Wait() //nolint:errcheck // the file manager's exit says nothing of the file
	return nil
}

// RevealCommand is the command RevealFile runs on goos.
func RevealCommand(goos, path string) (string, []string) {
	if goos == "darwin" {
		return "open", []string{"-R", path}
	}
	return "xdg-open", []string{filepath.Dir(path)}
}

// UninstallCommand is what "Uninstall Delta…" runs on a Mac: the bundle's
// uninstaller as root, behind macOS's own administrator prompt
// (osascript's do shell script … with administrator privileges), which
// names why it asks.
func UninstallCommand(script string) (string, []string) {
	quoted := "'" + strings.ReplaceAll(script, "'", `'\''`) + "'"
	as := fmt.Sprintf(`do shell script %q with administrator privileges with prompt "Delta wants to uninstall itself. Your data is kept."`, quoted)
	return "/usr/bin/osascript", []string{"-e", as}
}

// OpenURL opens url in the default browser.
func OpenURL(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.Command(name, url)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	go cmd.Wait()
	return nil
}
