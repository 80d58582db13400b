package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// CrashFile is where a crash's traceback goes, in the log folder.
const CrashFile = "crash.log"

// LogFolder makes and returns the folder for Delta's logs (docs/design.md §7:
// macOS ~/Library/Logs/Delta; elsewhere the state folder).
func LogFolder(stateDir string) (string, error) {
	dir := logFolder(stateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("make log folder: %w", err)
	}
	return dir, nil
}

// logFolder is LogFolder's path, not made.
func logFolder(stateDir string) string {
	if runtime.GOOS == "darwin" {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, "Library", "Logs", "Delta")
		}
	}
	return stateDir
}

// StateFolderExists says, for a command that must not make one, that
// stateDir is not a folder: a mistyped --state-dir would otherwise become
// a new Delta's (issue 65, item 5). Only init and run make a state folder.
func StateFolderExists(stateDir string) error {
	fi, err := os.Stat(stateDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the state folder %s does not exist: no Delta has run with it, and nothing was made (delta init makes one, delta runs one; if you meant another folder, pass it with --state-dir)", stateDir)
	case err != nil:
		return fmt.Errorf("the state folder %s: %w", stateDir, err)
	case !fi.IsDir():
		return fmt.Errorf("the state folder %s is not a folder", stateDir)
	}
	return nil
}

// LastCrash says when Delta last crashed with stateDir, from crash.log in
// its log folder, or crash.log.1 when a start has just moved a full one
// aside: its time and path, or a zero time and crash.log's path when it
// never did (the files are empty or absent).
func LastCrash(stateDir string) (time.Time, string) {
	path := filepath.Join(logFolder(stateDir), CrashFile) // only looked at: nothing is made
	for _, p := range []string{path, path + ".1"} {
		if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
			return fi.ModTime(), p
		}
	}
	return time.Time{}, path
}
