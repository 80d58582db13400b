package ui

import "errors"

// aquaProblem says why a macOS process can have no menu bar: it is not in
// a login session with the window server (run over SSH, or as a
// LaunchDaemon), as Security's SessionGetInfo reports with
// sessionHasGraphicAccess. Delta then runs headless, as on Linux without a
// session bus. Pure, for tests.
func aquaProblem(sessionKnown, graphicAccess bool) error {
	if sessionKnown && !graphicAccess {
		return errors.New("not in a login session with the window server (run over SSH, or outside the person's Aqua session): no menu bar")
	}
	return nil
}
