package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/tailnet/tailnettest"
)

// TestBadStarts: each mistake of a first start is refused, or warned
// about, with a message that names it.
func TestBadStarts(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         []string
	}{
		{"no network key", `{"peers": [{"name": "studio", "roads": {"lan": "127.0.0.1:9"}}]}`,
			[]string{"no network_key", `"network_key": "`}},
		{"empty peers", `{"network_key": "00112233445566778899aabbccddeeff", "peers": []}`,
			[]string{`"peers": []`, "static mode needs at least one peer", `remove "peers"`}},
		{"short key", `{"network_key": "abcd", "peers": [{"name": "studio", "roads": {"lan": "127.0.0.1:9"}}]}`,
			[]string{"network_key must be at least 16 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(tc.config), 0o600)
			out, err := exec.Command(bin, "--state-dir", dir, "--listen", "127.0.0.1:0", "--headless").CombinedOutput()
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

// TestFirstStartWords: a new folder is named in the log, and a plain-TCP
// peer listener off loopback is warned about loudly.
func TestFirstStartWords(t *testing.T) {
	laptop, _ := twoProcs(t)
	laptop.args = []string{"--peer-listen", "0.0.0.0:0"}
	laptop.start(t)
	gatewaytest.WaitFor(t, 10*time.Second, "the warnings", func() bool {
		return laptop.log.Contains("a new state folder") && laptop.log.Contains("state_dir="+laptop.dir) && laptop.log.Contains("PLAIN TCP")
	})
	laptop.kill(t)
	// Started again on the same folder: not new.
	laptop.args = nil
	laptop.start(t)
	gatewaytest.WaitFor(t, 10*time.Second, "delta started", func() bool { return laptop.log.Contains("delta started") })
	if laptop.log.Contains("a new state folder") || laptop.log.Contains("PLAIN TCP") {
		t.Fatalf("an old folder on loopback was called new, or warned about:\n%s", laptop.log)
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
	if code != exitFailed || !strings.Contains(errOut, dead) {
		t.Fatalf("delta login: %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(p.log.String(), "tailscale: ") {
		t.Errorf("tsnet's own lines reached stderr without --verbose")
	}
}

func freePortT(t *testing.T) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
