package main

import (
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		done, total int64
		took        time.Duration
		want        string
	}{
		{12 << 20, 100 << 20, 2 * time.Second, "get  12.0 MiB of 100.0 MiB [##------------------]  12 %  6.0 MiB/s "},
		{100 << 20, 100 << 20, 4 * time.Second, "get  100.0 MiB of 100.0 MiB [####################] 100 %  25.0 MiB/s "},
		{3 << 30, -1, 10 * time.Second, "get  3.0 GiB  307.2 MiB/s "},
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
