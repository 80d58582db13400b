package owner

import "golang.org/x/sys/unix"

// freeBytes is the room left for an unprivileged writer on dir's file
// system.
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize)), nil
}
