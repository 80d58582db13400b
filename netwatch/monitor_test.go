package netwatch

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/roadfacts"
)

func TestDiff(t *testing.T) {
	lan := func(running bool, addrs ...string) Interface {
		return Interface{Road: roadfacts.LAN, Running: running, Addrs: addrs}
	}
	tb := Interface{Road: roadfacts.Thunderbolt, Running: true, Addrs: []string{"169.254.1.1"}}
	for _, tc := range []struct {
		name     string
		old, new State
		want     Change
	}{
		{"nothing", State{"en0": lan(true, "10.0.0.2")}, State{"en0": lan(true, "10.0.0.2")}, Change{}},
		{"cable pulled", State{"tb0": tb}, State{"tb0": {Road: roadfacts.Thunderbolt, Running: false, Addrs: tb.Addrs}}, Change{Lost: []string{"tb0"}}},
		{"interface removed", State{"tb0": tb, "en0": lan(true, "10.0.0.2")}, State{"en0": lan(true, "10.0.0.2")}, Change{Lost: []string{"tb0"}}},
		{"address changed", State{"en0": lan(true, "10.0.0.2")}, State{"en0": lan(true, "10.0.0.3")}, Change{Lost: []string{"en0"}, Gained: []string{"en0"}}},
		{"address added", State{"en0": lan(true, "10.0.0.2")}, State{"en0": lan(true, "10.0.0.2", "fe80::1%en0")}, Change{Gained: []string{"en0"}}},
		{"address lost", State{"en0": lan(true, "10.0.0.2", "fe80::1%en0")}, State{"en0": lan(true, "10.0.0.2")}, Change{Lost: []string{"en0"}}},
		{"plugged back", State{"tb0": {Road: roadfacts.Thunderbolt, Addrs: tb.Addrs}}, State{"tb0": tb}, Change{Gained: []string{"tb0"}}},
		{"appeared", State{}, State{"tb0": tb}, Change{Gained: []string{"tb0"}}},
		{"not a road", State{"utun3": {Running: true}}, State{}, Change{}},
	} {
		if got := Diff(tc.old, tc.new); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

var child = flag.Bool("netwatch.child", false, "run as the child of TestMonitorInNetns: print changes")
var live = flag.Bool("netwatch.live", false, "print live interface events and classifications (for checking on a real Mac)")

// TestMonitorLive prints this computer's interfaces and every change for
// 60 s (go test ./netwatch -run Live -netwatch.live -v). Pull a cable, join
// a Wi-Fi network, sleep the computer.
func TestMonitorLive(t *testing.T) {
	if !*live {
		t.Skip("run with -netwatch.live to watch real interfaces")
	}
	for _, ifc := range Current() {
		t.Logf("%-12s road=%-11q running=%v addrs=%v %s", ifc.Name, ifc.Road, ifc.Running, ifc.Addrs, ifc.Why)
	}
	m, err := Start(Options{OnChange: func(st State, c Change) {
		t.Logf("%s: lost %v gained %v woke %v", time.Now().Format(time.TimeOnly), c.Lost, c.Gained, c.Woke)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	time.Sleep(60 * time.Second)
}

// TestMonitorChild is the child of TestMonitorInNetns.
func TestMonitorChild(t *testing.T) {
	if !*child {
		t.Skip("the child of TestMonitorInNetns")
	}
	m, err := Start(Options{OnChange: func(st State, c Change) {
		fmt.Printf("CHANGE lost=%s gained=%s\n", strings.Join(append(c.Lost, "-"), ","), strings.Join(append(c.Gained, "-"), ","))
	}})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("READY")
	bufio.NewReader(os.Stdin).ReadString('\n')
	m.Close()
}

// TestMonitorInNetns watches a real veth pair in a network namespace of its
// own: the events netlink sends are turned into changes.
func TestMonitorInNetns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("network namespaces are Linux's (on macOS, docs/macos-checklist.md has a person pull a cable)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace (CI runs as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2)")
	}
	ns := fmt.Sprintf("nwtest%d", os.Getpid())
	ip := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v %s", args, err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	ip("-n", ns, "link", "add", "thunderbolt0", "type", "veth", "peer", "name", "other0")
	ip("-n", ns, "addr", "add", "169.254.9.1/16", "dev", "thunderbolt0")
	ip("-n", ns, "link", "set", "other0", "up")
	ip("-n", ns, "link", "set", "thunderbolt0", "up")

	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run", "^TestMonitorChild$", "-netwatch.child")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// next waits for a line naming thunderbolt0 as lost (or gained).
	next := func(what string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the child ended before thunderbolt0 was %s", what)
				}
				if l == "READY" && what == "ready" {
					return
				}
				var lost, gained string
				fmt.Sscanf(strings.NewReplacer("=", " ").Replace(strings.TrimPrefix(l, "CHANGE ")), "lost %s gained %s", &lost, &gained)
				list := map[string]string{"lost": lost, "gained": gained}[what]
				if slices.Contains(strings.Split(list, ","), "thunderbolt0") {
					return
				}
			case <-timeout:
				t.Fatalf("thunderbolt0 was not reported %s", what)
			}
		}
	}
	next("ready")
	ip("-n", ns, "link", "set", "other0", "down") // the far end goes: NO-CARRIER here
	next("lost")
	ip("-n", ns, "link", "set", "other0", "up")
	next("gained")
	ip("-n", ns, "addr", "del", "169.254.9.1/16", "dev", "thunderbolt0")
	next("lost")
	ip("-n", ns, "addr", "add", "169.254.9.2/16", "dev", "thunderbolt0")
	next("gained")
	ip("-n", ns, "link", "del", "thunderbolt0")
	next("lost")
}
