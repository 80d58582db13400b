package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestWithChildren: a process started here is counted with this one,
// and its CPU read, though its name holds spaces and parentheses.
func TestWithChildren(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc (Linux)")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	odd := filepath.Join(t.TempDir(), "a) 1 2 (b")
	if err := copyFile(sleep, odd); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if _, err := cpuTicks(cmd.Process.Pid); err != nil {
		t.Fatalf("the CPU of %q: %v", odd, err)
	}
	pids := withChildren(os.Getpid())
	if pids[0] != os.Getpid() || !slices.Contains(pids, cmd.Process.Pid) {
		t.Fatalf("withChildren(%d) = %v, without the child %d", os.Getpid(), pids, cmd.Process.Pid)
	}
	if got := withChildren(cmd.Process.Pid); len(got) != 1 {
		t.Fatalf("withChildren(sleep) = %v, want the sleep alone", got)
	}
}

// TestCPUNow: CPU spent here shows in this process's count and the
// machine's, and is spread over the requests it served.
func TestCPUNow(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc (Linux)")
	}
	before, err := cpuNow([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	// Until the clock has ticked 20 times (200 ms) for this process, or
	// 10 s have passed (a test that cannot see its own CPU fails).
	var after cpuSample
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		for i := 0; i < 1e6; i++ {
			sink += i * i
		}
		if after, err = cpuNow([]int{os.Getpid()}); err != nil {
			t.Fatal(err)
		}
		if after.procs-before.procs >= 20 {
			break
		}
	}
	d := after.sub(before)
	if d.procs < 20 {
		t.Fatalf("this process's CPU moved %d ticks in 10 s of work", d.procs)
	}
	// The machine's ticks are counted at each tick and a process's from
	// its exact run time, so the two may differ by a tick or two at the
	// window's edges.
	if d.machine < d.procs-2 {
		t.Fatalf("the machine's CPU (%d ticks) is less than this process's (%d)", d.machine, d.procs)
	}
	procs, machine := d.perRequest(10)
	wantProcs, wantMachine := float64(d.procs)*1e6/userHZ/10, float64(d.machine)*1e6/userHZ/10
	if procs != wantProcs || machine != wantMachine {
		t.Fatalf("perRequest(10) = %v, %v µs; want %v, %v", procs, machine, wantProcs, wantMachine)
	}
}

var sink int
