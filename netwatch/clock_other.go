//go:build !linux

package netwatch

import "errors"

// newClockSets: only Linux tells a set of the wall clock (a resume
// included) as an event; elsewhere the monitor looks at the clocks every
// wakeCheck. On macOS that is enough: Go's monotonic clock there
// (mach_absolute_time) pauses in sleep, so the gap shows (MACOS.md §2.4).
func newClockSets() (clockSets, error) {
	return nil, errors.New("no clock-set events on this OS")
}
