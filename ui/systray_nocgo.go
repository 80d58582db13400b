//go:build darwin && !cgo

package ui

import "log/slog"

// TrayAvailable reports whether this build has a system tray: on macOS it
// needs cgo, and this build has none, so Delta runs headless.
const TrayAvailable = false

// Systray is not part of a macOS build without cgo.
type Systray struct{}

// RunSystray is not reached in a build without a tray (TrayAvailable).
func RunSystray(log *slog.Logger, sd *Shutdown, ready func(t *Systray), onExit func()) {
	log.Error("this build of Delta has no tray: macOS's menu bar needs cgo")
}

// QuitSystray does nothing in a build without a tray.
func QuitSystray(sd *Shutdown) { sd.Begin() }

// Clicks implements Tray.
func (t *Systray) Clicks() <-chan Action { return nil }

// Show implements Tray.
func (t *Systray) Show(Menu) {}
