package ui

import (
	"github.com/gen2brain/beeep"

	"github.com/delta-roads/delta/assets"
)

// SystemSender shows notifications with Delta's icon: the notification
// center on macOS, org.freedesktop.Notifications on the session bus on
// Linux (github.com/gen2brain/beeep, which needs no cgo).
func SystemSender() Sender {
	beeep.AppName = "Delta"
	icon := assets.AppIcon()
	return SenderFunc(func(n Note) error { return beeep.Notify(n.Title, n.Body, icon) })
}
