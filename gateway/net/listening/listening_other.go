//go:build !linux

package listening

// Ports lists the TCP ports programs listen on that loopback reaches. On
// this OS it cannot tell yet (macOS: libproc's proc_pidfdinfo, issue 66).
func Ports() ([]Port, error) { return nil, ErrUnsupported }
