package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/ui"
)

// BenchmarkRead1KiB and BenchmarkCall1KiB measure a 1 KiB request through
// two Deltas (laptop → studio → owner app) next to the same request sent
// straight to the owner app, in the same run. Compare the sub-benchmarks as
// ratios; see docs/benchmarks.md.
func BenchmarkRead1KiB(b *testing.B) {
	laptop, studio, owner := benchPair(b)
	pooled := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.Run("direct", func(b *testing.B) {
		defer goroutinesPerOp(b)()
		for b.Loop() {
			get(b, pooled, owner.URL+"/r", "")
		}
	})
	b.Run("two-deltas", func(b *testing.B) {
		defer goroutinesPerOp(b)()
		for b.Loop() {
			get(b, pooled, laptop.c.URL+"/v1/peers/studio/bench/r", laptop.c.Token)
		}
	})
	// 16 readers at once, as make bench's c=16 cell.
	b.Run("two-deltas-c16", func(b *testing.B) {
		b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				get(b, pooled, laptop.c.URL+"/v1/peers/studio/bench/r", laptop.c.Token)
			}
		})
	})
	_ = studio
}

func BenchmarkCall1KiB(b *testing.B) {
	laptop, _, owner := benchPair(b)
	body := bytes.Repeat([]byte("c"), 1024)
	// A call uses a new connection on every hop, so the baseline does too;
	// "direct-pooled" shows what connection reuse alone is worth.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	pooled := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var n atomic.Int64
	b.Run("direct-pooled", func(b *testing.B) {
		for b.Loop() {
			post(b, pooled, owner.URL+"/c", "", "", body)
		}
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			post(b, fresh, owner.URL+"/c", "", "", body)
		}
	})
	b.Run("two-deltas", func(b *testing.B) {
		for b.Loop() {
			post(b, fresh, laptop.c.URL+"/v1/peers/studio/bench/c", laptop.c.Token, fmt.Sprintf("bench-%d", n.Add(1)), body)
		}
	})
	// 16 callers at once, as make bench's c=16 cell: concurrent calls
	// share the journals' fsyncs (group commit).
	b.Run("two-deltas-c16", func(b *testing.B) {
		b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				post(b, fresh, laptop.c.URL+"/v1/peers/studio/bench/c", laptop.c.Token, fmt.Sprintf("bench-%d", n.Add(1)), body)
			}
		})
	})
}

func benchPair(b *testing.B) (laptop, studio *node, owner *httptest.Server) {
	kib := bytes.Repeat([]byte("r"), 1024)
	owner = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(kib)
	}))
	b.Cleanup(owner.Close)
	laptop, studio = pair(b, func(n *node) { n.cfg.Logger = nil })
	studio.register(b, "bench", owner.URL)
	return laptop, studio, owner
}

// goroutinesPerOp reports the goroutines started in the process (client,
// both Deltas, the owner app) a request, as goroutines/op: call it before
// the loop and the function it returns after.
func goroutinesPerOp(b *testing.B) func() {
	created := func() uint64 {
		s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	start := created()
	return func() { b.ReportMetric(float64(created()-start)/float64(b.N), "goroutines/op") }
}

func get(b *testing.B, c *http.Client, url, token string) {
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	do(b, c, req)
}

func post(b *testing.B, c *http.Client, url, token, id string, body []byte) {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Delta-Request-Id", id)
	}
	do(b, c, req)
}

func do(b *testing.B, c *http.Client, req *http.Request) {
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || n != 1024 {
		b.Fatalf("%s: %d with %d bytes", req.URL, resp.StatusCode, n)
	}
}

// BenchmarkMenu measures what one redraw of the menu costs (a snapshot of
// the gateway and ui.Build) and one status page, with 10 unsettled writes
// and 20 recent calls, next to GET /v1/status in the same run.
func BenchmarkMenu(b *testing.B) {
	laptop, _ := pair(b, func(n *node) { n.cfg.Backoff = []time.Duration{time.Hour} })
	db := laptop.g.Journal()
	ctx := context.Background()
	for i := range 20 {
		id := fmt.Sprintf("bench-%02d", i)
		db.Calls().Begin(ctx, &record.Call{RequestID: id, Peer: "studio", App: "notes", CallerApp: "editor", Method: "POST", Path: "/notes/" + id, Digest: id})
		to := record.Answered
		if i%2 == 0 {
			to = record.Unknown
		}
		db.Calls().Move(ctx, id, journal.Transition{From: []record.CallState{record.Sending}, To: to, OwnerState: "running", NextAsk: time.Now().Add(time.Hour)})
	}
	pooled := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	fetch := func(b *testing.B, path string, auth func(*http.Request)) {
		req, _ := http.NewRequest("GET", laptop.c.URL+path, nil)
		auth(req)
		r, err := pooled.Do(req)
		if err != nil || r.StatusCode != 200 {
			b.Fatalf("GET %s: %v %v", path, r, err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	b.Run("status-json", func(b *testing.B) {
		for b.Loop() {
			fetch(b, "/v1/status", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+laptop.c.Token) })
		}
	})
	b.Run("menu", func(b *testing.B) {
		for b.Loop() {
			s, err := laptop.g.Snapshot(ctx)
			if err != nil || len(s.Unsettled) != 10 {
				b.Fatalf("snapshot: %d unsettled, %v", len(s.Unsettled), err)
			}
			ui.Build(s, time.Now())
		}
	})
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(laptop.g.LoginLink())
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	cookie, page := resp.Cookies()[0], resp.Header.Get("Location")
	b.Run("status-page", func(b *testing.B) {
		for b.Loop() {
			fetch(b, page, func(r *http.Request) { r.AddCookie(cookie) })
		}
	})
}
