//go:build !(darwin && cgo)

package netwatch

// hardwarePorts is macOS's: elsewhere the interface's name and driver
// decide its road alone.
func hardwarePorts([]string) (map[string]string, map[string][]string) { return nil, nil }
