//go:build darwin && cgo

// Double-clicking Delta.app while it runs makes AppKit ask the running
// app's delegate applicationShouldHandleReopen:hasVisibleWindows:. The
// delegate is fyne's SystrayAppDelegate (fyne.io/systray's
// systray_darwin.m, registerSystray), which does not answer it, so the
// double-click did nothing. deltaAddReopen gives that class the method,
// before the tray runs; the method hands the reopen to Go (the status page
// opens, as a person expects of a menu-bar app with no window).

#import <Cocoa/Cocoa.h>
#import <objc/runtime.h>
#include <stdio.h>

#include "_cgo_export.h"

static BOOL deltaShouldHandleReopen(id self, SEL _cmd, NSApplication *sender, BOOL hasVisibleWindows) {
	deltaReopened();
	return NO; // no window of AppKit's to show
}

// deltaAddReopen returns 0 when the method was added, 1 when the class
// has one already, -1 when fyne's delegate class is not there.
int deltaAddReopen(void) {
	Class cls = NSClassFromString(@"SystrayAppDelegate");
	if (cls == nil) {
		return -1;
	}
	// BOOL is bool on arm64 and signed char on x86_64: its encoding from
	// the compiler, not written by hand.
	char types[16];
	snprintf(types, sizeof(types), "%s@:@%s", @encode(BOOL), @encode(BOOL));
	if (!class_addMethod(cls, @selector(applicationShouldHandleReopen:hasVisibleWindows:), (IMP)deltaShouldHandleReopen, types)) {
		return 1;
	}
	return 0;
}
