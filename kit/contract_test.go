package kit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// contractCase is one row of kit/contract/outcomes.json, the table the
// Go, Python and TypeScript kits all read: an answer of Delta's and the
// outcome each kit must make of it.
type contractCase struct {
	Name      string            `json:"name"`
	Kind      string            `json:"kind"`
	RequestID string            `json:"request_id"`
	Status    int               `json:"status"`
	Headers   map[string]string `json:"headers"`
	Body      json.RawMessage   `json:"body"`
	Expect    struct {
		Type           string  `json:"type"`
		Status         int     `json:"status"`
		Outcome        *string `json:"outcome"`
		RequestID      *string `json:"request_id"`
		Peer           *string `json:"peer"`
		Road           *string `json:"road"`
		Replayed       *bool   `json:"replayed"`
		Stale          *bool   `json:"stale"`
		StaleReason    *string `json:"stale_reason"`
		AgeSeconds     *int    `json:"age_seconds"`
		Body           *string `json:"body"`
		DetailContains string  `json:"detail_contains"`
		NothingSent    *bool   `json:"nothing_sent"`
		NotCarriedOut  *bool   `json:"not_carried_out"`
	} `json:"expect"`
}

// bodyBytes is a case's body as Delta sent it: a JSON string is text,
// anything else Delta's JSON.
func (c *contractCase) bodyBytes() []byte {
	var s string
	if json.Unmarshal(c.Body, &s) == nil {
		return []byte(s)
	}
	return c.Body
}

// contractType names the Go kit's outcome in the table's words.
func contractType(err error) string {
	var u *Unavailable
	var unknown *OutcomeUnknown
	var conflict *Conflict
	var bad *BadInput
	switch {
	case err == nil:
		return "answer"
	case errors.As(err, &unknown):
		return "outcome_unknown"
	case errors.As(err, &conflict):
		return "conflict"
	case errors.As(err, &bad):
		return "bad_input"
	case errors.As(err, &u) && u.NothingSent:
		return "nothing_sent"
	case errors.As(err, &u) && u.NotCarriedOut:
		return "not_carried_out"
	case errors.As(err, &u):
		return "unavailable"
	}
	return "other: " + err.Error()
}

// TestContract: every recorded answer of the shared table becomes the
// outcome the table says, with its fields.
func TestContract(t *testing.T) {
	b, err := os.ReadFile("contract/outcomes.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Cases []contractCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatalf("contract/outcomes.json: %v", err)
	}
	if len(table.Cases) < 15 {
		t.Fatalf("the table has %d cases", len(table.Cases))
	}
	for _, c := range table.Cases {
		t.Run(c.Name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.Headers {
				h.Set(k, v)
			}
			body := c.bodyBytes()
			resp := &http.Response{StatusCode: c.Status, Status: http.StatusText(c.Status), Header: h, Body: io.NopCloser(bytes.NewReader(body)),
				ContentLength: int64(len(body)), Request: &http.Request{URL: &url.URL{Host: "127.0.0.1:7420"}}}
			resp.Status = strconv.Itoa(c.Status) + " " + resp.Status
			r, err := streamOrError(resp, c.RequestID, nil)
			e := c.Expect
			if got := contractType(err); got != e.Type {
				t.Fatalf("got %s (%v), the table says %s", got, err, e.Type)
			}
			if err == nil {
				got, rerr := io.ReadAll(r.Body)
				a := r.Answer
				switch {
				case rerr != nil:
					t.Fatal(rerr)
				case a.Status != e.Status:
					t.Errorf("status %d, want %d", a.Status, e.Status)
				case e.Body != nil && string(got) != *e.Body:
					t.Errorf("body %q, want %q", got, *e.Body)
				case e.RequestID != nil && a.RequestID != *e.RequestID:
					t.Errorf("request id %q, want %q", a.RequestID, *e.RequestID)
				case e.Road != nil && a.Road != *e.Road:
					t.Errorf("road %q, want %q", a.Road, *e.Road)
				case e.Replayed != nil && a.Replayed != *e.Replayed:
					t.Errorf("replayed %v, want %v", a.Replayed, *e.Replayed)
				case e.Stale != nil && a.Stale != *e.Stale:
					t.Errorf("stale %v, want %v", a.Stale, *e.Stale)
				case e.StaleReason != nil && a.StaleReason != *e.StaleReason:
					t.Errorf("stale reason %q, want %q", a.StaleReason, *e.StaleReason)
				case e.AgeSeconds != nil && a.Age != time.Duration(*e.AgeSeconds)*time.Second:
					t.Errorf("age %v, want %ds", a.Age, *e.AgeSeconds)
				}
				return
			}
			var detail, rid, peer, road, outcome string
			status := 0
			nothingSent, notCarried := false, false
			var u *Unavailable
			var unknown *OutcomeUnknown
			var conflict *Conflict
			var bad *BadInput
			switch {
			case errors.As(err, &u):
				detail, rid, peer, road, outcome, status = u.Detail, u.RequestID, u.Peer, u.Road, u.Outcome, u.Status
				nothingSent, notCarried = u.NothingSent, u.NotCarriedOut || u.NothingSent
			case errors.As(err, &bad):
				detail, rid, outcome, status = bad.Detail, bad.RequestID, "bad_request", bad.Status
				nothingSent, notCarried = bad.NothingSent, true
			case errors.As(err, &unknown):
				detail, rid, peer, outcome, status = unknown.Detail, unknown.RequestID, unknown.Peer, "outcome_unknown", c.Status
			case errors.As(err, &conflict):
				detail, rid, outcome, status = conflict.Detail, conflict.RequestID, "conflict", c.Status
			}
			switch {
			case status != e.Status:
				t.Errorf("status %d, want %d", status, e.Status)
			case e.Outcome != nil && outcome != *e.Outcome:
				t.Errorf("outcome %q, want %q", outcome, *e.Outcome)
			case e.RequestID != nil && rid != *e.RequestID:
				t.Errorf("request id %q, want %q", rid, *e.RequestID)
			case e.Peer != nil && peer != *e.Peer:
				t.Errorf("peer %q, want %q", peer, *e.Peer)
			case e.Road != nil && road != *e.Road:
				t.Errorf("road %q, want %q", road, *e.Road)
			case !strings.Contains(detail, e.DetailContains):
				t.Errorf("detail %q does not say %q", detail, e.DetailContains)
			case e.NothingSent != nil && nothingSent != *e.NothingSent:
				t.Errorf("nothing sent %v, want %v", nothingSent, *e.NothingSent)
			case e.NotCarriedOut != nil && notCarried != *e.NotCarriedOut:
				t.Errorf("not carried out %v, want %v", notCarried, *e.NotCarriedOut)
			}
		})
	}
}
