//go:build !linux

package smalldisk

import "testing"

// Mount skips the test: a full disk is a tmpfs, which only Linux mounts
// for a test.
func Mount(t testing.TB, size int64) *Disk {
	t.Skip("a full disk is a tmpfs mounted for the test, on Linux only")
	return nil
}
