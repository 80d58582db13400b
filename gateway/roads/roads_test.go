package roads

import (
	"errors"
	"testing"
	"time"
)

func TestNotYetError(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		after time.Duration
		want  string
	}{
		{40 * time.Millisecond, "no road to beta yet (Delta started 40 ms ago and is finding its roads)"},
		{2500 * time.Millisecond, "no road to beta yet (Delta started 2.5 s ago and is finding its roads)"},
		{5 * time.Minute, "no road to beta yet (Delta started 5 min ago and has not found it on the tailnet since; it may be off or asleep)"},
	} {
		err := error(&NotYetError{Peer: "beta", Started: start, Now: start.Add(c.after)})
		if err.Error() != c.want {
			t.Errorf("after %v: %q, want %q", c.after, err, c.want)
		}
		if !errors.Is(err, ErrNoRoad) {
			t.Errorf("NotYetError does not wrap ErrNoRoad")
		}
	}
}
