package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// ActionKind is what clicking a menu item does.
type ActionKind string

// The menu's actions.
const (
	ActAsk     ActionKind = "ask"      // ask the owner about a call now
	ActCopyID  ActionKind = "copy-id"  // copy a call's request id
	ActCopyURL ActionKind = "copy-url" // copy a forward's URL
	ActDismiss ActionKind = "dismiss"  // set a call aside: confirmed on the status page
	ActSettle  ActionKind = "settle"   // a person says what happened: confirmed on the status page
	ActOpen    ActionKind = "open"     // open the status page
	ActLogin   ActionKind = "login"    // open the tailnet's login URL
	ActQuit    ActionKind = "quit"
	// ActSettings opens System Settings at URL (macOS's Local Network
	// privacy pane).
	ActSettings ActionKind = "settings"
	// ActReport writes a bug report to the Desktop and shows it in the
	// file manager (Finder).
	ActReport ActionKind = "report"
	// ActUninstall runs the uninstaller, behind the system's own
	// administrator prompt (macOS).
	ActUninstall ActionKind = "uninstall"
	// ActOpenApp opens a peer's app (Peer, App) in the browser: through
	// this computer's forward to it, made first when there is none.
	ActOpenApp ActionKind = "open-app"
	// ActCopyApp copies the URL of this computer's forward to a peer's
	// app (Peer, App), made first when there is none.
	ActCopyApp ActionKind = "copy-app"
	// ActSetup opens the setup page at Section ("share", "pair").
	ActSetup ActionKind = "setup"
	// ActAcceptPair and ActIgnorePair answer the request to pair of
	// PairID (a person's yes here, or no).
	ActAcceptPair ActionKind = "accept-pair"
	ActIgnorePair ActionKind = "ignore-pair"
)

// WithAppItems adds to a built menu what the app can do for a person
// beyond the gateway (issue 64, M4: without Terminal): "Report a
// Problem…" when the app can write a report, "Uninstall Delta…" when it
// can run the uninstaller; before Quit.
func WithAppItems(m Menu, report, uninstall bool) Menu {
	var extra []Item
	if report {
		extra = append(extra, Item{Key: "report", Title: "Report a Problem…", Tooltip: "Write a bug report to the Desktop (no tokens, keys or bodies) and show it in Finder",
			Action: &Action{Kind: ActReport}})
	}
	if uninstall {
		extra = append(extra, Item{Key: "uninstall", Title: "Uninstall Delta…", Tooltip: "Remove Delta from this Mac (asks for an administrator's password); your data is kept",
			Action: &Action{Kind: ActUninstall}})
	}
	if len(extra) == 0 {
		return m
	}
	i := len(m.Items)
	for j, it := range m.Items {
		if it.Key == "sep/quit" {
			i = j
			break
		}
	}
	items := append(append(append([]Item{}, m.Items[:i]...), extra...), m.Items[i:]...)
	m.Items = items
	return m
}

// LocalNetworkSettings opens System Settings at Privacy & Security › Local
// Network.
const LocalNetworkSettings = "x-apple.systempreferences:com.apple.preference.security?Privacy_LocalNetwork"

// Action is a click's meaning.
type Action struct {
	Kind   ActionKind
	CallID string // ask, copy-id, dismiss
	// ReceiptID, with open: open the page at a received call.
	ReceiptID string
	URL       string // login, settings, copy-url
	// Peer and App name a peer's app (open-app, copy-app); Section the
	// setup page's (setup).
	Peer, App, Section string
	// PairID is the ID of a computer asking to pair (accept-pair,
	// ignore-pair).
	PairID string
}

// Item is one menu entry. An item without an Action and without Children
// is an information line, shown disabled.
type Item struct {
	// Key names the item across rebuilds ("peer/studio/lan",
	// "call/ID/ask"): an item with the same key is the same item.
	Key       string
	Title     string
	Tooltip   string
	Action    *Action
	Children  []Item
	Separator bool
}

// Enabled reports whether the item can be clicked or opened.
func (it Item) Enabled() bool { return it.Action != nil || len(it.Children) > 0 }

// Menu is the whole tray: the icon's state, its tooltip and the items.
type Menu struct {
	Level   view.Level
	Tooltip string
	Items   []Item
}

// MaxCallsInMenu is how many unsettled calls the menu lists; the rest are
// on the status page.
const MaxCallsInMenu = 10

