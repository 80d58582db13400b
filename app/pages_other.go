//go:build !linux

package main

import "errors"

// dropProgramPages does nothing here (see pages_linux.go): macOS counts a
// program's clean pages apart from its own memory (Activity Monitor's
// "Memory" is the process's footprint).
func dropProgramPages(evict bool) (int64, error) { return 0, nil }

// residentBytes cannot be read here: every quiet look trims.
func residentBytes() (int64, error) {
	return 0, errors.New("the resident memory is read on Linux only")
}
