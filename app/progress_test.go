package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDemoPauseOffATerminal: without a terminal (stdin /dev/null, output
// a pipe) the tour's pause asks for no Enter and ends its line, so that
// the next line does not run into it (issue 36).
func TestDemoPauseOffATerminal(t *testing.T) {
	var b strings.Builder
	d := &demo{out: &b, nap: time.Millisecond}
	d.pause("a read")
	d.say("next")
	if b.String() != "   … a read\nnext\n" {
		t.Errorf("the demo off a terminal wrote %q", b.String())
	}
}

// TestDemoHangUpCleansUp: a demo ended by a hang-up (its terminal closed),
// not only by Ctrl-C, stops its Deltas and removes its state folders (it
// left its delta-demo-N folder behind).
func TestDemoHangUpCleansUp(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(bin, "demo", "--check")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "TS_NO_LOGS_NO_SUPPORT=true")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // gone already when the test passed
		<-exited
	})
	lines := bufio.NewScanner(out)
	root := ""
	for root == "" && lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), "State folders: "); ok {
			root = v
		}
	}
	go func() {
		for lines.Scan() { // the rest, so that the demo never blocks on its pipe
		}
		exited <- cmd.Wait()
	}()
	if !strings.HasPrefix(root, tmp) {
		t.Fatalf("the demo's state folders %q are not in TMPDIR %s", root, tmp)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		exited <- nil // for the cleanup
	case <-time.After(60 * time.Second):
		t.Fatal("the demo did not end within 60 s of a hang-up")
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("after a hang-up the demo left %v in TMPDIR", ents)
	}
}
