package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// What a request costs each forwarder in CPU, and the ceiling the floors
// put on durable calls (goal 4 of "At the road's speed, round 2"):
// wrk's rate says how fast, this says what each request took from the
// machine's two cores, where a Delta's extra work goes against the Go
// floor's and nginx's.

// cpuSample is the CPU used so far by some processes and by the whole
// machine, in clock ticks.
type cpuSample struct{ procs, machine int64 }

// cpuNow reads pids' CPU (/proc/PID/stat) and the machine's
// (/proc/stat's first line: user, nice, system, irq and softirq; idle,
// iowait and the hypervisor's steal left out).
func cpuNow(pids []int) (cpuSample, error) {
	var s cpuSample
	for _, pid := range pids {
		t, err := cpuTicks(pid)
		if err != nil {
			return s, fmt.Errorf("the CPU of process %d: %w", pid, err)
		}
		s.procs += t
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, fmt.Errorf("the machine's CPU: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return s, fmt.Errorf("the machine's CPU: /proc/stat's first line %q is not \"cpu\" and its times", line)
	}
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system (idle iowait) irq softirq
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return s, fmt.Errorf("the machine's CPU: time %d of /proc/stat's first line %q is not a number", i, line)
		}
		s.machine += v
	}
	return s, nil
}

func (s cpuSample) sub(o cpuSample) cpuSample {
	return cpuSample{procs: s.procs - o.procs, machine: s.machine - o.machine}
}

// perRequest is s in µs a request, for n requests.
func (s cpuSample) perRequest(n int) (procs, machine float64) {
	per := func(t int64) float64 { return float64(t) / userHZ * 1e6 / float64(n) }
	return per(s.procs), per(s.machine)
}

// userHZ is Linux's clock tick for /proc's CPU times (USER_HZ).
const userHZ = 100

// statFields is /proc/PID/stat after the process's name (which may hold
// spaces and parentheses): its state first, then its parent, …, and its
// user and system CPU times at 11 and 12.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return nil, fmt.Errorf("/proc/%d/stat has no process name in parentheses: %q", pid, s)
	}
	return strings.Fields(s[i+2:]), nil
}

// cpuTicks is a process's utime+stime in clock ticks (/proc/PID/stat).
func cpuTicks(pid int) (int64, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat has %d fields after the name, not the 13 up to its CPU times", pid, len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat's CPU times %q and %q are not numbers", pid, f[11], f[12])
	}
	return u + st, nil
}

// withChildren is pid and its children's pids (each process's parent in
// its /proc/PID/stat).
func withChildren(pid int) []int {
	pids := []int{pid}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, err := statFields(child); err == nil && len(f) > 1 && f[1] == strconv.Itoa(pid) {
			pids = append(pids, child)
		}
	}
	return pids
}

// journalsFigure is BenchmarkCallWrites (gateway/state/journal) with 16 calls
// in flight: both journals' writes for a small call and nothing else.
type journalsFigure struct {
	rate, cpu float64 // calls a second; µs of CPU a call, every core
	err       error
}

func (j journalsFigure) String() string {
	if j.err != nil {
		return "not measured (" + j.err.Error() + ")"
	}
	return fmt.Sprintf("%.0f calls a second, %.0f µs of CPU a call", j.rate, j.cpu)
}

var (
	benchRateRe = regexp.MustCompile(`([0-9.]+) calls/s`)
	benchCPURe  = regexp.MustCompile(`([0-9.]+) cpu-µs/call`)
)

