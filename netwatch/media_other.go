//go:build !linux && !(darwin && cgo)

package netwatch

// linkMedia is unknown here: a darwin build without cgo, or another OS.
// Running then follows the interface's flags alone.
func linkMedia(string) Media { return Media{} }

// wireless comes from the media on macOS; unknown here.
func wireless(string) bool { return false }
