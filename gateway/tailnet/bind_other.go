//go:build !linux && !darwin

package tailnet

import (
	"syscall"

	"github.com/delta-roads/delta/gateway/roads"
)

// controlFor does not bind connections on this OS.
func controlFor(string, roads.Road) func(string, string, syscall.RawConn) error { return nil }
