package tailnet_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/ui"
)

// BenchmarkPeers: one person's computers on a tailnet, home and 1, 10 or 50
// peers, each a Delta with its lan road on an address of its own. Once home
// has found every peer and its lan road to each is up, it measures for a
// window (DELTA_BENCH_PEERS_WINDOW, 10 min: hellos are fetched every 5 min and
// tickets renewed every 8) what home sends only to keep the
// roads known (probes, hellos, tickets: requests and bytes a minute), and
// the CPU each node uses, and the time to redraw home's menu (the snapshot
// and the menu built from it).
// DELTA_BENCH_PEERS lists other sizes.
func BenchmarkPeers(b *testing.B) {
	sizes := []int{1, 10, 50}
	if v := os.Getenv("DELTA_BENCH_PEERS"); v != "" {
		sizes = nil
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 || n > 200 {
				b.Fatalf("DELTA_BENCH_PEERS=%q: each size must be 1-200", v)
			}
			sizes = append(sizes, n)
		}
	}
	window := 10 * time.Minute
	if v := os.Getenv("DELTA_BENCH_PEERS_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			b.Fatalf("DELTA_BENCH_PEERS_WINDOW=%q: a duration of at least 1s", v)
		}
		window = d
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("peers=%d", n), func(b *testing.B) {
			l := newLab(b)
			home := l.start("home", "127.0.0.2", nodeOpt{})
			nodes := []*tnode{home}
			for i := range n {
				nodes = append(nodes, l.start(fmt.Sprintf("peer%02d", i+1), fmt.Sprintf("127.0.1.%d", i+1), nodeOpt{}))
			}
			l.sameUser(nodes...)
			for _, p := range nodes[1:] {
				waitPeer(b, home, p)
			}
			gatewaytest.WaitFor(b, 2*time.Minute, fmt.Sprintf("home's lan road up to all %d peers", n), func() bool {
				up := 0
				for _, p := range home.n.Peers() {
					for _, r := range p.Roads {
						if r.Road == string(roads.LAN) && r.State == localapi.RoadUp {
							up++
						}
					}
				}
				return up == n
			})
			before := home.n.RouteCounters().Upkeep
			cpu0 := cpuTime(b)
			start := time.Now()
			// The measurement is the window itself: traffic over time.
			select {
			case <-time.After(window):
			case <-b.Context().Done():
				return
			}
			after := home.n.RouteCounters().Upkeep
			elapsed := time.Since(start)
			perMin := time.Minute.Seconds() / elapsed.Seconds()
			// Every node runs in this process: its CPU over the window, per node.
			b.ReportMetric(100*(cpuTime(b)-cpu0).Seconds()/elapsed.Seconds()/float64(n+1), "cpu-%/node")
			var bytes float64
			for _, kind := range []string{roads.UpkeepProbe, roads.UpkeepHello, roads.UpkeepTicket} {
				d := after[kind]
				d.Requests -= before[kind].Requests
				d.Bytes -= before[kind].Bytes
				b.ReportMetric(float64(d.Requests)*perMin, kind+"s/min")
				bytes += float64(d.Bytes)
			}
			b.ReportMetric(bytes*perMin/1024, "upkeep-KiB/min")
			b.ReportMetric(bytes*perMin/1024/float64(n), "upkeep-KiB/min/peer")

			ctx := context.Background()
			var worst, total time.Duration
			const redraws = 200
			for range redraws {
				t0 := time.Now()
				s, err := home.g.Snapshot(ctx)
				if err != nil || len(s.Peers) != n {
					b.Fatalf("snapshot: %d peers, %v", len(s.Peers), err)
				}
				ui.Build(s, time.Now())
				d := time.Since(t0)
				total += d
				worst = max(worst, d)
			}
			b.ReportMetric(float64(total.Microseconds())/redraws/1000, "redraw-ms")
			b.ReportMetric(float64(worst.Microseconds())/1000, "redraw-worst-ms")
		})
	}
}

// cpuTime is the CPU this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
