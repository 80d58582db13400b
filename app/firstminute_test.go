package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/tailnet/tailnettest"
	"github.com/delta-roads/delta/kit"
)

// TestBadStarts: each mistake of a first start is refused, or warned
// about, with a message that names it.
func TestBadStarts(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		name, config string
		want         []string
		listen       string
	}{
		{"a taken --listen port", `{"network_key": "00112233445566778899aabbccddeeff", "peers": [{"name": "studio", "roads": {"lan": "127.0.0.1:9"}}], "peer_listen": "127.0.0.1:0"}`,
			[]string{"the local API cannot listen on " + taken.Addr().String(), "--listen or DELTA_LISTEN"}, taken.Addr().String()},
		{"neither IDs nor a network key", `{"peers": [{"name": "studio", "roads": {"lan": "127.0.0.1:9"}}]}`,
			[]string{"without their IDs", "delta pair studio=ID", `"network_key"`}, ""},
		{"empty peers", `{"network_key": "00112233445566778899aabbccddeeff", "peers": []}`,
			[]string{`"peers": [] with no "mode"`, `write "mode": "static"`, `remove "peers"`}, ""},
		{"short key", `{"network_key": "abcd", "peers": [{"name": "studio", "roads": {"lan": "127.0.0.1:9"}}]}`,
			[]string{"network_key must be at least 16 bytes"}, ""},
		// Plain TCP across a network is no longer carried (issue 38).
		{"a network key off loopback", `{"network_key": "00112233445566778899aabbccddeeff", "peers": [{"name": "studio", "roads": {"lan": "192.0.2.7:7421"}}], "peer_listen": "127.0.0.1:0"}`,
			[]string{"peer studio's lan road is 192.0.2.7:7421", "in the clear", "delta pair studio=ID"}, ""},
		{"a network key listening off loopback", `{"network_key": "00112233445566778899aabbccddeeff", "peers": [{"name": "studio", "roads": {"lan": "127.0.0.1:9"}}], "peer_listen": "0.0.0.0:0"}`,
			[]string{"its peer API listens on 0.0.0.0:0", "in the clear", "delta pair studio=ID"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(tc.config), 0o600)
			listen := tc.listen
			if listen == "" {
				listen = "127.0.0.1:0"
			}
			out, err := exec.Command(bin, "--state-dir", dir, "--listen", listen, "--headless").CombinedOutput()
			if err == nil {
				t.Fatalf("started: %s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the message does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestFirstStartWords: a folder nothing prepared (a mistyped one, which
// would start a new tailnet Delta) is named in the log as new; one that
// delta init prepared is not (it was warned "no identity yet", issue 65),
// and neither is an old one. (A plain-TCP peer listener off loopback,
// once warned about, is refused now: TestBadStarts.)
func TestFirstStartWords(t *testing.T) {
	const warned = "a new state folder"
	dead := "http://" + gatewaytest.DeadAddr(t)
	p := &proc{name: "laptop", dir: filepath.Join(t.TempDir(), "lapotp"),
		args: []string{"--control-url", dead, "--hostname", "laptop", "--lan-addrs", "127.0.0.1", "--lan-port", strconv.Itoa(freePortT(t))}}
	p.start(t)
	gatewaytest.WaitFor(t, 10*time.Second, "the words", func() bool {
		return p.log.Contains(warned) && p.log.Contains("state_dir="+p.dir)
	})
	p.kill(t)
	// Started again on the same folder: not new.
	p.start(t)
	gatewaytest.WaitFor(t, 10*time.Second, "delta started", func() bool { return p.log.Contains("delta started") })
	if p.log.Contains(warned) {
		t.Fatalf("an old folder was called new:\n%s", p.log)
	}

	// Prepared (config.json and identity, as delta init writes them):
	// its first start is said as such, not warned about.
	laptop, _ := twoProcs(t)
	laptop.start(t)
	gatewaytest.WaitFor(t, 10*time.Second, "delta started", func() bool { return laptop.log.Contains("delta started") })
	if laptop.log.Contains(warned) || !laptop.log.Contains("the first start with this state folder") {
		t.Fatalf("a folder delta init prepared, at its first start:\n%s", laptop.log)
	}
}

// TestTakenLANPort: a second Delta on one computer whose lan port is taken
// is told to choose another with --lan-port.
func TestTakenLANPort(t *testing.T) {
	c := tailnettest.Start(t, tailnettest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	out, err := exec.Command(bin, "--state-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--headless", "--control-url", c.URL,
		"--hostname", "second", "--lan-addrs", "127.0.0.1", "--lan-port", port).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--lan-port") || !strings.Contains(string(out), "port "+port) {
		t.Fatalf("a taken lan port: %v\n%s", err, out)
	}
}

// TestNoLoginURL: a control server that never answers is named, with why,
// in the status, `delta login` and the log.
func TestNoLoginURL(t *testing.T) {
	dead := "http://" + gatewaytest.DeadAddr(t)
	p := &proc{name: "laptop", dir: t.TempDir(), args: []string{"--control-url", dead, "--hostname", "laptop", "--lan-addrs", "127.0.0.1", "--lan-port", strconv.Itoa(freePortT(t))}}
	p.start(t)
	want := "no login URL after"
	gatewaytest.WaitFor(t, 60*time.Second, "the status to say why no login URL came", func() bool {
		st := p.status(t)
		return strings.Contains(st.Tailnet.Message, want) && strings.Contains(st.Tailnet.Message, dead)
	})
	gatewaytest.WaitFor(t, 10*time.Second, "the log to say it", func() bool { return p.log.Contains(want) })
	out, errOut, code := delta(t, "login", "--state-dir", p.dir, "--timeout", "1s")
	if code != cli.ExitFailed || !strings.Contains(errOut, dead) {
		t.Fatalf("delta login: %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(p.log.String(), "tailscale: ") {
		t.Errorf("tsnet's own lines reached stderr without --verbose")
	}
}

// freePortT is a free port on 127.0.0.1, below the ephemeral range
// (freeAddr).
func freePortT(t *testing.T) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(freeAddr(t))
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSecondUser: another user's Delta holds the default ports (here the
// test holds them: 127.0.0.1:7420 and the lan port 7422 on the lan
// address). A Delta with its own state folder and the default ports takes
// free ones, names its local API's in local.json (where apps and the kit
// find it), publishes its lan port in hello, and says it in the log and
// in /v1/status (the menu shows the same notices).
func TestSecondUser(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:7420", "127.0.0.1:7422"} {
		if ln, err := net.Listen("tcp", addr); err == nil { // else something else holds it: taken either way
			t.Cleanup(func() { ln.Close() })
		}
	}
	c := tailnettest.Start(t, tailnettest.Options{})
	p := &proc{name: "second", dir: t.TempDir(), defaultListen: true,
		args: []string{"--headless", "--control-url", c.URL, "--hostname", "second", "--lan-addrs", "127.0.0.1"}}
	p.start(t)
	if strings.HasSuffix(p.c.URL, ":7420") {
		t.Fatalf("the local API is on the taken default port: %s", p.c.URL)
	}
	k, err := kit.Open(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Status(t.Context()); err != nil {
		t.Fatalf("the kit does not find the Delta on its fallback port: %v", err)
	}
	var st struct {
		Notices []string
		Tailnet struct {
			LAN []string `json:"lan_listeners"`
		}
	}
	gatewaytest.WaitFor(t, 30*time.Second, "the lan listener on a free port", func() bool {
		r := p.c.Must(t, "GET", "/v1/status", nil)
		return json.Unmarshal(r.Body, &st) == nil && len(st.Tailnet.LAN) == 1
	})
	if strings.Contains(st.Tailnet.LAN[0], ":7422") {
		t.Errorf("the lan listener is on the taken port: %v", st.Tailnet.LAN)
	}
	joined := strings.Join(st.Notices, "\n")
	for _, want := range []string{"port 7420 is taken", "lan port 7422 is taken"} {
		if !strings.Contains(joined, want) || !p.log.Contains(want) {
			t.Errorf("the status and the log do not say %q:\nstatus: %q\nlog: %s", want, st.Notices, p.log)
		}
	}
	// Chosen by the person, a taken port stays an error (TestTakenLANPort).
}
