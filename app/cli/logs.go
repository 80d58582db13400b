package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// CrashFile is where a crash's traceback goes, in the log folder.
const CrashFile = "crash.log"

// LogFolder makes and returns the folder for Delta's logs (DESIGN §7:
// macOS ~/Library/Logs/Delta; elsewhere the state folder).
func LogFolder(stateDir string) (string, error) {
	dir := stateDir
	if runtime.GOOS == "darwin" {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, "Library", "Logs", "Delta")
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("make log folder: %w", err)
	}
	return dir, nil
}

// LastCrash says when Delta last crashed with stateDir, from crash.log in
// its log folder: its time and path, or a zero time when it never did
// (the file is empty or absent).
func LastCrash(stateDir string) (time.Time, string) {
	dir, err := LogFolder(stateDir)
	if err != nil {
		return time.Time{}, ""
	}
	path := filepath.Join(dir, CrashFile)
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		return fi.ModTime(), path
	}
	return time.Time{}, path
}
