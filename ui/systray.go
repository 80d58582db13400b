//go:build !darwin || cgo

package ui

import (
	"log/slog"
	"runtime"
	"sync"

	"fyne.io/systray"

	"github.com/delta-roads/delta/assets"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// TrayAvailable reports whether this build has a system tray: on macOS it
// needs cgo.
const TrayAvailable = true

// Systray is the Tray on the system's menu bar or panel (fyne.io/systray:
// AppKit on macOS, StatusNotifierItem and dbusmenu over the session bus on
// Linux).
type Systray struct {
	log    *slog.Logger
	clicks chan Action

	mu    sync.Mutex
	menu  Menu
	shape string
	level view.Level
	items map[string]*systray.MenuItem
	sd    *Shutdown
}

// RunSystray runs the system tray on the calling goroutine, which must be
// the main one (macOS needs it), until QuitSystray. ready runs once the tray
// is up, on its own goroutine. onExit is systray's exit callback: on macOS
// the system's terminate (logout, restart, Activity Monitor's Quit) runs it
// and then exit()s, so it must close what needs closing, within a bounded
// time and without touching the tray (Shutdown); after a QuitSystray,
// RunSystray returns (fyne does not call onExit on macOS then: clean up
// after it too).
func RunSystray(log *slog.Logger, sd *Shutdown, ready func(t *Systray), onExit func()) {
	t := &Systray{log: log, clicks: make(chan Action, 16), items: map[string]*systray.MenuItem{}, sd: sd}
	systray.Run(func() {
		t.setIcon(view.OK)
		systray.SetTooltip("Delta")
		ready(t)
	}, onExit)
}

// QuitSystray makes RunSystray return: the quit is marked first (sd), once
// no tray update is running, so that none runs or starts that the stopped
// main loop would never serve.
// It may be called from any goroutine, more than once.
func QuitSystray(sd *Shutdown) {
	sd.BeginAfterTray()
	systray.Quit()
}

// Clicks implements Tray.
func (t *Systray) Clicks() <-chan Action { return t.clicks }

func (t *Systray) setIcon(l view.Level) {
	tmpl, reg, err := assets.TrayIcon(string(l))
	if err != nil {
		t.log.Error("could not set the tray icon", "err", err)
		return
	}
	systray.SetTemplateIcon(tmpl, reg)
	t.level = l
}

// Show implements Tray: items whose keys did not move are updated in place
// (an open menu stays open); otherwise the menu is rebuilt.
func (t *Systray) Show(m Menu) {
	// fyne's calls wait for the main thread, which stops serving them at a
	// quit: an update runs whole before QuitSystray marks it, or not at all.
	t.sd.InTray(func() { t.show(m) })
}

func (t *Systray) show(m Menu) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m.Level != t.level {
		t.setIcon(m.Level)
	}
	if m.Tooltip != t.menu.Tooltip {
		systray.SetTooltip(m.Tooltip)
	}
	if shape := m.Shape(); shape != t.shape {
		systray.ResetMenu()
		t.items = map[string]*systray.MenuItem{}
		t.add(m.Items, nil)
		t.shape = shape
	} else {
		t.update(t.menu.Items, m.Items)
	}
	t.menu = m
}

func (t *Systray) add(items []Item, parent *systray.MenuItem) {
	for _, it := range items {
		if it.Separator {
			if parent == nil {
				systray.AddSeparator()
			} else {
				parent.AddSeparator()
			}
			continue
		}
		var mi *systray.MenuItem
		if parent == nil {
			mi = systray.AddMenuItem(menuLabel(it.Title, runtime.GOOS), it.Tooltip)
		} else {
			mi = parent.AddSubMenuItem(menuLabel(it.Title, runtime.GOOS), it.Tooltip)
		}
		if !it.Enabled() {
			mi.Disable()
		}
		t.items[it.Key] = mi
		if it.Action != nil {
			go t.drain(it.Key, mi.ClickedCh)
		}
		t.add(it.Children, mi)
	}
}

// update changes titles, tooltips and enabled states of a menu with the
// same shape.
func (t *Systray) update(old, cur []Item) {
	for i, it := range cur {
		o := old[i]
		mi := t.items[it.Key]
		if mi == nil {
			continue
		}
		if o.Title != it.Title {
			mi.SetTitle(menuLabel(it.Title, runtime.GOOS))
		}
		if o.Tooltip != it.Tooltip {
			mi.SetTooltip(it.Tooltip)
		}
		if o.Enabled() != it.Enabled() {
			if it.Enabled() {
				mi.Enable()
			} else {
				mi.Disable()
			}
		}
		t.update(o.Children, it.Children)
	}
}

// drain receives an item's clicks (systray drops a click nobody receives
// at that instant) until the item is removed, and hands on the item's
// current action.
func (t *Systray) drain(key string, ch <-chan struct{}) {
	for range ch {
		t.mu.Lock()
		it, ok := t.menu.Find(key)
		t.mu.Unlock()
		if !ok || it.Action == nil {
			continue
		}
		select {
		case t.clicks <- *it.Action:
		default:
			t.log.Warn("menu: a click was dropped: too many clicks waiting", "item", it.Title)
		}
	}
}