// journalsFloor runs the journals' floor once, for 4,000 calls.
func journalsFloor(ctx context.Context) journalsFigure {
	args := []string{"test", "-run", "^$", "-bench", "^BenchmarkCallWrites$/^in-flight-16$", "-benchtime", "4000x", "./gateway/state/journal/"}
	out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	if err != nil {
		return journalsFigure{err: fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, lastLine(out))}
	}
	r, c := benchRateRe.FindSubmatch(out), benchCPURe.FindSubmatch(out)
	if r == nil || c == nil {
		return journalsFigure{err: fmt.Errorf("go %s printed no calls/s and cpu-µs/call: %s", strings.Join(args, " "), lastLine(out))}
	}
	var j journalsFigure
	j.rate, _ = strconv.ParseFloat(string(r[1]), 64)
	j.cpu, _ = strconv.ParseFloat(string(c[1]), 64)
	return j
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// cpuReport writes the CPU a request of each target's processes for the
// small reads (the first size) and the calls, and the ceiling for durable calls.
func cpuReport(b *strings.Builder, targets []target, sizes []string, conns []int, reads, calls map[string]cell, journals journalsFigure) {
	if len(reads) == 0 && len(calls) == 0 {
		return
	}
	b.WriteString("\n### CPU a request (µs of CPU, user and system, of the forwarder's own processes; in brackets the whole machine's: wrk, the app and the kernel's work included)\n\n")
	fmt.Fprintf(b, "Read from `/proc` around each cell above (the clock ticks every 10 ms; a cell holds thousands of requests). The machine has %d cores: all of them busy give %d million µs of CPU a second.\n\n", runtime.NumCPU(), runtime.NumCPU())
	b.WriteString("| request |")
	for _, t := range targets {
		fmt.Fprintf(b, " %s |", t.name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(targets)) + "\n")
	row := func(name string, get func(t target) (cell, bool)) {
		fmt.Fprintf(b, "| %s |", name)
		for _, t := range targets {
			c, ok := get(t)
			switch {
			case !ok || c.requests == 0:
				b.WriteString(" — |")
			case len(t.pids) == 0:
				fmt.Fprintf(b, " — (%.0f) |", c.machine)
			default:
				fmt.Fprintf(b, " %.0f (%.0f) |", c.cpu, c.machine)
			}
		}
		b.WriteString("\n")
	}
	if len(reads) > 0 && len(sizes) > 0 {
		for _, c := range conns {
			row(fmt.Sprintf("%s read, c=%d", sizes[0], c), func(t target) (cell, bool) {
				x, ok := reads[fmt.Sprintf("%s|%d|%s", sizes[0], c, t.name)]
				return x, ok
			})
		}
	}
	if len(calls) > 0 {
		for _, c := range conns {
			row(fmt.Sprintf("call, c=%d", c), func(t target) (cell, bool) {
				x, ok := calls[fmt.Sprintf("%d|%s", c, t.name)]
				return x, ok
			})
		}
	}
	// The ceiling for durable calls: the Go floor's CPU a call (new connections, no
	// journal) and the journals' (no connections), with the rest of the
	// machine's work a call as in Delta's own cell.
	var floor, delta target
	for _, t := range targets {
		switch t.role {
		case roleFloor:
			floor = t
		case roleDelta:
			delta = t
		}
	}
	fc, ok1 := calls["16|"+floor.name]
	dc, ok2 := calls["16|"+delta.name]
	if !ok1 || !ok2 || fc.requests == 0 || dc.requests == 0 || journals.err != nil || journals.cpu == 0 {
		if journals.err != nil {
			fmt.Fprintf(b, "\nThe journals' floor for the calls' ceiling: %s.\n", journals)
		}
		return
	}
	rest := dc.machine - dc.cpu
	cores := float64(runtime.NumCPU()) * 1e6
	ceiling, free := cores/(fc.cpu+journals.cpu+rest), cores/(fc.cpu+rest)
	fmt.Fprintf(b, "\n**The ceiling for durable calls on this machine, at c=16.** The Go floor's process spends %.0f µs of CPU a call (a new connection on each of its hops, as Delta's calls must, and nothing else); both journals' writes for a call alone %.0f µs (`BenchmarkCallWrites`, 16 in flight, in this run: %s); and the rest of the machine %.0f µs a call in Delta's own cell (wrk, the app, the kernel's work and every other process outside the two Deltas, the idle ones too: %.0f less %.0f). A Delta that did no more than the two floors would carry at most **%.0f calls a second** with all %d cores busy (%.0f with journals that cost nothing). Delta's two processes spend %.0f µs a call, %.0f of it beyond both floors, and carried %.0f a second: **%.2f× the ceiling**.\n",
		fc.cpu, journals.cpu, journals, rest, dc.machine, dc.cpu, ceiling, runtime.NumCPU(), free, dc.cpu, dc.cpu-fc.cpu-journals.cpu, dc.rate, dc.rate/ceiling)
}
