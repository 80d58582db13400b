package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/delta-roads/delta/tools/bench/steplog"
)

// stepsFigure is a 1 KiB call's time at c=1, step by step (issue 69, goal
// 3), beside a 1 KiB read's through the same pair: a static pair of its
// own, started with --trace-calls, whose logs say when each call reached
// each step on either side (caller and owner, one clock: this machine's).
// Calls and reads alternate, one at a time, each on a new connection,
// with curl and with Go's client (the bench's own).
type stepsFigure struct {
	n                  int            // calls (and reads) a client
	curlCall, curlRead time.Duration  // p50, curl
	goCall, goRead     time.Duration  // p50, Go's client
	steps              []steplog.Step // in the order a call meets them
	traced             time.Duration  // p50 from the caller's first step to its last
	err                error
}

const stepsN = 60

// errNotRun marks a part left out of the run (-parts, -quick).
var errNotRun = errors.New("not run")

// measureSteps starts the traced pair, registers the owner app on it and
// measures (it stops the pair when the bench ends, with the others).
func measureSteps(ctx context.Context, root, bin, appAddr string, procs *[]*deltaProc) stepsFigure {
	f := stepsFigure{n: stepsN}
	pair, err := startStatic(ctx, root, bin, "steps-static", procs, "--trace-calls")
	if err != nil {
		f.err = err
		return f
	}
	if _, err := pair[1].kit.RegisterApp(ctx, "bench", "http://"+appAddr); err != nil {
		f.err = fmt.Errorf("register the owner app: %w", err)
		return f
	}
	tg := pairTarget(pair, "steps", roleDelta, "studio")
	body := bytes.Repeat([]byte("x"), 1024)
	bodyFile := filepath.Join(root, "steps-body")
	if err := os.WriteFile(bodyFile, body, 0o600); err != nil {
		f.err = err
		return f
	}
	auth := strings.TrimPrefix(tg.headers[0], "Authorization: ")
	prefix := fmt.Sprintf("steps-%d", time.Now().UnixNano())
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var curlCalls, curlReads, goCalls, goReads []time.Duration
	for i := range stepsN {
		for _, call := range []bool{true, false} {
			args := []string{"-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "-H", "Authorization: " + auth}
			if call {
				args = append(args, "-H", fmt.Sprintf("X-Delta-Request-Id: %s-curl-%d", prefix, i), "--data-binary", "@"+bodyFile, tg.callURL)
			} else {
				args = append(args, tg.readURL+"/r/1k")
			}
			out, err := exec.CommandContext(ctx, "curl", args...).Output()
			code, secs, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
			s, perr := strconv.ParseFloat(secs, 64)
			switch {
			case err != nil:
				f.err = fmt.Errorf("curl %v: %v", args, err)
				return f
			case perr != nil || !strings.HasPrefix(code, "2"):
				f.err = fmt.Errorf("curl %v: answered %q, want a 2xx status and its time", args, out)
				return f
			}
			took := time.Duration(s * float64(time.Second))
			if call {
				curlCalls = append(curlCalls, took)
			} else {
				curlReads = append(curlReads, took)
			}

			var req *http.Request
			if call {
				req, _ = http.NewRequestWithContext(ctx, "POST", tg.callURL, bytes.NewReader(body))
				req.Header.Set("X-Delta-Request-Id", fmt.Sprintf("%s-go-%d", prefix, i))
			} else {
				req, _ = http.NewRequestWithContext(ctx, "GET", tg.readURL+"/r/1k", nil)
			}
			req.Header.Set("Authorization", auth)
			start := time.Now()
			resp, err := fresh.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode/100 != 2 {
					err = fmt.Errorf("answered %s", resp.Status)
				}
			}
			if err != nil {
				f.err = fmt.Errorf("%s %s: %w", req.Method, req.URL, err)
				return f
			}
			if call {
				goCalls = append(goCalls, time.Since(start))
			} else {
				goReads = append(goReads, time.Since(start))
			}
		}
	}
	f.curlCall, f.curlRead, f.goCall, f.goRead = steplog.Median(curlCalls), steplog.Median(curlReads), steplog.Median(goCalls), steplog.Median(goReads)
	// The last lines may still be on their way to the logs.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var events map[string][]steplog.Event
		events, err = steplog.Read([]string{pair[0].dir + ".out", pair[1].dir + ".out"}, prefix)
		if err == nil && len(events) == 2*stepsN && steplog.Complete(events) || time.Now().After(deadline) {
			if err == nil && len(events) < 2*stepsN {
				err = fmt.Errorf("the logs traced %d of the %d calls", len(events), 2*stepsN)
			}
			if err != nil {
				f.err = err
				return f
			}
			f.steps, f.traced = steplog.Steps(events)
			return f
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stepsReport is the steps' section of docs/benchmarks.md.
func stepsReport(f stepsFigure) string {
	var b strings.Builder
	b.WriteString("### A 1 KiB call at c=1, step by step (a pair of its own, `delta run --trace-calls`)\n\n")
	if f.err != nil {
		fmt.Fprintf(&b, "Not measured: %v\n\n", f.err)
		return b.String()
	}
	fmt.Fprintf(&b, "%d calls and %d reads, alternated, one at a time, each on a new connection, through a static pair (plain TCP) whose logs say when each call reached each step; p50s. ", 2*f.n, 2*f.n)
	fmt.Fprintf(&b, "With curl: a call %s, a read %s (a call is the read's time and %s more). With Go's client: a call %s, a read %s (%s more).\n\n",
		us(f.curlCall), us(f.curlRead), us(f.curlCall-f.curlRead), us(f.goCall), us(f.goRead), us(f.goCall-f.goRead))
	b.WriteString("| from | to | p50 |\n|---|---|---|\n")
	var sum time.Duration
	for _, s := range f.steps {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", s.From, s.To, us(s.P50))
		sum += s.P50
	}
	fmt.Fprintf(&b, "| | the caller's first step to its last (p50 of the whole) | %s (the steps' p50s add up to %s) |\n\n", us(f.traced), us(sum))
	return b.String()
}

func us(d time.Duration) string { return fmt.Sprintf("%dµs", d.Microseconds()) }
