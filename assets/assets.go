package assets

import (
	"embed"
	"fmt"
)

//go:embed *.png
var files embed.FS

// TrayIcon returns the tray icon for state (a view.Level): template is for the macOS menu
// bar (black, alpha only: the system tints it for light and dark bars),
// regular is the colour PNG Linux panels show. An unknown state is an
// error naming it.
func TrayIcon(state string) (template, regular []byte, err error) {
	if template, err = files.ReadFile("tray-" + state + "-template.png"); err != nil {
		return nil, nil, fmt.Errorf("assets: no tray icon for state %q (known: ok, degraded, asking, needs-you)", state)
	}
	regular, err = files.ReadFile("tray-" + state + ".png")
	return template, regular, err
}

// AppIcon is Delta's app icon, 512×512 PNG.
func AppIcon() []byte {
	b, err := files.ReadFile("app-icon.png")
	if err != nil {
		panic("assets: app-icon.png is not embedded: " + err.Error())
	}
	return b
}

// HicolorSizes are the sizes the app icon is drawn at besides 512, for
// the freedesktop hicolor theme (gen.go draws each).
var HicolorSizes = []int{16, 22, 24, 32, 48, 64, 128, 256}

// AppIconSized is the app icon drawn at n×n (512, 1024 for the macOS
// icns, or one of HicolorSizes).
func AppIconSized(n int) ([]byte, error) {
	if n == 512 {
		return AppIcon(), nil
	}
	b, err := files.ReadFile(fmt.Sprintf("app-icon-%d.png", n))
	if err != nil {
		return nil, fmt.Errorf("assets: no app icon drawn at %d px (sizes: %v, 512 and 1024)", n, HicolorSizes)
	}
	return b, nil
}
