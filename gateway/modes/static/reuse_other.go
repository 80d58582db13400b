//go:build !unix

package static

import "syscall"

// reuseAndBroadcast does nothing where there is no SO_REUSEPORT.
func reuseAndBroadcast(_, _ string, _ syscall.RawConn) error { return nil }
