package listening

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestParseProcNet: only listening sockets (0A) on loopback or every
// address, IPv4 and IPv6 as /proc/net writes them.
func TestParseProcNet(t *testing.T) {
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1281 1 0 100 0 0 10 0
   1: 0100007F:20C0 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5555 1 0 100 0 0 10 0
   2: 0100007F:B265 0100007F:BE66 06 00000000:00000000 03:000010D0 00000000     0        0 0 3 0
   3: 1401A8C0:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7777 1 0 100 0 0 10 0
`
	got, err := parseProcNet(strings.NewReader(tcp))
	want := []socket{{netip.MustParseAddrPort("0.0.0.0:2024"), "1281"}, {netip.MustParseAddrPort("127.0.0.1:8384"), "5555"}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("tcp: %v %v, want %v (192.168.1.20 is not loopback, a connection is not listening)", got, err, want)
	}
	tcp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 42 1 0
   1: 00000000000000000000000000000000:20C0 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 43 1 0
`
	got, err = parseProcNet(strings.NewReader(tcp6))
	if err != nil || len(got) != 2 || got[0].addr != netip.MustParseAddrPort("[::1]:8080") || got[1].addr != netip.MustParseAddrPort("[::]:8384") {
		t.Fatalf("tcp6: %v %v", got, err)
	}
	if _, err := parseProcNet(strings.NewReader("h\n 0: zz:0050 0:0 0A 0 0 0 0 0 0 9\n")); err == nil || !strings.Contains(err.Error(), "hex") {
		t.Errorf("a bad address: %v", err)
	}
}

// TestMerge: one entry a port, reached on IPv4's loopback when it is
// bound there too, named by whichever socket's process is known.
func TestMerge(t *testing.T) {
	socks := []socket{
		{netip.MustParseAddrPort("[::]:8384"), "1"},
		{netip.MustParseAddrPort("0.0.0.0:8384"), "2"},
		{netip.MustParseAddrPort("[::1]:9000"), "3"},
		{netip.MustParseAddrPort("127.0.0.1:631"), "4"},
	}
	got := merge(socks, map[string]proc{"1": {7, "syncthing"}})
	want := []Port{
		{netip.MustParseAddrPort("127.0.0.1:631"), "", 0},
		{netip.MustParseAddrPort("127.0.0.1:8384"), "syncthing", 7},
		{netip.MustParseAddrPort("[::1]:9000"), "", 0},
	}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestPortsOf: macOS's listeners (libproc's, each with its process) as
// Ports: only those loopback reaches (an IPv4-mapped one unmapped), one
// for each port, named where the OS told.
func TestPortsOf(t *testing.T) {
	ls := []listener{
		{netip.MustParseAddrPort("[::]:8384"), 7},
		{netip.MustParseAddrPort("0.0.0.0:8384"), 7},
		{netip.MustParseAddrPort("[::ffff:127.0.0.1]:5000"), 9},
		{netip.MustParseAddrPort("192.168.1.10:22"), 1},
		{netip.MustParseAddrPort("127.0.0.1:631"), 3},
	}
	got := portsOf(ls, map[int]string{7: "syncthing", 9: "ControlCenter", 3: ""})
	want := []Port{
		{netip.MustParseAddrPort("127.0.0.1:631"), "", 0},
		{netip.MustParseAddrPort("127.0.0.1:5000"), "ControlCenter", 9},
		{netip.MustParseAddrPort("127.0.0.1:8384"), "syncthing", 7},
	}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestPorts: a port this test listens on is found, named by this
// process's own name.
func TestPorts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var comm []byte
	switch _, err := Ports(); {
	case runtime.GOOS == "linux":
		comm, _ = os.ReadFile("/proc/self/comm")
	case runtime.GOOS == "darwin" && err != ErrUnsupported:
		exe, _ := os.Executable()
		comm = []byte(filepath.Base(exe)) // libproc's proc_name: the executable's name
	default:
		if err != ErrUnsupported {
			t.Fatalf("Ports on %s: %v", runtime.GOOS, err)
		}
		t.Skip("listening sockets are read on Linux and on macOS with cgo only")
	}
	ports, err := Ports()
	if err != nil {
		t.Fatal(err)
	}
	at := netip.MustParseAddrPort(ln.Addr().String())
	for _, p := range ports {
		if p.Addr == at {
			if p.Program != strings.TrimSpace(string(comm)) || p.PID != os.Getpid() {
				t.Errorf("found %+v, want program %q pid %d", p, comm, os.Getpid())
			}
			return
		}
	}
	t.Fatalf("%s not among %v", at, ports)
}
