//go:build !linux && !darwin

package tailnet

import (
	"syscall"

	"delta/gateway/roads"
)

// controlFor does not bind connections on this OS.
func controlFor(string, roads.Road) func(string, string, syscall.RawConn) error { return nil }
