//go:build !linux && !darwin

package netwatch

import (
	"errors"
	"syscall"
)

// BroadcastControl is not available on this OS: waking a peer fails with
// the error it returns.
func BroadcastControl(iface string) func(string, string, syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error {
		return errors.New("netwatch: sending a broadcast out of one interface is not supported on this OS")
	}
}
