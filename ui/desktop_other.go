//go:build !linux && !(darwin && cgo)

package ui

// DesktopProblem says why there can be no tray here, or nil. On macOS the
// menu bar is always there for a logged-in user.
func DesktopProblem() (warning string, err error) { return "", nil }