// Build turns a gateway snapshot into the menu (DESIGN §6). It is a pure
// function of its arguments: now is only used for ages.
func Build(s view.Snapshot, now time.Time) Menu {
	level, headline := view.Overall(s)
	m := Menu{Level: level, Tooltip: "Delta: " + headline}
	add := func(it Item) { m.Items = append(m.Items, it) }
	sep := func(key string) { add(Item{Key: "sep/" + key, Separator: true}) }

	add(Item{Key: "headline", Title: headline})
	for i, n := range s.Notices {
		add(Item{Key: fmt.Sprintf("notice-%d", i), Title: view.Clip(n, 80), Tooltip: n})
	}
	if s.JournalBehind != "" {
		title := "Journal: cannot write; outcomes held in memory…"
		if s.JournalDiskFull {
			title = "Disk full: call outcomes not yet written…"
		}
		add(Item{Key: "journal-behind", Title: title, Tooltip: s.JournalBehind, Action: &Action{Kind: ActOpen}})
	}
	if s.JournalWarning != "" {
		add(Item{Key: "journal", Title: "Journal: it cannot vouch for older calls…", Tooltip: s.JournalWarning, Action: &Action{Kind: ActOpen}})
	}
	if t := s.Tailnet; t != nil && t.Message != "" && t.State != "Running" && !t.NeedsLogin {
		add(Item{Key: "tailnet", Title: view.Clip(s.Tailnet.Message, 70)})
	}
	for _, r := range s.PairRequests {
		add(pairRequestItem(r))
	}
	sep("peers")
	if len(s.Peers) == 0 {
		// First run: the ways to begin (a tailnet's login is below).
		add(Item{Key: "peers/none", Title: "No computers paired yet"})
		if s.Tailnet == nil {
			add(Item{Key: "peers/pair", Title: "Pair a Computer Nearby…", Tooltip: "opens the setup page at the Deltas heard on this network",
				Action: &Action{Kind: ActSetup, Section: "pair"}})
		}
	}
	for _, p := range s.Peers {
		it := peerItem(p, now)
		it.Children = append(it.Children, forwardItems(it.Key, p.Name, s.Forwards)...)
		for i, x := range s.Transfers {
			if x.Peer == p.Name {
				it.Children = append(it.Children, Item{Key: fmt.Sprintf("%s/transfer-%d", it.Key, i), Title: "    " + view.Clip(view.TransferLine(x, now), 90)})
			}
		}
		add(it)
	}
	sep("calls")
	for _, it := range callsItems(s, now) {
		add(it)
	}
	sep("actions")
	add(Item{Key: "open", Title: "Open status page", Action: &Action{Kind: ActOpen}})
	add(Item{Key: "setup/share", Title: "Share an App…", Tooltip: "opens the setup page: the programs listening on this computer, to share with your other computers",
		Action: &Action{Kind: ActSetup, Section: "share"}})
	add(Item{Key: "setup/pair", Title: "Pair a Computer…", Tooltip: "opens the setup page: the Deltas heard nearby, and this computer's ID",
		Action: &Action{Kind: ActSetup, Section: "pair"}})
	if t := s.Tailnet; t != nil && t.NeedsLogin {
		it := Item{Key: "login", Title: "Log in to tailnet…"}
		if t.LoginURL != "" {
			it.Action = &Action{Kind: ActLogin, URL: t.LoginURL}
		} else {
			it.Title = "Log in to tailnet… (waiting for a login address)"
		}
		add(it)
	}
	sep("quit")
	add(Item{Key: "quit", Title: "Quit Delta", Action: &Action{Kind: ActQuit}})
	safeItems(m.Items) // whatever an app or a peer wrote reaches a person as view.Safe makes it
	m.Tooltip = view.Safe(m.Tooltip)
	return m
}

// pairRequestItem is a computer asking to pair: its name (its own word)
// and ID, Accept, Ignore, and the setup page to compare the IDs first.
func pairRequestItem(r localapi.PairRequest) Item {
	key := "pair/" + r.ID
	return Item{Key: key, Title: askerName(r) + " asks to pair", Tooltip: fmt.Sprintf("ID %s at %s: accept only if its own screen shows this ID", r.ID, r.Address),
		Children: []Item{
			{Key: key + "/id", Title: "ID " + r.ID},
			{Key: key + "/accept", Title: "Accept", Tooltip: "pair it with this computer as " + r.Name, Action: &Action{Kind: ActAcceptPair, PairID: r.ID}},
			{Key: key + "/ignore", Title: "Ignore", Tooltip: "nothing is paired; it is not shown again until Delta restarts", Action: &Action{Kind: ActIgnorePair, PairID: r.ID}},
			{Key: key + "/page", Title: "Compare IDs on the Setup Page…", Action: &Action{Kind: ActSetup, Section: "pair"}},
		}}
}

