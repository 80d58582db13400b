//go:build !(darwin && cgo)

package ui

// NoAppNap does nothing: App Nap is macOS's (appnap_darwin.go).
func NoAppNap() (release func()) { return func() {} }
