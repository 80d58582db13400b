package steplog

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSteps: the steps are read from log lines as Delta's logger writes
// them (slog's text handler, a step with a space quoted), only for the
// calls asked about, and each step to the next is given at its median,
// in the order most calls met them.
func TestSteps(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines func(*slog.Logger)) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		lines(slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug})))
		return p
	}
	step := func(l *slog.Logger, rid, side, step string, at int64) {
		l.Debug("call step", "request_id", rid, "side", side, "step", step, "t_us", at)
	}
	// Three calls: caller arrived, owner handed, caller answered; the
	// second's owner step logged late (another order), one call of
	// another run.
	caller := write("laptop.out", func(l *slog.Logger) {
		l.Info("delta started", "name", "laptop")
		for i, base := range []int64{1000, 5000, 9000} {
			rid := "run-" + string(rune('a'+i))
			step(l, rid, "caller", "arrived", base)
			step(l, rid, "caller", "answered", base+int64(100*(i+1)))
		}
		step(l, "other-x", "caller", "arrived", 1)
	})
	owner := write("studio.out", func(l *slog.Logger) {
		step(l, "run-a", "owner", "app answered", 1040)
		step(l, "run-b", "owner", "app answered", 5150)
		step(l, "run-c", "owner", "app answered", 9500) // after the caller's end
	})
	events, err := Read([]string{caller, owner}, "run-")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 || !Complete(events) {
		t.Fatalf("read %d calls (complete %v): %v", len(events), Complete(events), events)
	}
	steps, whole := Steps(events)
	want := []Step{
		{"caller: arrived", "owner: app answered", 150 * time.Microsecond},
		{"owner: app answered", "caller: answered", 60 * time.Microsecond},
	}
	if len(steps) != len(want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	for i := range want {
		if steps[i] != want[i] {
			t.Errorf("step %d: %v, want %v", i, steps[i], want[i])
		}
	}
	if whole != 200*time.Microsecond {
		t.Errorf("the whole: %v, want the median of 100, 200 and 500 µs", whole)
	}
}
