// Package ui is Delta's menu-bar app (DESIGN §6): the tray, its menu and
// the notifications.
//
// Build turns a view.Snapshot into a Menu with a pure function: the
// icon's state (view.Levels: all well, degraded, asking, needs you), the
// first line, each peer with its current road and RTT and a submenu of its
// roads, the writes by what a person must do (Needs you, Delta is asking,
// each with It happened…, It did not happen…, Ask now, Copy request id and
// Dismiss…), the received calls to check, Open status page, Log in to
// tailnet… when needed, and Quit Delta.
//
// App is the one event loop: it redraws the menu when the gateway says
// something changed (coalesced over Settle), and turns clicks into gateway
// actions. Systray shows the menu with fyne.io/systray (AppKit on macOS,
// which needs cgo; StatusNotifierItem and dbusmenu over the session bus on
// Linux), updating items in place while the menu keeps its shape. Notifier
// follows the journal's call events and shows a notification when a call
// becomes unsettled, settles, or needs a person, a burst coalesced into one.
//
// Package uitest reads the tray over DBus the way a panel does, for tests.
package ui
