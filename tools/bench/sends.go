package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// The write patterns of real owner apps (gatewaytest.SendsApp's /s/N).
// Go's net/http answers a small read in one send; Python's http.server at
// HTTP/1.1 (and many small servers) writes the head, then the body, with
// Nagle's algorithm on; some write the body in pieces too. On a kept-alive
// connection the second send waits for the first one's acknowledgement,
// which a receiver with delayed acknowledgements holds back for up to
// 40 ms (Linux).
var sendPatterns = []int{1, 2, 3}

// sendsFigure is one target's reads of one write pattern.
type sendsFigure struct {
	target string
	sends  int
	c      cell
}

// freshDirect names the baseline: straight to the app, a new connection
// a read.
const freshDirect = "direct, a new connection a read"

// sendsTargets are the ways to the sends app: direct on a fresh
// connection a read (the goal's baseline), direct kept alive (what a
// client pays when it reuses its connection, as Delta does), and each
// Delta target, whose owner Delta keeps its connections to the app.
func sendsTargets(targets []target, appAddr string) []target {
	fresh := target{name: freshDirect, role: roleDirect, readURL: "http://" + appAddr, headers: []string{"Connection: close"}}
	kept := target{name: "direct, kept alive", role: roleDirect, readURL: "http://" + appAddr}
	out := []target{fresh, kept}
	for _, t := range targets {
		if t.role.delta() {
			t.readURL = strings.TrimSuffix(t.readURL, "/bench") + "/sends"
			out = append(out, t)
		}
	}
	return out
}

// measureSends reads /s/N through each target with one connection.
func measureSends(ctx context.Context, root string, targets []target) ([]sendsFigure, error) {
	var out []sendsFigure
	for _, n := range sendPatterns {
		for _, tg := range targets {
			r, err := wrk(ctx, root, tg, fmt.Sprintf("%s/s/%d", tg.readURL, n), 1, false)
			if err != nil {
				return nil, fmt.Errorf("sends %d through %s: %w", n, tg.name, err)
			}
			fmt.Printf("sends %d %-36s %9.0f/s  p50 %-9s p99 %-9s errors %d\n", n, tg.name, r.rate, r.p50, r.p99, r.errors)
			out = append(out, sendsFigure{target: tg.name, sends: n, c: r})
		}
	}
	return out, nil
}

// sendsReport is the section's table: p50 and reads a second per pattern,
// and each target's p50 over the fresh direct connection's.
func sendsReport(b *strings.Builder, figs []sendsFigure) {
	if len(figs) == 0 {
		return
	}
	var names []string
	seen := map[string]bool{}
	base := map[int]time.Duration{}
	for _, f := range figs {
		if !seen[f.target] {
			seen[f.target] = true
			names = append(names, f.target)
		}
		if f.target == freshDirect {
			base[f.sends] = f.c.p50
		}
	}
	fmt.Fprintf(b, "### An owner app that answers in several sends (1 KiB, Nagle on, one connection; p50, and reads a second)\n\n")
	fmt.Fprintf(b, "The app writes its head, then its body (in one or two pieces), as Python's `http.server` at HTTP/1.1 does. The goal: through two Deltas within 5 ms of a fresh direct connection, whatever the pattern; the last column is each p50 minus that connection's.\n\n")
	fmt.Fprintf(b, "| through | 1 send | 2 sends | 3 sends | p50 over a new direct connection (1 / 2 / 3 sends) |\n|---|---|---|---|---|\n")
	for _, name := range names {
		row := "| " + name
		var over []string
		for _, n := range sendPatterns {
			for _, f := range figs {
				if f.target == name && f.sends == n {
					row += fmt.Sprintf(" | %s (%s/s)", dur(f.c.p50), rate(f.c.rate))
					over = append(over, signed(f.c.p50-base[n]))
				}
			}
		}
		if name == freshDirect {
			over = []string{"— (the baseline)"}
		}
		fmt.Fprintf(b, "%s | %s |\n", row, strings.Join(over, " / "))
	}
}

// signed is d rounded as dur rounds, with its sign.
func signed(d time.Duration) string {
	if d < 0 {
		return "−" + dur(-d)
	}
	return "+" + dur(d)
}
