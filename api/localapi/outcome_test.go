package localapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// The guarantee crosses the wire as fields, and reads back as written.
func TestGuaranteeFields(t *testing.T) {
	for _, g := range []Guarantee{NoGuarantee, NotCarried, NothingSent} {
		b, _ := json.Marshal(ErrorBody{Error: "x", Detail: "y"}.With(g))
		var back ErrorBody
		json.Unmarshal(b, &back)
		if back.Guarantee() != g {
			t.Errorf("%d: %s reads back as %d", g, b, back.Guarantee())
		}
		if g == NothingSent && !strings.Contains(string(b), `"sent":false`) || g != NoGuarantee && !strings.Contains(string(b), `"carried_out":false`) {
			t.Errorf("%d: %s", g, b)
		}
	}
}
