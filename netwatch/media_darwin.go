//go:build darwin && cgo

package netwatch

// The link's media status, as ifconfig prints "status: active/inactive":
// modelled on Apple's network_cmds ifconfig.tproj/ifmedia.c (media_status),
// which fills a struct ifmediareq with SIOCGIFMEDIA on a datagram socket.
// The link's kind, as ifconfig -v prints "type: Wi-Fi": SIOCGIFFUNCTIONALTYPE
// on the same socket, read as mDNSResponder's mDNSMacOSX.c does
// (ifr.ifr_ifru.ifru_functional_type). MediaOnMac decides from both.

/*
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/sockio.h>
#include <net/if.h>
#include <net/if_media.h>

// delta_ifmedia fills status and active for name; -1 if the interface
// has no media (the ioctl fails, as for lo0 or utun).
static int delta_ifmedia(const char *name, int *status, int *active) {
	struct ifmediareq ifmr;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		return -1;
	memset(&ifmr, 0, sizeof(ifmr));
	strlcpy(ifmr.ifm_name, name, sizeof(ifmr.ifm_name));
	int rc = ioctl(s, SIOCGIFMEDIA, (caddr_t)&ifmr);
	close(s);
	if (rc < 0)
		return -1;
	*status = ifmr.ifm_status;
	*active = ifmr.ifm_active;
	return 0;
}

// delta_functional_type returns name's functional type
// (IFRTYPE_FUNCTIONAL_*), or -1 if the ioctl fails.
static int delta_functional_type(const char *name) {
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	strlcpy(ifr.ifr_name, name, sizeof(ifr.ifr_name));
	int rc = ioctl(s, SIOCGIFFUNCTIONALTYPE, (caddr_t)&ifr);
	close(s);
	if (rc < 0)
		return -1;
	return (int)ifr.ifr_ifru.ifru_functional_type;
}
*/
import "C"

import "unsafe"

// The pure side's constants are the SDK's (a build fails if not).
var (
	_ = [1]struct{}{}[C.IFM_AVALID-ifmAvalid]
	_ = [1]struct{}{}[C.IFM_ACTIVE-ifmActive]
	_ = [1]struct{}{}[C.IFM_IEEE80211-ifmIEEE80211]
	_ = [1]struct{}{}[C.IFM_NMASK-ifmTypeMask]
	_ = [1]struct{}{}[C.IFRTYPE_FUNCTIONAL_UNKNOWN-ifrFunctionalUnknown]
	_ = [1]struct{}{}[C.IFRTYPE_FUNCTIONAL_WIFI_INFRA-ifrFunctionalWiFiInfra]
	_ = [1]struct{}{}[C.IFRTYPE_FUNCTIONAL_WIFI_AWDL-ifrFunctionalWiFiAWDL]
)

// linkMedia reads name's link state with SIOCGIFMEDIA and its kind with
// SIOCGIFFUNCTIONALTYPE.
func linkMedia(name string) Media {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var status, active C.int
	media := C.delta_ifmedia(cname, &status, &active) == 0
	return MediaOnMac(media, int(status), int(active), int(C.delta_functional_type(cname)))
}

// wireless comes from the media on macOS (Classify).
func wireless(string) bool { return false }
