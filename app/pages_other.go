//go:build !linux

package main

// dropProgramPages does nothing here (see pages_linux.go): macOS counts a
// program's clean pages apart from its own memory (Activity Monitor's
// "Memory" is the process's footprint).
func dropProgramPages(evict bool) (int64, error) { return 0, nil }
