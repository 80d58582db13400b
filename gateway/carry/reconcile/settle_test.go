package reconcile

import (
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// TestSettle: the reconciler's rules (DESIGN §4) as one table.
func TestSettle(t *testing.T) {
	const d = "d1"
	day := 24 * time.Hour
	for _, tc := range []struct {
		name   string
		digest string // the caller's
		age    time.Duration
		st     proto.CallStateJSON
		to     record.CallState // "" asks again
	}{
		{"answered, same digest", d, time.Minute, proto.CallStateJSON{State: "answered", Digest: d}, record.CarriedOut},
		{"answered, another digest", d, time.Minute, proto.CallStateJSON{State: "answered", Digest: "d2"}, record.NotCarriedOut},
		{"answered, the caller's digest never known (a streamed body)", "", time.Minute, proto.CallStateJSON{State: "answered", Digest: "d2"}, record.CarriedOut},
		{"never arrived", d, time.Minute, proto.CallStateJSON{State: "never_arrived"}, record.NotCarriedOut},
		{"never arrived, a streamed body", "", time.Minute, proto.CallStateJSON{State: "never_arrived"}, record.NotCarriedOut},
		{"not carried out (a cut upload: no digest)", "", time.Minute, proto.CallStateJSON{State: "not_carried_out"}, record.NotCarriedOut},
		{"not carried out", d, time.Minute, proto.CallStateJSON{State: "not_carried_out", Digest: d}, record.NotCarriedOut},
		{"not carried out, but 90 days old", d, 90 * day, proto.CallStateJSON{State: "not_carried_out", Digest: d}, record.NeedsPerson},
		{"running", d, time.Minute, proto.CallStateJSON{State: "running", Digest: d}, ""},
		{"running, its body still arriving", d, time.Minute, proto.CallStateJSON{State: "running"}, ""},
		{"interrupted", d, time.Minute, proto.CallStateJSON{State: "interrupted", Digest: d}, record.NeedsPerson},
		{"app unknown", d, time.Minute, proto.CallStateJSON{State: "app_unknown", Digest: d}, record.NeedsPerson},
		{"expired", d, time.Minute, proto.CallStateJSON{State: "expired"}, record.NeedsPerson},
		{"a state Delta does not know", d, time.Minute, proto.CallStateJSON{State: "weird"}, ""},
	} {
		v := Settle("studio", tc.digest, tc.age, &tc.st)
		if v.To != tc.to || v.Detail == "" {
			t.Errorf("%s: %q (%s), want %q", tc.name, v.To, v.Detail, tc.to)
		}
	}
}
