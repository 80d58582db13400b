package kit

import (
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
)

// TestDirectConnectTimeout: a direct read connects within the road's
// timeout as direct.json gives it (Delta's own, from its road facts), and
// within the kit's own road facts for a direct.json that names none (an
// older Delta's).
func TestDirectConnectTimeout(t *testing.T) {
	for _, tc := range []struct {
		rd   localapi.DirectRoad
		want time.Duration
	}{
		{localapi.DirectRoad{Road: "thunderbolt", ConnectTimeoutMS: 2500}, 2500 * time.Millisecond},
		{localapi.DirectRoad{Road: "thunderbolt"}, 2 * time.Second},
		{localapi.DirectRoad{Road: "lan"}, 3 * time.Second},
	} {
		if got := connectTimeout(tc.rd); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.rd, got, tc.want)
		}
	}
}
