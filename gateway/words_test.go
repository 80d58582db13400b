package gateway_test

import (
	"testing"

	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// TestWordsFromTheRecord: what Delta says of a call it did not carry out
// comes from the call's record: "not sent" only where no attempt wrote a
// byte; a call whose body crossed says so, and why its owner did not carry
// it out (issue 36: a call whose body reached an owner whose app was not
// listening was shown "not sent" on the page and by delta show).
func TestWordsFromTheRecord(t *testing.T) {
	dead := gatewaytest.DeadAddr(t)
	laptop, studio := pair(t, func(n *node) {
		if n.name == "laptop" {
			n.peers(map[string]map[string]string{"studio": {"lan": n.otherAddr}, "nowhere": {"lan": dead}})
		}
	})
	studio.register(t, "gone", "http://"+gatewaytest.DeadAddr(t))
	for _, tc := range []struct{ id, peer, app, words, reply string }{
		{"words-gone", "studio", "gone", "sent; not carried out: the app was not listening", "app_unavailable"},
		{"words-nobody", "studio", "nobody", "sent; not carried out: no such app there", "app_not_found"},
		{"words-nowhere", "nowhere", "notes", "not sent", ""},
	} {
		r := laptop.c.Must(t, "POST", "/v1/peers/"+tc.peer+"/"+tc.app+"/x", []byte("a body of "+tc.id), "X-Delta-Request-Id", tc.id)
		if r.Outcome() == "answered" || r.Outcome() == "outcome_unknown" {
			t.Fatalf("%s: %s, want a call not carried out", tc.id, r.Outcome())
		}
		c := laptop.c.GetCall(t, tc.id, 0)
		at := make([]record.Attempt, len(c.Attempts))
		reply := ""
		for i, a := range c.Attempts {
			at[i] = record.Attempt{N: a.N, FirstByte: a.FirstByte, Reply: a.Reply}
			reply = max(reply, a.Reply)
		}
		if got := view.CallWords(record.CallState(c.State), at); got != tc.words || reply != tc.reply {
			t.Errorf("%s (%s, attempts %+v): words %q, reply %q; want %q, %q", tc.id, c.State, c.Attempts, got, reply, tc.words, tc.reply)
		}
	}
}
