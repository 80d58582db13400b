package listening

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Ports lists the TCP ports programs listen on that loopback reaches
// (Port), one a port, by port.
func Ports() ([]Port, error) { return portsIn("/proc") }

// portsIn is Ports from the proc filesystem at procRoot.
func portsIn(procRoot string) ([]Port, error) {
	var socks []socket
	for _, name := range []string{"net/tcp", "net/tcp6"} {
		f, err := os.Open(filepath.Join(procRoot, name))
		if os.IsNotExist(err) && name == "net/tcp6" {
			continue // no IPv6 on this machine
		}
		if err != nil {
			return nil, err
		}
		s, err := parseProcNet(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		socks = append(socks, s...)
	}
	want := map[string]bool{}
	for _, s := range socks {
		want[s.inode] = true
	}
	owner := map[string]proc{}
	dirs, _ := os.ReadDir(procRoot)
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || len(owner) == len(want) {
			continue
		}
		fds, err := os.ReadDir(filepath.Join(procRoot, d.Name(), "fd"))
		if err != nil {
			continue // gone, or another user's: its ports stay unnamed
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(procRoot, d.Name(), "fd", fd.Name()))
			inode, ok := strings.CutPrefix(link, "socket:[")
			if err != nil || !ok {
				continue
			}
			inode = strings.TrimSuffix(inode, "]")
			if want[inode] {
				if _, named := owner[inode]; !named {
					comm, _ := os.ReadFile(filepath.Join(procRoot, d.Name(), "comm"))
					owner[inode] = proc{pid: pid, name: strings.TrimSpace(string(comm))}
				}
			}
		}
	}
	return merge(socks, owner), nil
}
