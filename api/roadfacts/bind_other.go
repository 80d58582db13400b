//go:build !linux && !darwin

package roadfacts

import "syscall"

// BindControl does not bind connections on this OS.
func BindControl(string, Road) func(string, string, syscall.RawConn) error { return nil }
