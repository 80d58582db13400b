//go:build !darwin || !cgo

package ui

import "log/slog"

// HandleReopen is macOS's (a double-click on the running Delta.app);
// elsewhere there is nothing to handle.
func HandleReopen(*slog.Logger, chan<- Action) {}
