package main

import (
	"fmt"
	"os"
	"sync"
)

// logFile is a log file with a size bound: when a write would take it past
// max bytes, the file is renamed to path.1 (replacing an older one) and a
// new one is begun, so a log never holds more than about 2×max on disk.
type logFile struct {
	path string
	max  int64

	mu   sync.Mutex
	f    *os.File
	size int64
}

// openLogFile opens (or creates, mode 0600) the log at path for appending.
func openLogFile(path string, max int64) (*logFile, error) {
	l := &logFile{path: path, max: max}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *logFile) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log %s: %w", l.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open log %s: %w", l.path, err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Write appends p, rotating first when p would take the file past the
// bound. A failed rotation keeps writing to the current file.
func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size > 0 && l.size+int64(len(p)) > l.max {
		if err := os.Rename(l.path, l.path+".1"); err == nil {
			// The old file is renamed; a close error loses nothing more.
			_ = l.f.Close()
			if err := l.open(); err != nil {
				return 0, err
			}
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

// Close closes the file.
func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
