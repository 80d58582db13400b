package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"tailscale.com/tailcfg"
	"tailscale.com/tstest/integration"
	"tailscale.com/tstest/integration/testcontrol"
	"tailscale.com/types/logger"

	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/tailnet/loopnet"
)

// The lab: two computers as network namespaces, joined by a thunderbolt0
// link (through a bridge in a third "cable" namespace, so that a pull shows
// NO-CARRIER at both ends), a lan0 link (through a "switch" namespace) and a
// wan0 link to a namespace holding the tailnet's control server and DERP
// relay. Each Delta runs as its own process under `ip netns exec`.
//
// Addresses: thunderbolt 169.254.77.0/24, lan 10.77.1.0/24, wan (not a road:
// a documentation range) 198.51.100.0/24. Before anything else, the root
// namespace gets an unreachable route for each, so nothing from it can leave
// the machine towards them; the test never dials a lab address from it.
var labRanges = []string{"169.254.77.0/24", "10.77.1.0/24", "198.51.100.0/24"}

const labControlIP = "198.51.100.254"

type lab struct {
	t       *testing.T
	prefix  string    // namespace names: prefix + "a", "b", "cable", "switch", "wan"
	url     string    // control server
	control io.Writer // its command input (setOnline)
}

func (l *lab) ns(s string) string { return l.prefix + s }

func sh(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// newLab builds the namespaces and links, guards the root namespace and
// starts the control server. It skips without root, ip or nft.
func newLab(t *testing.T) *lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the lab needs root to make network namespaces (CI runs as root)")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the lab needs %s (make deps installs iproute2 and nftables as root)", tool)
		}
	}
	l := &lab{t: t, prefix: fmt.Sprintf("dl%d", os.Getpid()%100000)}
	// Guard the root namespace first.
	for _, r := range labRanges {
		sh(t, "ip", "route", "replace", "unreachable", r)
	}
	t.Cleanup(func() {
		for _, r := range labRanges {
			exec.Command("ip", "route", "del", "unreachable", r).Run()
		}
	})
	for _, n := range []string{"a", "b", "cable", "switch", "wan"} {
		sh(t, "ip", "netns", "add", l.ns(n))
		name := l.ns(n)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
		sh(t, "ip", "-n", name, "link", "set", "lo", "up")
	}
	link := func(mid, bridge, ifname, cidrA, cidrB string) { labLink(t, l.ns, mid, bridge, ifname, cidrA, cidrB) }
	link("cable", "tb", "thunderbolt0", "169.254.77.1/24", "169.254.77.2/24")
	link("switch", "sw", "lan0", "10.77.1.1/24", "10.77.1.2/24")
	link("wan", "wan", "wan0", "198.51.100.1/24", "198.51.100.2/24")
	sh(t, "ip", "-n", l.ns("wan"), "addr", "add", labControlIP+"/24", "dev", "wan")
	for _, host := range []string{"a", "b"} {
		// The tailnet road keeps to its own link: no UDP on the cable or
		// the lan, so magicsock cannot take them; Wake-on-LAN (UDP port 9)
		// excepted.
		nft(t, l.ns(host), `add table inet lab
add chain inet lab out { type filter hook output priority 0; }
add chain inet lab in { type filter hook input priority 0; }
add rule inet lab out oifname { "thunderbolt0", "lan0" } udp dport 9 accept
add rule inet lab in iifname { "thunderbolt0", "lan0" } udp dport 9 accept
add rule inet lab out oifname { "thunderbolt0", "lan0" } meta l4proto udp drop
add rule inet lab in iifname { "thunderbolt0", "lan0" } meta l4proto udp drop`)
	}
	l.startControl()
	return l
}

// labLink links computers a and b into a bridge in namespace mid: a veth
// named ifname in each, with its address (cidrA, cidrB), and its other end
// (bridge+"a", bridge+"b") a port of the bridge.
func labLink(t testing.TB, ns func(string) string, mid, bridge, ifname, cidrA, cidrB string) {
	sh(t, "ip", "-n", ns(mid), "link", "add", bridge, "type", "bridge")
	sh(t, "ip", "-n", ns(mid), "link", "set", bridge, "up")
	for i, host := range []string{"a", "b"} {
		port := bridge + host
		sh(t, "ip", "-n", ns(host), "link", "add", ifname, "type", "veth", "peer", "name", port, "netns", ns(mid))
		sh(t, "ip", "-n", ns(mid), "link", "set", port, "master", bridge)
		sh(t, "ip", "-n", ns(mid), "link", "set", port, "up")
		sh(t, "ip", "-n", ns(host), "addr", "add", []string{cidrA, cidrB}[i], "dev", ifname)
		sh(t, "ip", "-n", ns(host), "link", "set", ifname, "up")
	}
}

func nft(t testing.TB, ns, rules string) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft in %s: %v\n%s", ns, err, out)
	}
}

// startControl runs the control server and DERP relay in the wan
// namespace.
func (l *lab) startControl() { l.url, l.control = runControlCmd(l.t, l.ns("wan"), labControlIP) }

// setOnline makes the lab's control server tell the others that host is
// offline (last seen at seen) or online again.
func (l *lab) setOnline(host string, online bool, seen time.Time) {
	l.t.Helper()
	cmd := "ONLINE " + host
	if !online {
		cmd = fmt.Sprintf("OFFLINE %s %d", host, seen.Unix())
	}
	if _, err := io.WriteString(l.control, cmd+"\n"); err != nil {
		l.t.Fatal(err)
	}
}

