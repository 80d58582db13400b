package owner

import (
	"fmt"
	"testing"
	"time"
)

// TestFenceCap: per caller name and in all, per minute; a new minute
// starts every count again.
func TestFenceCapCounts(t *testing.T) {
	var f fenceCap
	now := time.Date(2026, 12, 1, 12, 0, 10, 0, time.UTC)
	n := 0
	for range FencesPerMinute + 10 {
		if f.allow("laptop", now) {
			n++
		}
	}
	if n != FencesPerMinute {
		t.Errorf("one caller: %d fences in a minute, want %d", n, FencesPerMinute)
	}
	all := n
	for i := 0; i < 100; i++ {
		for range FencesPerMinute {
			if f.allow(fmt.Sprintf("name-%d", i), now) {
				all++
			}
		}
	}
	if all != FencesPerMinuteInAll {
		t.Errorf("all callers: %d fences in a minute, want %d", all, FencesPerMinuteInAll)
	}
	if !f.allow("laptop", now.Add(time.Minute)) || len(f.seen) != 1 {
		t.Errorf("a new minute did not start the counts again (%d names remembered)", len(f.seen))
	}
}

// TestRoomWords: a refusal for want of room speaks units a person reads
// and names the reserve (issue 36: raw bytes and a hidden 64 MiB).
func TestRoomWords(t *testing.T) {
	got := roomWords("studio", 100<<20, 500<<20)
	want := "studio has no room for the call's body: its disk has 100.0 MiB free, the body is 500.0 MiB, and Delta keeps 64.0 MiB free for its journal"
	if got != want {
		t.Errorf("roomWords = %q, want %q", got, want)
	}
}
