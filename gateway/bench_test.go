package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// BenchmarkRead1KiB and BenchmarkCall1KiB measure a 1 KiB request through
// two Deltas (laptop → studio → owner app) next to the same request sent
// straight to the owner app, in the same run. Compare the sub-benchmarks as
// ratios; see docs/benchmarks.md.
func BenchmarkRead1KiB(b *testing.B) {
	laptop, studio, owner := benchPair(b)
	pooled := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			get(b, pooled, owner.URL+"/r", "")
		}
	})
	b.Run("two-deltas", func(b *testing.B) {
		for b.Loop() {
			get(b, pooled, laptop.c.URL+"/v1/peers/studio/bench/r", laptop.c.Token)
		}
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
