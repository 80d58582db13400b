package smalldisk

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new temporary folder, unmounted
// when the test ends. It skips the test when it cannot (not root, or no
// tmpfs).
func Mount(t testing.TB, size int64) *Disk {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a full disk is a tmpfs mounted for the test, and mounting needs root (CI runs as root)")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+strconv.FormatInt(size, 10)+",mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs for a full disk: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount the test's tmpfs %s: %v", dir, err)
		}
	})
	return &Disk{Dir: dir, t: t, filler: filepath.Join(dir, "filler")}
}
