//go:build darwin && cgo

package ui

// App Nap throttles the timers and I/O of an idle LSUIElement app (a 1/s
// poll ran once per 8 s in a report on macOS 26.5.1); an NSProcessInfo
// activity held for the process's life keeps the gateway's probes,
// reconciler and relays at full speed, while the Mac may still sleep when
// idle. Apple: NSProcessInfo beginActivityWithOptions:reason:
// (NSActivityUserInitiatedAllowingIdleSystemSleep), beside
// NSAppSleepDisabled in Info.plist.

/*
#cgo CFLAGS: -x objective-c -fobjc-arc
#cgo LDFLAGS: -framework Foundation
#import <Foundation/Foundation.h>
#include <stdlib.h>

static id deltaActivity;

static void deltaBeginActivity(const char *reason) {
	deltaActivity = [[NSProcessInfo processInfo]
		beginActivityWithOptions:NSActivityUserInitiatedAllowingIdleSystemSleep
		reason:[NSString stringWithUTF8String:reason]];
}

static void deltaEndActivity(void) {
	if (deltaActivity != nil) {
		[[NSProcessInfo processInfo] endActivity:deltaActivity];
		deltaActivity = nil;
	}
}
*/
import "C"

import "unsafe"

// NoAppNap holds the activity "Delta gateway" until release.
func NoAppNap() (release func()) {
	reason := C.CString("Delta gateway")
	defer C.free(unsafe.Pointer(reason))
	C.deltaBeginActivity(reason)
	return func() { C.deltaEndActivity() }
}
