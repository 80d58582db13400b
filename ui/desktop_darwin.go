//go:build darwin && cgo

package ui

// Whether this process is in a session with the window server: Security's
// SessionGetInfo (Security/AuthSession.h) on the caller's session, its
// sessionHasGraphicAccess attribute.

/*
#cgo LDFLAGS: -framework Security
#include <Security/AuthSession.h>

// deltaGraphicAccess is 1 with access to the window server, 0 without,
// -1 if the session cannot be read.
static int deltaGraphicAccess(void) {
	SecuritySessionId id;
	SessionAttributeBits attrs;
	if (SessionGetInfo(callerSecuritySession, &id, &attrs) != errSessionSuccess)
		return -1;
	return (attrs & sessionHasGraphicAccess) ? 1 : 0;
}
*/
import "C"

// DesktopProblem says why there can be no menu bar here, or nil: macOS's
// menu bar needs the person's login (Aqua) session; run over SSH, Delta
// runs headless.
func DesktopProblem() (warning string, err error) {
	g := C.deltaGraphicAccess()
	return "", aquaProblem(g >= 0, g == 1)
}
