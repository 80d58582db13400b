package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// TestREADMEFirstCall runs the README's "A first call, on one machine"
// (and the guide's "Two Deltas on one machine") as a newcomer would, line by line (its folders under a temporary one,
// its ports free ones, bin/delta this build): each command succeeds, the
// forward serves beta's app, and nothing of either Delta's state folder
// (its local token, its TLS key) can be had through it. The example once
// served /tmp, which holds both state folders (issue 65, item 3).
func TestREADMEFirstCall(t *testing.T) {
	need(t, "python3")
	need(t, "curl")
	for _, doc := range []struct{ file, heading string }{
		{"../README.md", "## A first call, on one machine"},
		{"../docs/guide.md", "### Two Deltas on one machine, as pasted (static mode)"},
	} {
		t.Run(filepath.Base(doc.file), func(t *testing.T) {
			md, err := os.ReadFile(doc.file)
			if err != nil {
				t.Fatal(err)
			}
			firstCall(t, firstBlock(t, string(md), doc.heading))
		})
	}
}

// firstCall runs a first call's shell block.
func firstCall(t *testing.T, block string) {
	root := t.TempDir()
	ports := map[string]string{}
	for _, p := range []string{"7501", "7502", "7511", "7512", "8080"} {
		a := freeAddr(t)
		ports[p] = a[strings.LastIndex(a, ":")+1:]
	}
	portRe := regexp.MustCompile(`\b(7501|7502|7511|7512|8080)\b`)
	forward := ""
	served := ""
	var states []string
	for _, line := range shellLines(block) {
		line = strings.ReplaceAll(line, "/tmp", root)
		line = portRe.ReplaceAllStringFunc(line, func(p string) string { return ports[p] })
		line = strings.ReplaceAll(line, "bin/delta", bin)
		if forward != "" {
			line = strings.ReplaceAll(line, "http://127.0.0.1:PORT/", forward)
		}
		if m := regexp.MustCompile(`--state-dir ([^\s)"]+)`).FindStringSubmatch(line); m != nil && !slices.Contains(states, m[1]) {
			states = append(states, m[1])
		}
		switch {
		case strings.HasPrefix(line, "make "):
			// make build: bin/delta is this test's build.
		case strings.HasSuffix(line, "&"), strings.Contains(line, " run "):
			if m := regexp.MustCompile(`--directory (\S+)`).FindStringSubmatch(line); m != nil {
				served = m[1]
			}
			background(t, strings.TrimSuffix(line, "&"))
			// It listens on the port it was given: the app, or the
			// Delta's local API (--listen).
			addr := ""
			if m := regexp.MustCompile(`--listen (\S+)`).FindStringSubmatch(line); m != nil {
				addr = m[1]
			} else if m := regexp.MustCompile(`http\.server (\d+)`).FindStringSubmatch(line); m != nil {
				addr = "127.0.0.1:" + m[1]
			}
			if addr == "" {
				t.Fatalf("the README starts %q, and the test cannot tell where it listens", line)
			}
			gatewaytest.WaitFor(t, 30*time.Second, line+" listening", func() bool {
				c, err := net.Dial("tcp", addr)
				if err == nil {
					c.Close()
				}
				return err == nil
			})
		default:
			out, code := shell(t, line)
			t.Logf("$ %s\n%s", line, out)
			switch {
			case strings.Contains(line, " call "):
				// http.server answers a POST 501: Delta says so.
				if !strings.Contains(out, "501") {
					t.Errorf("the README's call: exit %d, %s", code, out)
				}
			case code != 0:
				t.Fatalf("the README's %q: exit %d\n%s", line, code, out)
			}
			if strings.Contains(line, " forward ") {
				forward, _, _ = strings.Cut(strings.TrimSpace(out), "\n")
				if !strings.HasPrefix(forward, "http://127.0.0.1:") {
					t.Fatalf("delta forward printed %q", out)
				}
			}
		}
	}
	if forward == "" || served == "" || len(states) != 2 {
		t.Fatalf("the README's example: forward %q, app's folder %q, state folders %q", forward, served, states)
	}
	// Nothing of the state folders through the forward.
	for _, dir := range states {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(served, p)
			if err != nil || strings.HasPrefix(rel, "..") {
				return nil
			}
			r, err := http.Get(forward + filepath.ToSlash(rel))
			if err != nil {
				t.Errorf("%s through the forward: %v", rel, err)
				return nil
			}
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				t.Errorf("the README's app serves %s, of a Delta's state folder, through the forward (%d)", rel, r.StatusCode)
			}
			return nil
		})
	}
}

// firstBlock is the first ```sh block after heading in md.
func firstBlock(t *testing.T, md, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(md, heading+"\n")
	if !ok {
		t.Fatalf("the README has no %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("no sh block under %q", heading)
	}
	return block
}

// shellLines are a shell block's commands: continued lines joined,
// comments and blank lines left out.
func shellLines(block string) []string {
	var out []string
	cur := ""
	for l := range strings.SplitSeq(block, "\n") {
		l = strings.TrimSpace(uncomment(l))
		if strings.HasSuffix(l, `\`) {
			cur += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		if l = strings.TrimSpace(cur + l); l != "" {
			out = append(out, l)
		}
		cur = ""
	}
	return out
}

// uncomment is l up to a # that starts a comment: at its start or after
// a space, outside double quotes.
func uncomment(l string) string {
	quoted := false
	for i, c := range l {
		switch {
		case c == '"':
			quoted = !quoted
		case c == '#' && !quoted && (i == 0 || l[i-1] == ' '):
			return l[:i]
		}
	}
	return l
}

// shell runs line with bash and returns its output and exit code.
func shell(t *testing.T, line string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", line)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return b.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return b.String(), 0
}

// background starts line with bash, in a process group of its own that
// is stopped when the test ends.
func background(t *testing.T, line string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "exec "+line)
	log, err := os.Create(filepath.Join(t.TempDir(), "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if b, _ := os.ReadFile(log.Name()); t.Failed() {
			t.Logf("%s:\n%s", line, b)
		}
	})
}
