//go:build unix

package kit

import (
	"errors"
	"syscall"
)

// pidAlive reports whether a process with this id exists (signal 0): an
// error other than "no such process" (EPERM: another user's) counts as
// alive.
func pidAlive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
