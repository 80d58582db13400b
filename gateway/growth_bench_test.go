package gateway_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/ui"
)

// BenchmarkJournalGrowth: the menu's snapshot, GET /v1/status, the status
// page and the retention sweep with 10k, 100k and 1M calls in the caller's
// journal (100 of them unsettled, spread over 100 days, so that the first
// sweep removes a tenth), and the journal's size on disk. A busy person
// makes about 90 days of calls. DELTA_BENCH_GROWTH lists other sizes.
func BenchmarkJournalGrowth(b *testing.B) {
	sizes := []int{10_000, 100_000, 1_000_000}
	if v := os.Getenv("DELTA_BENCH_GROWTH"); v != "" {
		sizes = nil
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				b.Fatalf("DELTA_BENCH_GROWTH=%q: %v", v, err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			laptop, _ := pair(b, func(n *node) { n.cfg.Backoff = []time.Duration{time.Hour} })
			path := filepath.Join(laptop.dir, "delta.db")
			fill(b, path, n)
			ctx := context.Background()
			b.Run("menu-snapshot", func(b *testing.B) {
				for b.Loop() {
					s, err := laptop.g.Snapshot(ctx)
					if err != nil || len(s.Unsettled) != 100 {
						b.Fatalf("snapshot: %d unsettled, %v", len(s.Unsettled), err)
					}
					ui.Build(s, time.Now())
				}
			})
			b.Run("status-json", func(b *testing.B) {
				for b.Loop() {
					if r := laptop.c.Must(b, "GET", "/v1/status", nil); r.Status != 200 {
						b.Fatalf("status: %d", r.Status)
					}
				}
			})
			b.Run("unsettled-list", func(b *testing.B) {
				for b.Loop() {
					if r := laptop.c.Must(b, "GET", "/v1/calls?state=unsettled", nil); r.Status != 200 {
						b.Fatalf("calls: %d", r.Status)
					}
				}
			})
			start := time.Now()
			res, err := laptop.g.Journal().Receipts().Sweep(ctx, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			first := time.Since(start)
			b.Run("sweep", func(b *testing.B) { // what the hourly sweep costs once the old ones are gone
				for b.Loop() {
					if _, err := laptop.g.Journal().Receipts().Sweep(ctx, time.Now()); err != nil {
						b.Fatal(err)
					}
				}
			})
			var size int64
			for _, f := range []string{path, path + "-wal"} {
				if fi, err := os.Stat(f); err == nil {
					size += fi.Size()
				}
			}
			b.Logf("%d calls: %.1f MB on disk; the first sweep took %s and removed %d calls", n, float64(size)/1e6, first.Round(time.Millisecond), res.CallsGone)
		})
	}
}

// fill writes n settled calls (and 100 unknown ones) into the journal at
// path, in one transaction of its own connection, created over 100 days.
func fill(b *testing.B, path string, n int) {
	b.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	st, err := tx.Prepare(`INSERT INTO calls (request_id, peer, app, caller_app, method, path, digest, state, outcome, detail, created_at, updated_at, answer_status, answer_headers, answer_body)
		VALUES (?, 'studio', 'notes', 'editor', 'POST', ?, ?, ?, ?, '', ?, ?, 201, '{}', ?)`)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	span := 100 * 24 * time.Hour
	body := []byte(`{"ok":true,"id":"0123456789"}`)
	for i := range n + 100 {
		state, outcome := "answered", "answered"
		if i >= n {
			state, outcome = "unknown", "outcome_unknown"
		}
		at := now.Add(-time.Duration(float64(span) * float64(n+100-i) / float64(n+100))).UnixNano() // oldest first
		id := fmt.Sprintf("grow-%08d", i)
		if _, err := st.Exec(id, "/notes/"+id, id, state, outcome, at, at, body); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
