package bugreport

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/delta-roads/delta/app/cli"
)

// The crash log's bounds (issue 64, M5: crash.log grew without bound while
// launchd restarted a crashing Delta every 10 s, and delta bugreport read
// it whole). A crash's traceback is appended to crash.log; at a start,
// a crash.log grown past MaxCrashBytes is moved aside, and KeptCrashLogs
// older ones are kept (crash.log.1 the newest), the oldest dropped. A
// Delta that crashes at every start so keeps at most about
// (KeptCrashLogs+1) × (MaxCrashBytes + one traceback) on disk.
const (
	MaxCrashBytes = 256 << 10
	KeptCrashLogs = 3
	// CrashTail is how much of each crash log a bug report carries: its
	// end, where the newest traceback is.
	CrashTail = 256 << 10
)

// RotateCrashLog moves the crash log at path aside when it holds more
// than max bytes: path.keep is dropped, path.N becomes path.N+1, path
// becomes path.1. A log that is absent or small is left as it is.
func RotateCrashLog(path string, max int64, keep int) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Size() <= max {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.Remove(fmt.Sprintf("%s.%d", path, keep)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for n := keep - 1; n >= 1; n-- {
		if err := os.Rename(fmt.Sprintf("%s.%d", path, n), fmt.Sprintf("%s.%d", path, n+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return os.Rename(path, path+".1")
}

// CrashLogNames are the crash logs, newest first.
func CrashLogNames() []string {
	names := []string{cli.CrashFile}
	for n := 1; n <= KeptCrashLogs; n++ {
		names = append(names, fmt.Sprintf("%s.%d", cli.CrashFile, n))
	}
	return names
}

// ReadTail reads the last max bytes of the file at path, with a first
// line that says how much was left out when it was longer.
func ReadTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	skip := fi.Size() - max
	if skip <= 0 {
		return io.ReadAll(f)
	}
	if _, err := f.Seek(skip, io.SeekStart); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil, err
	}
	// From the first whole line on.
	if i := strings.IndexByte(string(b), '\n'); i >= 0 && i < len(b)-1 {
		skip += int64(i + 1)
		b = b[i+1:]
	}
	return append(fmt.Appendf(nil, "[the first %d bytes of %d are left out: this is the end, where the newest crash is]\n", skip, fi.Size()), b...), nil
}