// askerName is the name a computer asking to pair gives itself, or "A
// computer" when it gave a paired peer's (the request keeps none).
func askerName(r localapi.PairRequest) string {
	if r.Name == "" {
		return "A computer"
	}
	return view.Clip(r.Name, 40)
}

// safeItems makes every title and tooltip view.Safe.
func safeItems(items []Item) {
	for i := range items {
		items[i].Title, items[i].Tooltip = view.Safe(items[i].Title), view.Safe(items[i].Tooltip)
		safeItems(items[i].Children)
	}
}

// offlineSince says since when the tailnet has had p offline, "" if it
// does not say so.
func offlineSince(p localapi.PeerStatus) string {
	for _, r := range p.Roads {
		if !r.OfflineSince.IsZero() {
			return r.OfflineSince.Local().Format("15:04")
		}
	}
	return ""
}

func peerItem(p localapi.PeerStatus, now time.Time) Item {
	key := "peer/" + p.Name
	it := Item{Key: key}
	switch cur := currentRoad(p); {
	case cur != nil && cur.RTTMillis > 0:
		it.Title = fmt.Sprintf("%s — %s, %s", p.Name, cur.Road, view.FormatMillis(cur.RTTMillis))
	case cur != nil:
		it.Title = fmt.Sprintf("%s — %s", p.Name, cur.Road)
	case !view.PeerReachable(p) && offlineSince(p) != "":
		it.Title = p.Name + " — offline since " + offlineSince(p)
	case !view.PeerReachable(p):
		it.Title = p.Name + " — unreachable"
	default:
		it.Title = p.Name + " — not checked yet"
	}
	for _, r := range p.Roads {
		rk := key + "/" + string(r.Road)
		where := r.Address
		if r.Interface != "" {
			where += " on " + r.Interface
		}
		line := fmt.Sprintf("%s  %s — %s", r.Road, where, r.State)
		if r.RTTMillis > 0 && r.State == localapi.RoadUp {
			line += ", " + view.FormatMillis(r.RTTMillis)
		}
		it.Children = append(it.Children, Item{Key: rk, Title: line})
		if r.Path != "" {
			it.Children = append(it.Children, Item{Key: rk + "/path", Title: "    " + r.Path})
		}
		if !r.OfflineSince.IsZero() {
			it.Children = append(it.Children, Item{Key: rk + "/offline", Title: "    offline on the tailnet since " + r.OfflineSince.Local().Format("Mon 2 Jan 15:04")})
		}
		if !r.HeldDownUntil.IsZero() && r.HeldDownUntil.After(now) {
			it.Children = append(it.Children, Item{Key: rk + "/held", Title: "    held down until " + r.HeldDownUntil.Local().Format("15:04:05")})
		}
		if r.DroppedWhy != "" {
			it.Children = append(it.Children, Item{Key: rk + "/dropped", Title: "    last dropped " + r.DroppedAt.Local().Format("15:04:05") + ": " + view.Clip(r.DroppedWhy, 70),
				Tooltip: r.DroppedWhy})
		}
		if r.LastError != "" && r.State != localapi.RoadUp {
			if r.LastError != r.DroppedWhy { // said once
				it.Children = append(it.Children, Item{Key: rk + "/error", Title: "    " + view.Clip(r.LastError, 90), Tooltip: r.LastError})
			}
			if r.Hint == localapi.HintLocalNetwork {
				it.Children = append(it.Children, Item{Key: rk + "/local-network", Title: "    macOS may block Local Network access: allow Delta…",
					Tooltip: "System Settings › Privacy & Security › Local Network", Action: &Action{Kind: ActSettings, URL: LocalNetworkSettings}})
			}
		}
	}
	return it
}

// forwardItems are a peer's apps with forwards on this computer, each
// with its URL and Copy URL (and, where a browser keeps its cookies apart,
// Copy browser URL).
func forwardItems(key, peer string, fws []localapi.Forward) []Item {
	var out []Item
	for _, f := range fws {
		if f.Peer != peer {
			continue
		}
		fk := key + "/forward/" + f.App
		it := Item{Key: fk, Title: f.App + " — " + f.URL}
		switch {
		case !f.Open:
			it.Title = f.App + " — forward not open"
			it.Tooltip = f.Error
			it.Children = []Item{{Key: fk + "/error", Title: view.Clip(f.Error, 90), Tooltip: f.Error}}
		default:
			it.Children = []Item{{Key: fk + "/copy", Title: "Copy URL", Tooltip: f.URL, Action: &Action{Kind: ActCopyURL, URL: f.URL}}}
			if f.BrowserURL != "" {
				it.Children = append(it.Children, Item{Key: fk + "/copy-browser", Title: "Copy browser URL", Tooltip: f.BrowserURL, Action: &Action{Kind: ActCopyURL, URL: f.BrowserURL}})
			}
		}
		out = append(out, it)
	}
	return out
}

