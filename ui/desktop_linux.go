package ui

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/godbus/dbus/v5"
)

// DesktopProblem says why there can be no tray here, or nil: on Linux the
// tray and notifications need a DBus session bus. It never starts a bus
// (no autolaunch): without one, Delta runs headless. warning, if not
// empty, is worth logging but does not stop the tray.
func DesktopProblem() (warning string, err error) {
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		rt := os.Getenv("XDG_RUNTIME_DIR")
		if rt == "" {
			rt = "/run/user/" + strconv.Itoa(os.Getuid())
		}
		sock := filepath.Join(rt, "bus")
		if _, err := os.Stat(sock); err != nil {
			return "", fmt.Errorf("no DBus session bus (DBUS_SESSION_BUS_ADDRESS is not set and %s does not exist)", sock)
		}
		os.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+sock)
	}
	conn, err := dbus.SessionBus()
	if err != nil {
		return "", fmt.Errorf("cannot connect to the DBus session bus at %s: %w", os.Getenv("DBUS_SESSION_BUS_ADDRESS"), err)
	}
	var owned bool
	if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, "org.kde.StatusNotifierWatcher").Store(&owned); err == nil && !owned {
		// Not fatal: the tray registers when a panel starts.
		return "no panel hosts tray icons on this session bus yet (no org.kde.StatusNotifierWatcher); Delta's icon appears when one starts", nil
	}
	return "", nil
}
