// Package assets will embed Delta's icons (menu-bar template icons, Linux
// PNGs, the app icon) with go:embed. Empty until the menu issue lands.
package assets