// runControl runs a control server and DERP relay on ip inside namespace
// ns: this test binary again, as TestLabControl, until the test ends. It
// returns the control server's URL.
func runControl(t *testing.T, ns, ip string) string {
	t.Helper()
	url, _ := runControlCmd(t, ns, ip)
	return url
}

// runControlCmd is runControl, with the control server's command input
// (lines "OFFLINE host unix-seconds", "ONLINE host").
func runControlCmd(t *testing.T, ns, ip string) (string, io.Writer) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run", "^TestLabControl$", "-test.timeout", "30m")
	cmd.Env = append(os.Environ(), "DELTA_LAB_CONTROL_IP="+ip)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "CONTROL "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return u, stdin
		}
	}
	t.Fatal("the control server did not start in " + ns)
	return "", nil
}

// TestLabControl is the lab's control server and DERP relay, run inside the
// wan namespace by the lab (not a test of its own). It makes every node a
// computer of one user, as a person's own computers are.
func TestLabControl(t *testing.T) {
	ip := os.Getenv("DELTA_LAB_CONTROL_IP")
	if ip == "" {
		t.Skip("run by the lab inside its wan namespace")
	}
	derpMap := integration.RunDERPAndSTUN(t, logger.Discard, ip)
	s := &testcontrol.Server{DERPMap: derpMap, AllOnline: true, Logf: logger.Discard, DNSConfig: &tailcfg.DNSConfig{Proxied: true}}
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	s.HTTPTestServer = httptest.NewUnstartedServer(s)
	s.HTTPTestServer.Listener.Close()
	s.HTTPTestServer.Listener = ln
	s.HTTPTestServer.Start()
	defer s.HTTPTestServer.Close()
	fmt.Println("CONTROL " + s.HTTPTestServer.URL)
	done := make(chan struct{})
	cmds := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			cmds <- sc.Text()
		}
		close(done)
	}()
	var owner tailcfg.UserID
	for {
		select {
		case <-done:
			return
		case cmd := <-cmds:
			f := strings.Fields(cmd)
			if len(f) < 2 {
				t.Errorf("lab control: %q is not OFFLINE host unix or ONLINE host", cmd)
				continue
			}
			k, ok := loopnet.NodeByHost(s, f[1])
			if !ok {
				t.Errorf("lab control: no node %q", f[1])
				continue
			}
			var seen time.Time
			if len(f) == 3 {
				sec, _ := strconv.ParseInt(f[2], 10, 64)
				seen = time.Unix(sec, 0)
			}
			if err := loopnet.SetOnline(s, k, f[0] == "ONLINE", seen); err != nil {
				t.Errorf("lab control: %v", err)
			}
			continue
		case <-time.After(50 * time.Millisecond):
		}
		for _, n := range s.AllNodes() {
			if owner == 0 {
				owner = n.User
			}
			if n.User != owner {
				n.User = owner
				s.UpdateNode(n)
			}
		}
	}
}

// nsDo runs f on a thread switched into network namespace ns: sockets made
// there stay in it.
func nsDo(ns string, f func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	target, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("setns %s: %w", ns, err)
	}
	ferr := f()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is in the wrong namespace: leave it locked, so it
		// dies with this goroutine instead of serving others.
		return fmt.Errorf("setns back: %w", err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// nsDialer dials from inside a namespace.
func nsDialer(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		if e := nsDo(ns, func() error {
			var d net.Dialer
			c, err = d.DialContext(ctx, network, addr)
			return nil
		}); e != nil {
			return nil, e
		}
		return c, err
	}
}

// labProc starts Delta in namespace host ("a" or "b") under name.
func (l *lab) start(host, name string) *proc { return l.startWith(host, name, "") }

// startWith starts a Delta with config.json holding config ("" for none).
func (l *lab) startWith(host, name, config string) *proc {
	t := l.t
	p := &proc{name: name, dir: filepath.Join(t.TempDir(), name),
		args: []string{"--control-url", l.url, "--hostname", name}}
	if config != "" {
		if err := os.MkdirAll(p.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p.dir, "config.json"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p.wrap = []string{"ip", "netns", "exec", l.ns(host)}
	p.dial = nsDialer(l.ns(host))
	p.start(t)
	gatewaytest.WaitFor(t, 60*time.Second, name+" logged in", func() bool { return p.status(t).Tailnet.State == "Running" })
	return p
}

// cable pulls (up=false) or plugs the thunderbolt cable: the bridge ports
// in the cable namespace go down, and both ends see NO-CARRIER.
func (l *lab) cable(up bool) {
	state := map[bool]string{true: "up", false: "down"}[up]
	for _, host := range []string{"a", "b"} {
		sh(l.t, "ip", "-n", l.ns("cable"), "link", "set", "tb"+host, state)
	}
}

// silence makes host drop everything that arrives on ifname (nftables
// ingress), or lets it through again.
func (l *lab) silence(host, ifname string, on bool) {
	if on {
		nft(l.t, l.ns(host), fmt.Sprintf(`add table netdev silence
add chain netdev silence in { type filter hook ingress device %q priority 0; }
add rule netdev silence in drop`, ifname))
		return
	}
	nft(l.t, l.ns(host), "delete table netdev silence")
}

// wan takes the tailnet away from host, or gives it back.
func (l *lab) wan(host string, up bool) {
	sh(l.t, "ip", "-n", l.ns("wan"), "link", "set", "wan"+host, map[bool]string{true: "up", false: "down"}[up])
}