// currentRoad is the road the peer is reached by now, if any is up.
func currentRoad(p localapi.PeerStatus) *localapi.RoadStatus {
	for i := range p.Roads {
		if p.Roads[i].Road == p.Road && p.Roads[i].State == localapi.RoadUp {
			return &p.Roads[i]
		}
	}
	return nil
}

// callsItems are the calls by what a person must do (view.Group): "Needs
// you (N)" and "Delta is asking (N)", each with its calls' lines and
// actions in its submenu, and the received calls to check; or one line
// saying nothing waits. Two levels, not three: libdbusmenu-gtk (Xfce,
// Cinnamon, GNOME's extensions) shows a third level's submenus empty.
func callsItems(s view.Snapshot, now time.Time) []Item {
	g := view.Group(s)
	var out []Item
	group := func(key, title string, calls []*record.Call) {
		count := fmt.Sprint(len(calls))
		if s.UnsettledMore { // the list is capped: either group may hold more
			count += " or more"
		}
		it := Item{Key: key, Title: fmt.Sprintf("%s (%s)", title, count)}
		for i, c := range calls {
			if i == MaxCallsInMenu {
				it.Children = append(it.Children, Item{Key: key + "/more", Title: fmt.Sprintf("%d more on the status page…", len(calls)-i), Action: &Action{Kind: ActOpen}})
				break
			}
			if i > 0 {
				it.Children = append(it.Children, Item{Key: "call/" + c.RequestID + "/sep", Separator: true})
			}
			it.Children = append(it.Children, callItems(c, now)...)
		}
		out = append(out, it)
	}
	if len(g.NeedsYou) > 0 {
		group("calls/needs", "Needs you", g.NeedsYou)
	}
	if g.ToCheck > 0 {
		it := Item{Key: "received/check", Title: fmt.Sprintf("Received calls to check (%d)…", g.ToCheck),
			Tooltip: "calls this computer's apps received that may or may not have been carried out: opens the status page at the first"}
		for _, r := range s.Received {
			if r.ToCheck {
				it.Action = &Action{Kind: ActOpen, ReceiptID: r.RequestID}
				break
			}
		}
		out = append(out, it)
	}
	if len(g.Asking) > 0 {
		group("calls/asking", "Delta is asking", g.Asking)
	}
	if len(out) > 0 {
		return out
	}
	if d := len(g.SetAside); d > 0 {
		return []Item{{Key: "calls", Title: fmt.Sprintf("Nothing needs you (%d set aside, still asked about)", d), Action: &Action{Kind: ActOpen}}}
	}
	return []Item{{Key: "calls", Title: "No write waits on an owner"}}
}

// callItems are one unsettled call's lines: what it is, how it stands,
// and its three actions.
func callItems(c *record.Call, now time.Time) []Item {
	key := "call/" + c.RequestID
	said := "not asked yet"
	if c.OwnerState != "" {
		said = "the owner last said: " + view.OwnerWords(c.OwnerState)
	}
	items := []Item{
		{Key: key, Title: view.CallLine(c) + " — " + view.Ago(now.Sub(c.CreatedAt)), Tooltip: "request id " + c.RequestID},
		{Key: key + "/state", Title: fmt.Sprintf("    %s, sent %s ago; %s", capitalize(view.Words(c.State)), view.Ago(now.Sub(c.CreatedAt)), said)},
	}
	if c.Detail != "" {
		items = append(items, Item{Key: key + "/detail", Title: "    " + view.Clip(c.Detail, 90), Tooltip: c.Detail})
	}
	if c.Request != nil {
		items = append(items, Item{Key: key + "/sent", Title: "    Sent: " + view.Excerpt(c.Request, 70)})
	}
	if c.State == record.NeedsPerson || c.State == record.Unknown {
		items = append(items,
			Item{Key: key + "/happened", Title: "    It happened…", Tooltip: "opens the status page at this call, where you confirm: Delta stops asking the owner",
				Action: &Action{Kind: ActSettle, CallID: c.RequestID}},
			Item{Key: key + "/nothappened", Title: "    It did not happen…", Tooltip: "opens the status page at this call, where you confirm: Delta stops asking the owner",
				Action: &Action{Kind: ActSettle, CallID: c.RequestID}})
	}
	items = append(items,
		Item{Key: key + "/ask", Title: "    Ask now", Action: &Action{Kind: ActAsk, CallID: c.RequestID}},
		Item{Key: key + "/copy", Title: "    Copy request id", Tooltip: c.RequestID, Action: &Action{Kind: ActCopyID, CallID: c.RequestID}})
	if c.State == record.Unknown { // a call that needs a person is never hidden
		items = append(items, Item{Key: key + "/dismiss", Title: "    Dismiss…", Tooltip: "opens the status page at this call: dismissing hides it from the menu, and Delta keeps asking the owner",
			Action: &Action{Kind: ActDismiss, CallID: c.RequestID}})
	}
	return items
}

