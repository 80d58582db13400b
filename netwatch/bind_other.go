//go:build !linux && !darwin

package netwatch

import (
	"errors"
	"syscall"

	"github.com/delta-roads/delta/gateway/roads"
)

// BindControl does not bind connections on this OS.
func BindControl(string, roads.Road) func(string, string, syscall.RawConn) error { return nil }

// BroadcastControl is not available on this OS: waking a peer fails with
// the error it returns.
func BroadcastControl(iface string) func(string, string, syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error {
		return errors.New("netwatch: sending a broadcast out of one interface is not supported on this OS")
	}
}
