package netwatch

import (
	"os"
	"path/filepath"
)

// linkMedia is the zero Media on Linux: IFF_RUNNING is the carrier there.
func linkMedia(string) Media { return Media{} }

// wireless reports whether a Linux interface is Wi-Fi (cfg80211 gives it a
// "wireless" folder, or a "phy80211" link, in sysfs).
func wireless(name string) bool {
	for _, f := range []string{"wireless", "phy80211"} {
		if _, err := os.Stat(filepath.Join("/sys/class/net", name, f)); err == nil {
			return true
		}
	}
	return false
}
