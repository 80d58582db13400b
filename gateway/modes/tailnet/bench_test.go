package tailnet_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// BenchmarkRoads measures a 1 KiB read and a 1 KiB call through two Deltas
// over the tailnet road and over the lan road (pinned TLS, tickets), next
// to the same request sent straight to the owner app, in one run.
func BenchmarkRoads(b *testing.B) {
	l := newLab(b)
	laptop := l.start("laptop", "127.0.0.2", nodeOpt{})
	studio := l.start("studio", "127.0.0.3", nodeOpt{})
	l.sameUser(laptop, studio)
	waitPeer(b, laptop, studio)
	kib := bytes.Repeat([]byte("r"), 1024)
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write(kib)
	}))
	b.Cleanup(owner.Close)
	studio.register(b, "bench", owner.URL)
	waitRoadUp(b, laptop, studio, "lan")

	pooled := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var n atomic.Int64
	do := func(b *testing.B, c *http.Client, method, url, road string) {
		var body io.Reader
		if method == "POST" {
			body = bytes.NewReader(kib)
		}
		req, _ := http.NewRequest(method, url, body)
		if road != "" {
			req.Header.Set("Authorization", "Bearer "+laptop.c.Token)
			req.Header.Set("X-Delta-Route", road)
			req.Header.Set("X-Delta-Request-Id", fmt.Sprintf("bench-%d", n.Add(1)))
			req.Header.Set("Cache-Control", "no-cache")
		}
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(got) != 1024 || (road != "" && resp.Header.Get("X-Delta-Route") != road) {
			b.Fatalf("%s %s via %s: %d, route %q: %.300s", method, url, road, resp.StatusCode, resp.Header.Get("X-Delta-Route"), got)
		}
	}
	b.Run("read/direct", func(b *testing.B) {
		for b.Loop() {
			do(b, pooled, "GET", owner.URL+"/r", "")
		}
	})
	for _, road := range []string{"lan", "tailnet"} {
		b.Run("read/"+road, func(b *testing.B) {
			for b.Loop() {
				do(b, pooled, "GET", laptop.c.URL+"/v1/peers/studio/bench/r", road)
			}
		})
	}
	b.Run("call/direct", func(b *testing.B) {
		for b.Loop() {
			do(b, fresh, "POST", owner.URL+"/c", "")
		}
	})
	for _, road := range []string{"lan", "tailnet"} {
		b.Run("call/"+road, func(b *testing.B) {
			for b.Loop() {
				do(b, fresh, "POST", laptop.c.URL+"/v1/peers/studio/bench/c", road)
			}
		})
	}
}
