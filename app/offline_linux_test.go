package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// offlineNS makes a network namespace from which nothing can leave the
// machine and which counts every attempt to (tools/offline-ns); it is
// removed when the test ends. It skips without root, ip or nft.
func offlineNS(t *testing.T, suffix string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the offline namespace guard needs root to make network namespaces (CI runs as root)")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the offline namespace guard needs %s (make deps installs iproute2 and nftables as root)", tool)
		}
	}
	ns := fmt.Sprintf("do%d%s", os.Getpid()%100000, suffix)
	tool := offlineTool(t)
	exec.Command(tool, "down", ns).Run()
	sh(t, tool, "up", ns)
	t.Cleanup(func() { exec.Command(tool, "down", ns).Run() })
	return ns
}

func offlineTool(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../tools/offline-ns")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// leaks is how many packets tried to leave namespace ns, and towards what.
func leaks(t *testing.T, ns string) (int, string) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "-j", "list", "counter", "inet", "delta_offline", "leaks").Output()
	if err != nil {
		t.Fatalf("read the leak counter of %s: %v", ns, err)
	}
	var c struct {
		Nftables []struct {
			Counter *struct{ Packets int } `json:"counter"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("the leak counter of %s: %v: %s", ns, err, out)
	}
	n := 0
	for _, o := range c.Nftables {
		if o.Counter != nil {
			n = o.Counter.Packets
		}
	}
	where, _ := exec.Command(offlineTool(t), "check", ns).CombinedOutput()
	return n, strings.TrimSpace(string(where))
}

// TestStaysOnMachine: two Deltas in tailnet mode, with their control server
// and DERP relay on the loopback of a namespace that counts every attempt
// to reach anything else, find each other and carry a call, and make no
// such attempt. As a check that the counter sees what it should, a Delta
// that opted in to Tailscale's log upload, in a namespace of its own, is
// seen trying (and refused inside that namespace: it has no link to the
// host's network, so nothing leaves).
func TestStaysOnMachine(t *testing.T) {
	ns := offlineNS(t, "a")
	url := runControl(t, ns, "127.0.0.1")

	// The opted-in Delta: its control server does not exist; what it tries
	// to send is the log upload (and the look-ups around it).
	nsOpt := offlineNS(t, "b")
	optIn := &proc{name: "opted-in", dir: filepath.Join(t.TempDir(), "opted-in"), wrap: []string{"ip", "netns", "exec", nsOpt},
		dial: nsDialer(nsOpt), args: []string{"--control-url", "http://127.0.0.1:9", "--hostname", "optin", "--tailscale-log-upload"}}
	optIn.start(t)

	var procs []*proc
	for i, name := range []string{"laptop", "studio"} {
		p := &proc{name: name, dir: filepath.Join(t.TempDir(), name), wrap: []string{"ip", "netns", "exec", ns}, dial: nsDialer(ns),
			args: []string{"--control-url", url, "--hostname", name, "--lan-addrs", []string{"127.0.0.2", "127.0.0.3"}[i]}}
		p.start(t)
		procs = append(procs, p)
	}
	laptop, studio := procs[0], procs[1]
	for _, p := range procs {
		gatewaytest.WaitFor(t, 60*time.Second, p.name+" logged in", func() bool { return p.status(t).Tailnet.State == "Running" })
		if p.status(t).Tailnet.LogUpload {
			t.Errorf("%s says its log upload is on, without being asked", p.name)
		}
		if !p.log.Contains("Delta contacts the tailnet's control server and the DERP relays it names, and nothing else") ||
			!p.log.Contains("nothing is sent to Tailscale's log server") {
			t.Errorf("%s's log does not say whom it contacts", p.name)
		}
	}
	gatewaytest.WaitFor(t, 60*time.Second, "laptop to find studio", func() bool {
		for _, p := range laptop.status(t).Peers {
			if p.Name == "studio" {
				return true
			}
		}
		return false
	})
	var ln net.Listener
	if err := nsDo(ns, func() (err error) { ln, err = net.Listen("tcp", "127.0.0.1:0"); return err }); err != nil {
		t.Fatal(err)
	}
	app := gatewaytest.StartOwnerAppOn(t, ln)
	studio.register(t, "notes", app.URL)
	if r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/x", []byte("hi"), "X-Delta-Route", "tailnet"); r.Status != 201 {
		t.Fatalf("a call over the tailnet: %d %s", r.Status, r.Body)
	}

	// The counter counts: the opted-in Delta is seen trying to upload.
	if !optIn.status(t).Tailnet.LogUpload {
		t.Errorf("the opted-in Delta says its log upload is off")
	}
	var seen string
	gatewaytest.WaitFor(t, 90*time.Second, "the opted-in Delta to try to reach Tailscale's log server", func() bool {
		n, where := leaks(t, nsOpt)
		seen = where
		return n > 0
	})
	t.Logf("opted in: %s", seen)
	// By now the two Deltas have run at least as long as the opted-in one
	// took to try; they tried nothing.
	if n, where := leaks(t, ns); n != 0 {
		t.Errorf("the tailnet-mode Deltas tried to leave the machine: %s", where)
	}
	// With the upload off, tsnet's log uploader is off too: nothing of
	// its log was buffered for an upload. The opted-in Delta's buffer
	// was written (it would upload it), which shows the check can see it.
	for _, p := range procs {
		if written, what := logBufferWritten(t, p.dir); written {
			t.Errorf("%s, its log upload off, buffered tsnet's log for an upload: %s", p.name, what)
		}
	}
	gatewaytest.WaitFor(t, 30*time.Second, "the opted-in Delta's log buffer to be written", func() bool {
		written, _ := logBufferWritten(t, optIn.dir)
		return written
	})
}

// logBufferWritten says whether tsnet's log uploader (logtail) ever wrote
// its buffer files in dir (<state>/tailnet/tailscaled.log1.txt and
// log2.txt): written, a file's modification time is past its birth, even
// once the uploader has emptied it again.
func logBufferWritten(t *testing.T, dir string) (bool, string) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "tailnet", "tailscaled.log*.txt"))
	for _, path := range paths {
		var st unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_BTIME|unix.STATX_MTIME|unix.STATX_SIZE, &st); err != nil {
			t.Fatalf("statx %s: %v", path, err)
		}
		if st.Mask&unix.STATX_BTIME == 0 {
			t.Skipf("%s: this file system keeps no birth times, so a write emptied since cannot be seen", path)
		}
		if st.Size > 0 || st.Mtime != st.Btime {
			at := func(ts unix.StatxTimestamp) time.Time { return time.Unix(ts.Sec, int64(ts.Nsec)) }
			return true, fmt.Sprintf("%s: %d bytes, modified %s after it was made", filepath.Base(path), st.Size, at(st.Mtime).Sub(at(st.Btime)))
		}
	}
	return false, ""
}
