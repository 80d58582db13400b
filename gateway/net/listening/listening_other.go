//go:build !linux && !(darwin && cgo)

package listening

// Ports lists the TCP ports programs listen on that loopback reaches. On
// this OS (or a macOS build without cgo) it cannot tell yet.
func Ports() ([]Port, error) { return nil, ErrUnsupported }
