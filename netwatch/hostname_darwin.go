//go:build darwin && cgo

package netwatch

// macOS's names, from SystemConfiguration's dynamic store, as `scutil --get
// LocalHostName` and `scutil --get ComputerName` read them.

/*
#cgo LDFLAGS: -framework SystemConfiguration -framework CoreFoundation
#include <SystemConfiguration/SystemConfiguration.h>

// deltaCopyName copies one of the names into buf; 0 if there is none.
static int deltaCopyName(int which, char *buf, int len) {
	CFStringRef s = which == 0 ? SCDynamicStoreCopyLocalHostName(NULL) : SCDynamicStoreCopyComputerName(NULL, NULL);
	if (s == NULL)
		return 0;
	Boolean ok = CFStringGetCString(s, buf, len, kCFStringEncodingUTF8);
	CFRelease(s);
	return ok ? 1 : 0;
}
*/
import "C"

func macNames() (localHostName, computerName string) {
	var buf [256]C.char
	if C.deltaCopyName(0, &buf[0], C.int(len(buf))) != 0 {
		localHostName = C.GoString(&buf[0])
	}
	if C.deltaCopyName(1, &buf[0], C.int(len(buf))) != 0 {
		computerName = C.GoString(&buf[0])
	}
	return localHostName, computerName
}
