package ui

import (
	"log/slog"
	"strings"
)

// SystemSender shows Delta's notifications the system's way, and delivers
// the actions a person clicks on them to acts (as Action values, done as
// menu clicks are; acts may be nil):
//
//   - macOS: UNUserNotificationCenter from Delta.app's bundle, with "Open
//     status page" and "Ask now" (send_darwin.go); unbundled (a
//     developer's build) the notification is logged instead, and why is
//     said once: macOS shows a bundle's notifications only;
//   - Linux: org.freedesktop.Notifications on the session bus, with the
//     same actions where the server has the "actions" capability
//     (send_linux.go).
//
// Close it when done.
func SystemSender(log *slog.Logger, acts chan<- Action) SenderCloser {
	return systemSender(log, acts)
}

// SenderCloser is a Sender that holds something open (a bus connection).
type SenderCloser interface {
	Sender
	Close() error
}

// bundled reports whether the executable at exe runs from a macOS bundle
// (Delta.app/Contents/MacOS/Delta): only a bundle's notifications are
// shown, and UNUserNotificationCenter outside one raises an exception.
func bundled(exe string) bool { return strings.Contains(exe, ".app/Contents/MacOS/") }

// deliver hands a clicked action to acts without blocking the caller (a
// bus's signal loop, the macOS delegate).
func deliver(log *slog.Logger, acts chan<- Action, key, requestID string) {
	act, ok := NoteAction(key, requestID)
	if !ok || acts == nil {
		return
	}
	select {
	case acts <- act:
	default:
		log.Warn("notification: a click was dropped: too many clicks waiting", "action", key)
	}
}
