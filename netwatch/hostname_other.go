//go:build !(darwin && cgo)

package netwatch

// macNames are macOS's; none here.
func macNames() (localHostName, computerName string) { return "", "" }
