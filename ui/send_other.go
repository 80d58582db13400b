//go:build !linux && !(darwin && cgo)

package ui

import "log/slog"

// systemSender logs notifications: this build has no notification center
// (a macOS build without cgo, or another OS).
func systemSender(log *slog.Logger, _ chan<- Action) SenderCloser {
	return &logSender{log: log, why: "this build has no notification center (on macOS it needs cgo)"}
}
