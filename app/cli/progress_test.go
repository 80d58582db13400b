package cli

import (
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		done, total int64
		took        time.Duration
		want        string
	}{
		{12 << 20, 100 << 20, 2 * time.Second, "get  12.0 MiB of 100.0 MiB [##------------------]  12 %  6.0 MiB/s  2 s, about 14 s left"},
		{100 << 20, 100 << 20, 4 * time.Second, "get  100.0 MiB of 100.0 MiB [####################] 100 %  25.0 MiB/s  4 s"},
		{3 << 30, -1, 10 * time.Second, "get  3.0 GiB  307.2 MiB/s  10 s"},
	} {
		if got := progressLine("get", tc.done, tc.total, tc.took); got != tc.want {
			t.Errorf("progressLine(%d, %d) = %q, want %q", tc.done, tc.total, got, tc.want)
		}
	}
	// Off a terminal nothing is drawn.
	var buf countWriter
	p := newProgress(&buf, "x")
	p.report(1, 2)
	p.finish()
	if buf != 0 {
		t.Errorf("a bar was drawn on a pipe: %d bytes", buf)
	}
}

// TestCallProgressAtTheEnd: at 100 % a call's bar says that the owner is
// handing the body to its app before it answers (issue 36).
func TestCallProgressAtTheEnd(t *testing.T) {
	var b strings.Builder
	p := &progressBar{w: &b, label: "to studio notes/big", on: true, call: true, start: time.Now().Add(-3 * time.Second)}
	p.report(100, 100)
	p.finish()
	if !strings.Contains(b.String(), "100 %") || !strings.Contains(b.String(), "sent whole: the owner hands it to its app, then answers") {
		t.Errorf("a call's bar at its end: %q", b.String())
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
