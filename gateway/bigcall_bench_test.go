package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
)

// BenchmarkBigCall is a big call (256 MiB, each on a new connection)
// through two Deltas in this process, beside the same body posted
// straight to the owner app, as MB/s: the owner's Delta spools and sums
// the whole body before its app sees any of it (DESIGN §2a), so a call is
// two passes where the direct post is one. It is the big call the macOS
// workflow runs, so that a Mac's first run records what its disk and its
// SHA-256 make of the spool; make bench runs it too, and measures the
// 1 GiB call between two Delta processes beside nginx (docs/benchmarks.md).
func BenchmarkBigCall(b *testing.B) {
	laptop, _, owner := benchPair(b)
	const size = 256 << 20
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var n atomic.Int64
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			postBig(b, fresh, owner.URL+"/c", "", "", size)
		}
	})
	b.Run("two-deltas", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			postBig(b, fresh, laptop.c.URL+"/v1/peers/studio/bench/c", laptop.c.Token, fmt.Sprintf("big-%d", n.Add(1)), size)
		}
	})
}

func postBig(b *testing.B, c *http.Client, url, token, id string, size int64) {
	req, _ := http.NewRequest("POST", url, io.LimitReader(zeros{}, size))
	req.ContentLength = size
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Delta-Request-Id", id)
	}
	do(b, c, req)
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
