package gateway_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
)

func reconcilerAsks(t *testing.T, n *node) int {
	t.Helper()
	var st struct {
		Counters struct{ Counters map[string]int }
	}
	json.Unmarshal(n.c.Must(t, "GET", "/v1/status", nil).Body, &st)
	return st.Counters.Counters["reconciler_asks"]
}

// TestPersonSettles, end to end through two Deltas: the owner app resets
// after reading → needs_person; the caller's record shows what was sent;
// the owner's receipts list the call as app_unknown; a person settles it;
// a waiting ?wait= returns the settlement; and for an unknown call, the
// reconciler stops asking once a person settled it.
func TestPersonSettles(t *testing.T) {
	laptop, studio := pair(t, nil)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)

	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/reset-after-read/rent", []byte(`{"text":"pay the rent"}`),
		"X-Delta-Request-Id", "person-1", "Content-Type", "application/json", "Authorization", "Bearer "+laptop.g.Token())
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	c := laptop.c.GetCall(t, "person-1", 10)
	if c.State != "needs_person" {
		t.Fatalf("state %s, want needs_person", c.State)
	}
	var rec struct {
		Request struct {
			Headers    map[string][]string
			BodyBase64 string `json:"body_base64"`
			Size       int
			Truncated  bool
		}
	}
	json.Unmarshal(laptop.c.Must(t, "GET", "/v1/calls/person-1", nil).Body, &rec)
	body, _ := base64.StdEncoding.DecodeString(rec.Request.BodyBase64)
	if string(body) != `{"text":"pay the rent"}` || rec.Request.Headers["Content-Type"][0] != "application/json" || rec.Request.Headers["X-Delta-Request-Id"][0] != "person-1" {
		t.Fatalf("the record's request: %+v", rec.Request)
	}
	if _, leaked := rec.Request.Headers["Authorization"]; leaked {
		t.Fatal("the kept headers hold the app's Authorization")
	}
	rr := studio.c.Must(t, "GET", "/v1/receipts?state=app_unknown", nil)
	if !strings.Contains(string(rr.Body), `"request_id": "person-1"`) || !strings.Contains(string(rr.Body), `"caller": "laptop"`) {
		t.Fatalf("studio's receipts: %s", rr.Body)
	}
	if rr := studio.c.Must(t, "GET", "/v1/receipts?state=bogus", nil); rr.Status != 400 {
		t.Fatalf("a bad receipt state: %d", rr.Status)
	}

	for _, bad := range []string{`{}`, `{"state": "answered"}`, `{"state": "carried_out", "extra": 1}`,
		`{"state": "not_carried_out", "state": "carried_out"}`, `{"state": "carried_out"} {}`} { // a key twice: the last would have won
		if r := laptop.c.Must(t, "POST", "/v1/calls/person-1/settle", []byte(bad)); r.Status != 400 {
			t.Errorf("settle %s: %d", bad, r.Status)
		}
	}
	r = laptop.c.Must(t, "POST", "/v1/calls/person-1/settle", []byte(`{"state": "carried_out", "note": "it is in the notes app"}`))
	if r.Status != 200 || !strings.Contains(string(r.Body), `"state": "carried_out"`) || !strings.Contains(string(r.Body), `"settled_by": "a person"`) {
		t.Fatalf("settle: %d %s", r.Status, r.Body)
	}
	if r := laptop.c.Must(t, "POST", "/v1/calls/person-1/settle", []byte(`{"state": "not_carried_out"}`)); r.Status != 409 || r.Outcome() != "conflict" {
		t.Fatalf("settling a settled call: %d %s", r.Status, r.Body)
	}

	// An unknown call (the app still holds it), with an app waiting on it.
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/hold/h", []byte("x"), "X-Delta-Request-Id", "person-2", "X-Delta-Timeout", "0.3")
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	gatewaytest.WaitFor(t, 10*time.Second, "the reconciler to ask about person-2", func() bool { return laptop.c.GetCall(t, "person-2", 0).Asks > 0 })
	waited := make(chan *localapi.Call, 1)
	go func() { waited <- laptop.c.GetCall(t, "person-2", 30) }()
	if r := laptop.c.Must(t, "POST", "/v1/calls/person-2/settle", []byte(`{"state": "not_carried_out", "note": "cancelled it by hand"}`)); r.Status != 200 {
		t.Fatalf("settle an unknown call: %d %s", r.Status, r.Body)
	}
	if w := <-waited; w.State != "not_carried_out" {
		t.Fatalf("?wait= returned %s", w.State)
	}
	asks := reconcilerAsks(t, laptop)
	// Three backoff periods (200, 300, 500 ms) with no ask is what
	// "stopped" means here: the absence of an event takes a window.
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if n := reconcilerAsks(t, laptop); n != asks {
			t.Fatalf("the reconciler asked again after a person settled (%d → %d)", asks, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	app.Release("/hold/h")
	if r := laptop.c.Must(t, "POST", "/v1/calls/person-2/ask", nil); r.Status != 409 {
		t.Fatalf("Ask now on a settled call: %d %s", r.Status, r.Body)
	}
}
