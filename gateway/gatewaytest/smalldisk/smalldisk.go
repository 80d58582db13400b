// Package smalldisk gives tests a real small disk: a tmpfs of a few
// megabytes mounted on a temporary folder (root only; elsewhere the test
// is skipped, saying why), that a test fills to the last byte and frees
// again, to see what Delta does when a write fails with ENOSPC.
package smalldisk

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// Disk is a mounted tmpfs.
type Disk struct {
	Dir    string // the mount point, empty at first
	t      testing.TB
	filler string
}

// Fill writes a file until the disk has no byte left (ENOSPC).
func (d *Disk) Fill() {
	d.t.Helper()
	f, err := os.OpenFile(d.filler, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		d.t.Fatalf("fill the disk: %v", err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for len(buf) > 0 {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				d.t.Fatalf("fill the disk: %v", err)
			}
			buf = buf[:len(buf)/2] // the last few blocks, down to one byte
		}
	}
}

// Free removes what Fill wrote.
func (d *Disk) Free() {
	d.t.Helper()
	if err := os.Remove(d.filler); err != nil {
		d.t.Fatalf("free the disk: %v", err)
	}
}
