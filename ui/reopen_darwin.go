//go:build darwin && cgo

package ui

/*
#cgo CFLAGS: -x objective-c -fobjc-arc
#cgo LDFLAGS: -framework Cocoa
int deltaAddReopen(void);
*/
import "C"

import (
	"log/slog"
	"sync"
)

var (
	reopenMu   sync.Mutex
	reopenLog  *slog.Logger
	reopenActs chan<- Action
)

// HandleReopen makes a double-click on Delta.app while it runs open the
// status page (an ActOpen on acts). Call it before RunSystray.
func HandleReopen(log *slog.Logger, acts chan<- Action) {
	reopenMu.Lock()
	reopenLog, reopenActs = log, acts
	reopenMu.Unlock()
	if rc := C.deltaAddReopen(); rc != 0 {
		log.Warn("a double-click on Delta.app while it runs will not open the status page: the menu bar's delegate could not take it", "code", int(rc))
	}
}

// deltaReopened is AppKit's reopen, handed to Go.
//
//export deltaReopened
func deltaReopened() {
	reopenMu.Lock()
	log, acts := reopenLog, reopenActs
	reopenMu.Unlock()
	if log != nil {
		deliver(log, acts, NoteOpen, "")
	}
}
