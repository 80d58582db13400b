// Package assets embeds Delta's icons (go:embed): menu-bar template icons
// for macOS and colour PNGs for Linux panels in four states (view.Levels:
// all well; a peer unreachable; Delta asking owners about writes; a write
// or a received call that needs a person), the same marks the status page
// uses for its favicon and header, and the app icon used by notifications,
// the macOS bundle and the .deb.
//
// The PNGs are drawn by gen.go; `go generate ./assets` redraws them.
package assets

//go:generate go run gen.go
