//go:build darwin && cgo

package netwatch

// Each interface's hardware port, as System Settings › Network names it
// ("Thunderbolt 1", "Thunderbolt Bridge", "Wi-Fi"), from SystemConfiguration's
// public SCNetworkInterfaceCopyAll (SCNetworkConfiguration.h), the list
// `networksetup -listallhardwareports` prints; and a bridge's members, as
// `ifconfig bridge0` prints them ("member: en2 flags=…"), Apple's
// network_cmds ifconfig.tproj/ifbridge.c (bridge_interfaces). PortsRoad
// decides from both (issue 37, N14).

/*
#cgo LDFLAGS: -framework SystemConfiguration -framework CoreFoundation
#include <stdio.h>
#include <stdlib.h>
#include <SystemConfiguration/SystemConfiguration.h>

// delta_ports writes "bsdname\tdisplay name\n" for every interface into buf
// (truncated at len); the bytes written, or -1 if the list is unavailable.
static int delta_ports(char *buf, int len) {
	CFArrayRef all = SCNetworkInterfaceCopyAll();
	if (all == NULL)
		return -1;
	int n = 0;
	char bsd[64], disp[256];
	for (CFIndex i = 0; i < CFArrayGetCount(all); i++) {
		SCNetworkInterfaceRef ifc = (SCNetworkInterfaceRef)CFArrayGetValueAtIndex(all, i);
		CFStringRef b = SCNetworkInterfaceGetBSDName(ifc);
		CFStringRef d = SCNetworkInterfaceGetLocalizedDisplayName(ifc);
		if (b == NULL || d == NULL)
			continue;
		if (!CFStringGetCString(b, bsd, sizeof(bsd), kCFStringEncodingUTF8) || !CFStringGetCString(d, disp, sizeof(disp), kCFStringEncodingUTF8))
			continue;
		int w = snprintf(buf + n, len - n, "%s\t%s\n", bsd, disp);
		if (w < 0 || w >= len - n)
			break;
		n += w;
	}
	CFRelease(all);
	return n;
}
*/
import "C"

import (
	"os/exec"
	"strings"
	"sync"
	"time"
	"unsafe"
)

var portsCache struct {
	sync.Mutex
	at      time.Time
	ports   map[string]string
	members map[string][]string
}

// hardwarePorts is each interface's hardware port name by BSD name, and
// each bridge's members, read at most every 30 s (they change when a
// person edits the network settings or plugs a cable).
func hardwarePorts(names []string) (map[string]string, map[string][]string) {
	portsCache.Lock()
	defer portsCache.Unlock()
	if time.Since(portsCache.at) < 30*time.Second && portsCache.ports != nil {
		return portsCache.ports, portsCache.members
	}
	buf := (*C.char)(C.malloc(64 << 10))
	defer C.free(unsafe.Pointer(buf))
	ports := map[string]string{}
	if n := C.delta_ports(buf, 64<<10); n > 0 {
		ports = ParsePorts(C.GoStringN(buf, n))
	}
	members := map[string][]string{}
	for _, name := range names {
		if strings.HasPrefix(name, "bridge") {
			if out, err := exec.Command("/sbin/ifconfig", name).Output(); err == nil {
				members[name] = BridgeMembers(string(out))
			}
		}
	}
	portsCache.at, portsCache.ports, portsCache.members = time.Now(), ports, members
	return ports, members
}
