// Package listening finds the TCP ports that programs on this computer
// listen on where Delta can reach them (a loopback address, or every
// address), each with its program's name where the OS tells: what "Share
// an App…" suggests, so that a person picks "syncthing
// (127.0.0.1:8384)" rather than typing a URL (issue 66).
//
// On Linux the sockets are /proc/net/tcp and tcp6 (the listening ones,
// state 0A), and each socket's program is the process that holds its
// inode among its /proc/PID/fd links, named by /proc/PID/comm; a
// process of another user is not readable, and its port is listed
// without a name. On macOS (with cgo) they are libproc's, as lsof -i
// reads them (listening_darwin.go), each with its process's name.
// Elsewhere Ports says it cannot tell yet.
package listening

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Port is a listening socket an app on this computer could be reached
// at through loopback.
type Port struct {
	// Addr is the address to reach it at: 127.0.0.1:PORT or [::1]:PORT
	// (for one bound to every address, the loopback one).
	Addr netip.AddrPort
	// Program is the name of the program that listens ("" when the OS
	// does not tell: another user's process), and PID its process.
	Program string
	PID     int
}

// ErrUnsupported is Ports' answer where this package cannot read the
// sockets yet (not Linux).
var ErrUnsupported = errors.New("listening: this OS's listening sockets are not read yet")

// socket is one listening socket of /proc/net/tcp{,6}.
type socket struct {
	addr  netip.AddrPort
	inode string
}

// parseProcNet reads /proc/net/tcp or tcp6's lines: the sockets in state
// LISTEN (0A) on a loopback address or every address, with their inodes.
func parseProcNet(r io.Reader) ([]socket, error) {
	var out []socket
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		host, port, ok := strings.Cut(f[1], ":")
		if !ok {
			return nil, fmt.Errorf("listening: %q is not ADDRESS:PORT", f[1])
		}
		ip, err := procAddr(host)
		if err != nil {
			return nil, err
		}
		p, err := strconv.ParseUint(port, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("listening: port %q: %w", port, err)
		}
		if !ip.IsLoopback() && !ip.IsUnspecified() {
			continue // not reachable on loopback
		}
		out = append(out, socket{addr: netip.AddrPortFrom(ip, uint16(p)), inode: f[9]})
	}
	return out, sc.Err()
}

// procAddr reads an address as /proc/net writes it: the 4 bytes of an
// IPv4 address, or the 16 of an IPv6 one, in 32-bit words of the host's
// order (little-endian on the machines Delta runs on).
func procAddr(s string) (netip.Addr, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 4 && len(b) != 16 {
		return netip.Addr{}, fmt.Errorf("listening: address %q is not 8 or 32 hex digits", s)
	}
	for i := 0; i+4 <= len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	a, _ := netip.AddrFromSlice(b)
	return a.Unmap(), nil
}

// reachable is the loopback address a socket bound to a is reached at.
func reachable(a netip.AddrPort) netip.AddrPort {
	switch {
	case a.Addr() == netip.IPv6Unspecified():
		return netip.AddrPortFrom(netip.IPv6Loopback(), a.Port())
	case a.Addr().IsUnspecified():
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), a.Port())
	}
	return a
}

// merge makes the ports of sockets, named by owner (inode to process),
// one for each port (a program on 0.0.0.0 and [::] is one app), IPv4's
// loopback first, sorted by port.
func merge(socks []socket, owner map[string]proc) []Port {
	byPort := map[uint16]Port{}
	for _, s := range socks {
		p := Port{Addr: reachable(s.addr)}
		if o, ok := owner[s.inode]; ok {
			p.Program, p.PID = o.name, o.pid
		}
		old, seen := byPort[p.Addr.Port()]
		if !seen {
			byPort[p.Addr.Port()] = p
			continue
		}
		if old.Program == "" {
			old.Program, old.PID = p.Program, p.PID
		}
		if old.Addr.Addr().Is6() && p.Addr.Addr().Is4() {
			old.Addr = p.Addr
		}
		byPort[p.Addr.Port()] = old
	}
	out := make([]Port, 0, len(byPort))
	for _, p := range byPort {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Port) int { return int(a.Addr.Port()) - int(b.Addr.Port()) })
	return out
}

// listener is one listening socket as macOS's libproc tells it: its
// address and the process that holds it.
type listener struct {
	addr netip.AddrPort
	pid  int
}

// portsOf makes the Ports of listeners, each process named by names (""
// or missing: the OS did not tell): those reachable on loopback, merged
// one for each port as merge does.
func portsOf(ls []listener, names map[int]string) []Port {
	var socks []socket
	owner := map[string]proc{}
	for _, l := range ls {
		a := l.addr.Addr().Unmap()
		if !a.IsLoopback() && !a.IsUnspecified() {
			continue // not reachable on loopback
		}
		key := "pid:" + strconv.Itoa(l.pid)
		socks = append(socks, socket{addr: netip.AddrPortFrom(a, l.addr.Port()), inode: key})
		if name := names[l.pid]; name != "" {
			owner[key] = proc{pid: l.pid, name: name}
		}
	}
	return merge(socks, owner)
}

// proc is a process that holds a socket.
type proc struct {
	pid  int
	name string
}
