package localroads

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/netwatch"
)

func TestSpecs(t *testing.T) {
	st := netwatch.State{
		"en0":     {Name: "en0", Road: roads.LAN, Running: true, Addrs: []string{"192.168.1.20", "fd00::20"}},
		"bridge0": {Name: "bridge0", Road: roads.Thunderbolt, Running: true, Addrs: []string{"169.254.3.2"}},
		"en1":     {Name: "en1", Road: roads.LAN, Running: false, Addrs: []string{"10.0.0.2"}},
		"utun3":   {Name: "utun3", Road: "", Running: true, Addrs: []string{"100.64.0.2"}},
	}
	got := strings.Join(Specs(st), " ")
	if want := "lan=192.168.1.20 lan=fd00::20 thunderbolt=169.254.3.2"; got != want {
		t.Errorf("Specs = %q, want %q", got, want)
	}
}

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		spec, road, addr, iface, err string
	}{
		{spec: "10.0.0.2", road: "lan", addr: "10.0.0.2"},
		{spec: "thunderbolt=169.254.3.2", road: "thunderbolt", addr: "169.254.3.2"},
		{spec: "lan=fe80::1%en0", road: "lan", addr: "fe80::1%en0", iface: "en0"},
		{spec: "tailnet=100.64.0.2", err: "must be lan or thunderbolt"},
		{spec: "wifi=10.0.0.2", err: "must be lan or thunderbolt"},
		{spec: "lan=studio.local", err: "not an IP address"},
	} {
		road, addr, iface, err := ParseSpec(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || string(road) != tc.road || addr != tc.addr || iface != tc.iface {
			t.Errorf("%s: %s %s %s %v", tc.spec, road, addr, iface, err)
		}
	}
}

// A taken port: an error naming it, or with the fall-back one free port
// for every address, said to a person.
func TestTakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	ls := New(Config{Port: port, Addrs: []string{"127.0.0.1"}})
	if err := ls.Open(nil); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a taken port without fall-back: %v", err)
	}
	if len(ls.All()) != 0 {
		t.Errorf("listeners left open after a failed Open: %v", ls.All())
	}
	var notes []string
	ls = New(Config{Port: port, PortFallback: true, Addrs: []string{"lan=127.0.0.1"}, Notice: func(s string) { notes = append(notes, s) }})
	if err := ls.Open(nil); err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	all := ls.All()
	if len(all) != 1 || all[0].Road != roads.LAN || ls.Port() == port || netip.MustParseAddrPort(all[0].Addr().String()).Port() != uint16(ls.Port()) {
		t.Errorf("after the fall-back: %+v, port %d (taken %d)", all, ls.Port(), port)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "is taken on this computer") {
		t.Errorf("notices %q", notes)
	}
	if opened := ls.Follow(nil); opened != nil || len(ls.All()) != 1 {
		t.Errorf("configured addresses were followed: %v", opened)
	}
}
