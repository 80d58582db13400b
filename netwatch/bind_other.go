//go:build !linux && !darwin

package netwatch

import (
	"syscall"

	"github.com/delta-roads/delta/gateway/roads"
)

// BindControl does not bind connections on this OS.
func BindControl(string, roads.Road) func(string, string, syscall.RawConn) error { return nil }
