// Package assets embeds Delta's icons (go:embed): menu-bar template icons
// for macOS and colour PNGs for Linux panels in three states (all well; a
// peer degraded or unreachable; unsettled writes), and the app icon used by
// notifications and the macOS bundle.
//
// The PNGs are drawn by gen.go; `go generate ./assets` redraws them.
package assets

//go:generate go run gen.go
