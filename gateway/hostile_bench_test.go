package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// hostileApp answers /bighead with a 16 MiB header line, and /idle with a
// 101 and then nothing, until its connection closes.
func hostileApp(b *testing.B) *httptest.Server {
	big := bytes.Repeat([]byte("a"), 16<<20) // once: the app's own cost is not the Deltas'
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		switch r.URL.Path {
		case "/bighead":
			c.Write([]byte("HTTP/1.1 200 OK\r\nX-Big: "))
			c.Write(big)
			c.Write([]byte("\r\nContent-Length: 0\r\n\r\n"))
		case "/idle":
			fmt.Fprintf(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\nConnection: Upgrade\r\n\r\n", r.Header.Get("Upgrade"))
			brw.ReadByte() // until the session ends
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkBigHead measures what a read of an owner app's answer with a
// 16 MiB head costs both Deltas (one process here): allocated bytes per
// read (-benchmem), now that a head is bounded (proto.MaxHeadBytes, issue
// 34 A4; before, the whole head was read and relayed).
func BenchmarkBigHead(b *testing.B) {
	laptop, studio := pair(b, nil)
	studio.register(b, "hostile", hostileApp(b).URL)
	b.ReportAllocs()
	for b.Loop() {
		if r := laptop.c.Must(b, "GET", "/v1/peers/studio/hostile/bighead", nil); r.Status != 502 {
			b.Fatalf("a 16 MiB head: %d %s", r.Status, r.Body)
		}
	}
}

// BenchmarkIdleSessions opens 200 idle sessions through two Deltas (one
// process here: both ends) and reports what each holds once they are up:
// heap and stacks in bytes, and goroutines (issue 34 A9: an idle session
// holds 512 bytes each way, not a 32 KiB copy buffer).
func BenchmarkIdleSessions(b *testing.B) {
	const n = 200
	laptop, studio := pair(b, nil)
	studio.register(b, "hostile", hostileApp(b).URL)
	local := strings.TrimPrefix(laptop.c.URL, "http://")
	measure := func() (uint64, int) {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse + m.StackInuse, runtime.NumGoroutine()
	}
	for b.Loop() {
		before, g0 := measure()
		conns := make([]net.Conn, 0, n)
		for range n {
			c, err := net.Dial("tcp", local)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(c, "GET /v1/peers/studio/hostile/idle HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: idle\r\n\r\n", local, laptop.g.Token())
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 101 {
				b.Fatalf("a session: %v %v", resp, err)
			}
			conns = append(conns, c)
		}
		after, g1 := measure()
		b.ReportMetric(float64(after-before)/n, "bytes/session")
		b.ReportMetric(float64(g1-g0)/n, "goroutines/session")
		for _, c := range conns {
			c.Close()
		}
	}
}
