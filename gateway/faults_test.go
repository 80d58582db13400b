package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// TestFaultTable runs DESIGN §2's fault table end to end through two
// Deltas: for each way the owner app can behave, the outcome the calling
// app sees, the effects the owner app really applied, and the state the
// call settles in, which must match what the owner did.
func TestFaultTable(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	studio.register(t, "resetter", gatewaytest.ResetListener(t))
	studio.register(t, "gone", "http://"+gatewaytest.DeadAddr(t))

	cases := []struct {
		name     string
		app      string
		path     string
		outcome  string // what the calling app is told
		status   int
		effects  int    // effects the owner applied, once its receipt left running
		receipt  string // the owner's receipt state
		settled  string // the caller's final state
		sendsNot bool   // the detail says nothing was carried out
	}{
		{name: "answers", app: "notes", path: "/answer/1", outcome: "answered", status: 201, effects: 1, receipt: "answered", settled: "answered"},
		{name: "applies then sleeps past the timeout", app: "notes", path: "/apply-then-sleep/1", outcome: "outcome_unknown", status: 502, effects: 1, receipt: "answered", settled: "carried_out"},
		{name: "sleeps past the timeout then applies", app: "notes", path: "/sleep-then-apply/1", outcome: "outcome_unknown", status: 502, effects: 1, receipt: "answered", settled: "carried_out"},
		{name: "reads then resets", app: "notes", path: "/reset-after-read/1", outcome: "outcome_unknown", status: 502, effects: 1, receipt: "app_unknown", settled: "needs_person"},
		{name: "resets before reading", app: "resetter", path: "/x", outcome: "outcome_unknown", status: 502, effects: 0, receipt: "app_unknown", settled: "needs_person"},
		{name: "not listening", app: "gone", path: "/x", outcome: "unavailable", status: 503, effects: 0, receipt: "not_carried_out", settled: "unavailable", sendsNot: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := "fault-" + strings.ReplaceAll(tc.name, " ", "-")
			// 0.5 s is the deadline the slow apps outlast; a call expected
			// to be answered gets 30 s, so that a loaded machine does not
			// turn it into outcome_unknown (issue 36's sweep).
			timeout := "0.5"
			if tc.outcome == "answered" {
				timeout = "30"
			}
			r := laptop.c.Must(t, "POST", "/v1/peers/studio/"+tc.app+tc.path, []byte("body of "+id),
				"X-Delta-Request-Id", id, "X-Delta-Timeout", timeout, "X-Delta-App", "faults")
			if r.Outcome() != tc.outcome || r.Status != tc.status {
				t.Fatalf("outcome %q %d, want %q %d; body %s", r.Outcome(), r.Status, tc.outcome, tc.status, r.Body)
			}
			if r.Header.Get("X-Delta-Request-Id") != id || r.Header.Get("X-Delta-Route") != "lan" {
				t.Errorf("request id %q, route %q", r.Header.Get("X-Delta-Request-Id"), r.Header.Get("X-Delta-Route"))
			}
			if tc.outcome == "answered" {
				if string(r.Body) != "body of "+id || r.Header.Get("X-App") != "owner" {
					t.Errorf("answer %q with X-App %q; want the owner app's own", r.Body, r.Header.Get("X-App"))
				}
			} else if !strings.Contains(r.Err.Detail, "studio") {
				t.Errorf("detail %q does not name the peer", r.Err.Detail)
			}
			if tc.sendsNot && !strings.Contains(r.Err.Detail, "nothing was carried out") {
				t.Errorf("detail %q does not say nothing was carried out", r.Err.Detail)
			}
			if strings.Contains(tc.path, "sleep") {
				app.Release(tc.path) // past the caller's deadline: let the app finish
			}
			rec := studio.waitReceiptDone(t, "node-laptop", id)
			if string(rec.State) != tc.receipt {
				t.Errorf("owner's receipt is %s, want %s", rec.State, tc.receipt)
			}
			if got := app.Effects(tc.path); got != tc.effects {
				t.Errorf("owner applied %d effects, want %d", got, tc.effects)
			}
			call := laptop.c.GetCall(t, id, 30)
			if call.State != tc.settled {
				t.Fatalf("call settled %s (%s), want %s", call.State, call.Detail, tc.settled)
			}
			if tc.settled == "carried_out" {
				if call.Answer == nil || call.Answer.Status != 201 || call.OwnerState != "answered" {
					t.Errorf("carried_out call has answer %+v, owner state %q", call.Answer, call.OwnerState)
				}
			}
			// A repeat of the same request gets the recorded outcome and is
			// never sent again.
			before := app.RequestsFor(id)
			again := laptop.c.Must(t, "POST", "/v1/peers/studio/"+tc.app+tc.path, []byte("body of "+id),
				"X-Delta-Request-Id", id, "X-Delta-Timeout", "0.5")
			wantAgain := map[string]string{"answered": "answered", "carried_out": "answered", "needs_person": "outcome_unknown", "unavailable": "unavailable"}[tc.settled]
			if again.Outcome() != wantAgain {
				t.Errorf("repeat: outcome %q, want %q (%s)", again.Outcome(), wantAgain, again.Body)
			}
			if wantAgain == "answered" && again.Header.Get("X-Delta-Replayed") != "true" {
				t.Errorf("repeat of an answered call is not marked X-Delta-Replayed")
			}
			if app.RequestsFor(id) != before {
				t.Errorf("a repeat reached the owner app")
			}
		})
	}
}

// TestOwnerForwardsOnce checks what the owner app receives: the request
// once, with Delta's headers and none of the caller's credentials.
func TestOwnerForwardsOnce(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	secret := studio.register(t, "notes", app.URL)
	r := laptop.c.Must(t, "PUT", "/v1/peers/studio/notes/answer/a%2Fb?q=1&r=%20", []byte("x"),
		"X-Delta-Request-Id", "hdr-1", "X-Delta-App", "editor", "X-Delta-Forwarded-Evil", "1", "Cookie", "c=1", "Idempotency-Key", "k")
	if r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	seen := app.Seen()
	if len(seen) != 1 {
		t.Fatalf("owner app saw %d requests, want 1", len(seen))
	}
	got := seen[0]
	want := map[string]string{
		"X-Delta-Request-Id": "hdr-1", "X-Delta-Caller": "laptop", "X-Delta-App": "editor",
		"X-Delta-Forward-Secret": secret, "X-Delta-Forwarded-Evil": "", "Cookie": "", "Authorization": "",
		"Idempotency-Key": "k",
	}
	for k, v := range want {
		if got.Header.Get(k) != v {
			t.Errorf("owner app got %s: %q, want %q", k, got.Header.Get(k), v)
		}
	}
	if got.Header.Get("X-Delta-Timeout") == "" {
		t.Errorf("owner app got no X-Delta-Timeout")
	}
	if got.URL.RequestURI() != "/answer/a%2Fb?q=1&r=%20" {
		t.Errorf("owner app got %s", got.URL.RequestURI())
	}
	if r.Header.Get("X-Delta-Outcome") != "answered" || r.Header.Get("X-App") != "owner" {
		t.Errorf("the app's X-Delta-Outcome was not replaced: %v", r.Header)
	}
	if fmt.Sprint(r.Header.Values("X-Delta-Outcome")) != "[answered]" {
		t.Errorf("X-Delta-Outcome %v", r.Header.Values("X-Delta-Outcome"))
	}
}
