package roads

import (
	"errors"
	"strings"
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

// TestUnknownPeer: the words name the peers and the one a typo meant.
func TestUnknownPeer(t *testing.T) {
	for _, tc := range []struct {
		peer  string
		known []string
		want  string
	}{
		{"stdio", []string{"studio", "den"}, `"stdio" is not one of this computer's peers (its peers: den, studio; did you mean studio?)`},
		{"Studio", []string{"studio"}, "did you mean studio?"},
		{"kitchen", []string{"studio", "den"}, `"kitchen" is not one of this computer's peers (its peers: den, studio)`},
		{"x", nil, "(it has none yet)"},
	} {
		if got := UnknownPeer(tc.peer, tc.known); !strings.Contains(got, tc.want) {
			t.Errorf("UnknownPeer(%q, %v) = %q, want %q", tc.peer, tc.known, got, tc.want)
		}
	}
}
