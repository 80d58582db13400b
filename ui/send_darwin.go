//go:build darwin && cgo

package ui

/*
#cgo CFLAGS: -x objective-c -fobjc-arc
#cgo LDFLAGS: -framework Foundation -framework UserNotifications
#include <stdlib.h>

void deltaNotifySetup(const char *openTitle, const char *askTitle, const char *acceptTitle);
int deltaNotify(const char *title, const char *body, const char *requestID, char *errBuf, int errLen);
void deltaBundleID(char *buf, int len);
*/
import "C"

import (
	"errors"
	"log/slog"
	"os"
	"sync"
	"unsafe"
)

// unSender shows notifications through UNUserNotificationCenter
// (notify_darwin.m, after kolide/launcher's notify_darwin.{go,m}).
type unSender struct {
	log  *slog.Logger
	acts chan<- Action
}

// The one sender whose delegate gets the clicks (a process has one
// notification center).
var (
	noteMu   sync.Mutex
	noteLog  *slog.Logger
	noteActs chan<- Action
)

func systemSender(log *slog.Logger, acts chan<- Action) SenderCloser {
	exe, _ := os.Executable()
	var buf [256]C.char
	C.deltaBundleID(&buf[0], C.int(len(buf)))
	if why := unbundled(C.GoString(&buf[0]), exe); why != "" {
		// UNUserNotificationCenter outside a bundle raises an exception,
		// and macOS shows a bundle's notifications only.
		return &logSender{log: log, why: why}
	}
	noteMu.Lock()
	noteLog, noteActs = log, acts
	noteMu.Unlock()
	open, ask, accept := C.CString("Open status page"), C.CString("Ask now"), C.CString("Accept")
	defer C.free(unsafe.Pointer(open))
	defer C.free(unsafe.Pointer(ask))
	defer C.free(unsafe.Pointer(accept))
	C.deltaNotifySetup(open, ask, accept)
	return &unSender{log: log, acts: acts}
}

func (u *unSender) Send(n Note) error {
	title, body, rid := C.CString(n.Title), C.CString(n.Body), C.CString(noteKey(n)) // a request to pair: "pair:ID", its category DeltaPair
	defer C.free(unsafe.Pointer(title))
	defer C.free(unsafe.Pointer(body))
	defer C.free(unsafe.Pointer(rid))
	var buf [256]C.char
	if C.deltaNotify(title, body, rid, &buf[0], C.int(len(buf))) != 0 {
		return errors.New("notification center: " + C.GoString(&buf[0]))
	}
	return nil
}

func (u *unSender) Close() error { return nil }

// deltaNoteAction is the delegate's click, handed to Go.
//
//export deltaNoteAction
func deltaNoteAction(action, requestID *C.char) {
	noteMu.Lock()
	log, acts := noteLog, noteActs
	noteMu.Unlock()
	if log != nil {
		deliver(log, acts, C.GoString(action), C.GoString(requestID))
	}
}

// deltaNoteAuthorized is the answer to the request for authorization:
// a refusal is said once in delta.log, with where to allow it.
//
//export deltaNoteAuthorized
func deltaNoteAuthorized(granted C.int, why *C.char) {
	noteMu.Lock()
	log := noteLog
	noteMu.Unlock()
	if log != nil {
		authorized(log, granted != 0, C.GoString(why))
	}
}