// menuLabel is a title as the tray shows it on goos: dbusmenu (Linux)
// takes "_" for the mark of a keyboard access key and drops it
// ("app_unknown" shows as "appunknown"), so each is doubled there; the
// macOS menu bar shows titles as they are.
func menuLabel(title, goos string) string {
	if goos == "linux" {
		return strings.ReplaceAll(title, "_", "__")
	}
	return title
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Find returns the item with key in m, if any (for tests and clicks).
func (m Menu) Find(key string) (Item, bool) {
	var walk func([]Item) (Item, bool)
	walk = func(items []Item) (Item, bool) {
		for _, it := range items {
			if it.Key == key {
				return it, true
			}
			if f, ok := walk(it.Children); ok {
				return f, true
			}
		}
		return Item{}, false
	}
	return walk(m.Items)
}

// Shape lists every key in menu order, nesting marked: two menus with the
// same shape differ only in titles, so a tray can update them in place.
func (m Menu) Shape() string {
	var b strings.Builder
	var walk func([]Item)
	walk = func(items []Item) {
		for _, it := range items {
			b.WriteString(it.Key)
			if len(it.Children) > 0 {
				b.WriteString("{")
				walk(it.Children)
				b.WriteString("}")
			}
			b.WriteString(";")
		}
	}
	walk(m.Items)
	return b.String()
}

// Shared is what a peer shares with this computer, as it said when last
// asked (GET /v1/peer-apps/PEER), or why it could not be asked.
type Shared struct {
	Apps []localapi.PeerApp
	Err  string
}

// WithShared adds to each peer's submenu the apps it shares (shared, by
// peer name; a peer not in it was not asked yet): "Open NAME in Browser"
// and "Copy NAME URL", each making this computer's forward to it first
// when there is none. Two levels, as callsItems: no third. A forward's
// own item is left out for an app listed so.
func WithShared(m Menu, shared map[string]Shared) Menu {
	items := append([]Item(nil), m.Items...)
	for i, it := range items {
		peer, ok := strings.CutPrefix(it.Key, "peer/")
		sh, asked := shared[peer]
		if !ok || strings.Contains(peer, "/") || !asked {
			continue
		}
		var kids []Item
		listed := map[string]bool{}
		for _, a := range sh.Apps {
			listed[a.App] = true
		}
		for _, k := range it.Children {
			if app, ok := strings.CutPrefix(k.Key, it.Key+"/forward/"); ok && listed[app] {
				continue
			}
			kids = append(kids, k)
		}
		switch {
		case sh.Err != "":
			kids = append(kids, Item{Key: it.Key + "/apps", Title: "Its apps: could not ask now", Tooltip: sh.Err})
		case len(sh.Apps) == 0:
			kids = append(kids, Item{Key: it.Key + "/apps", Title: "Shares no apps"})
		}
		for _, a := range sh.Apps {
			ak := it.Key + "/app/" + a.App
			open := Item{Key: ak, Title: "Open " + a.App + " in Browser", Tooltip: "makes an address on this computer for it, and opens it",
				Action: &Action{Kind: ActOpenApp, Peer: peer, App: a.App}}
			copyURL := Item{Key: ak + "/copy", Title: "Copy " + a.App + " URL", Tooltip: "makes an address on this computer for it, and copies it for an app",
				Action: &Action{Kind: ActCopyApp, Peer: peer, App: a.App}}
			if f := a.Forward; f != nil && f.Open {
				open.Tooltip, copyURL.Tooltip = f.URL, f.URL
				copyURL.Action = &Action{Kind: ActCopyURL, URL: f.URL}
			}
			kids = append(kids, open, copyURL)
		}
		items[i].Children = kids
	}
	m.Items = items
	safeItems(m.Items)
	return m
}
