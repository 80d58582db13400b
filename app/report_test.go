package main

import (
	"runtime"
	"testing"
	"time"
)

// TestReportPath: the menu's report goes on the Desktop, or in the home
// folder of a computer that has none, named for when it was made.
func TestReportPath(t *testing.T) {
	at := time.Date(2026, 12, 7, 9, 5, 3, 0, time.Local)
	if got := reportPath("/Users/jo", at, func(string) bool { return true }); got != "/Users/jo/Desktop/Delta bug report 2026-12-07 09.05.03.tar.gz" {
		t.Errorf("with a Desktop: %s", got)
	}
	if got := reportPath("/home/jo", at, func(string) bool { return false }); got != "/home/jo/Delta bug report 2026-12-07 09.05.03.tar.gz" {
		t.Errorf("without one: %s", got)
	}
	if runtime.GOOS != "darwin" && menuUninstall() != nil {
		t.Error("the menu offers Uninstall Delta… off a Mac, where a package manager removes Delta")
	}
}
