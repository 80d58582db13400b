package ui

import (
	"log/slog"
	"sync"
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

// unbundled says why Delta cannot show macOS notifications, or "" when it
// can: it needs a main bundle with an identifier (bundleID, from
// NSBundle, as fyne's app_darwin.m asks): only a bundle's notifications
// are shown, and UNUserNotificationCenter outside one raises an
// exception. exe is named in the reason. A path inside "X.app" is not
// enough, and a symlink to the bundle's executable is.
func unbundled(bundleID, exe string) string {
	if bundleID != "" {
		return ""
	}
	return "Delta runs outside an app bundle (" + exe + "), and macOS shows only an app bundle's notifications; Delta.app shows them"
}

var authorizedOnce sync.Once

// authorized logs macOS's answer to Delta's request to notify: a refusal
// once, with where a person allows it.
func authorized(log *slog.Logger, granted bool, why string) {
	if granted {
		return
	}
	authorizedOnce.Do(func() {
		log.Warn("macOS does not allow Delta's notifications: calls that need a person show in the menu only; allow them in System Settings → Notifications → Delta",
			"why", why)
	})
}

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
