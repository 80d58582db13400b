package proto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ReceiptState is what an owner knows of a call it was sent: the state of
// its receipt, as its journal keeps it and as GET /delta/v1/calls/{id}
// says it (CallStateJSON.State).
type ReceiptState string

// The receipt states. A fence is a receipt in state ReceiptFenced.
const (
	ReceiptRunning       ReceiptState = "running"         // the owner app is working on it
	ReceiptAnswered      ReceiptState = "answered"        // the owner app answered
	ReceiptNotCarriedOut ReceiptState = "not_carried_out" // refused before the app had it
	// ReceiptAppUnknown: the app took it and its connection broke before
	// it answered.
	ReceiptAppUnknown ReceiptState = "app_unknown"
	// ReceiptInterrupted: Delta restarted while the app worked on it.
	ReceiptInterrupted ReceiptState = "interrupted"
	// ReceiptFenced: it never arrived, and its id is fenced: it will be
	// refused if it comes.
	ReceiptFenced ReceiptState = "fenced"
	// ReceiptNeverArrived and ReceiptExpired are said, never stored: no
	// receipt within the time the owner vouches for, or one older than
	// its retention.
	ReceiptNeverArrived ReceiptState = "never_arrived"
	ReceiptExpired      ReceiptState = "expired"
)

// StoredReceiptStates are the states a receipt is kept in, in the order a
// person reads them.
var StoredReceiptStates = []ReceiptState{ReceiptRunning, ReceiptAnswered, ReceiptNotCarriedOut, ReceiptAppUnknown, ReceiptInterrupted, ReceiptFenced}

// CallStateJSON is the JSON of GET /delta/v1/calls/{id} (DESIGN §4): what
// the owner knows of a call. The owner writes it, the reconciler reads it.
type CallStateJSON struct {
	State         ReceiptState `json:"state"`
	Digest        string       `json:"digest"`
	ReceivedAt    string       `json:"received_at,omitempty"`
	Answer        *AnswerJSON  `json:"answer,omitempty"`
	AnswerExpired bool         `json:"answer_expired"`
}

// AnswerJSON is the owner app's recorded answer in a CallStateJSON, the
// peer wire's own (its fields are what the local API shows of a call's
// answer too, localapi.Answer).
type AnswerJSON struct {
	Status     int         `json:"status"`
	Headers    http.Header `json:"headers"`
	BodyBase64 string      `json:"body_base64"`
	// Omitted: the body was over 1 MiB and is not kept.
	Omitted bool `json:"body_omitted,omitempty"`
}

// SettledJSON is the body of POST /delta/v1/calls/{id}/settled: the
// caller's Delta tells the owner that a person there settled the call, so
// that the owner stops listing its receipt as one to check (DESIGN §4).
type SettledJSON struct {
	// State is the caller's word for the call: carried_out or
	// not_carried_out.
	State string `json:"state"`
	// By is who settled it: "a person".
	By string `json:"by"`
	// Note is the person's note, at most MaxSettleNote bytes.
	Note string `json:"note,omitempty"`
	// At is when the person settled it, RFC 3339: the owner shows it (a
	// time after the owner's now, or none, is taken as now).
	At string `json:"at"`
}

// SettledReplyJSON is the owner's answer to a SettledJSON: whether it
// keeps a receipt of the call to record it on (it may never have received
// the call, or have swept it), and the receipt's state.
type SettledReplyJSON struct {
	Recorded bool         `json:"recorded"`
	State    ReceiptState `json:"state,omitempty"`
}

// AppListJSON is an owner's answer to GET PathAppList: the names of the
// apps registered there, sorted.
type AppListJSON struct {
	Apps []string `json:"apps"`
}

// MaxSettleNote bounds a person's note on a settlement or a check.
const MaxSettleNote = 1000

// RFC3339 is how times are written on the wire: RFC 3339, UTC.
func RFC3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// WriteJSON writes v as an indented JSON answer (the local API, read by
// people with curl too), never cached.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v, "  ") }

// WritePeerJSON writes v as a compact JSON answer (the peer API, read by
// Deltas), never cached.
func WritePeerJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v, "") }

func writeJSON(w http.ResponseWriter, status int, v any, indent string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", indent)
	// The status is written; a client gone meanwhile has nothing to read.
	_ = enc.Encode(v)
}

// ForwardHeaders copies an app's headers for the next hop, without
// hop-by-hop headers, credentials, X-Delta-* and the Forwarded fields a
// client may have sent (only Delta says where a request came from: the
// owner sets them, DESIGN §2b). Cookie stays: the caller's Delta removes
// it unless the request came through a forward (ForwardCookie).
func ForwardHeaders(in http.Header) http.Header {
	h := in.Clone()
	StripHop(h)
	StripClientOrigin(h)
	h.Del("Content-Length")
	return h
}

// StripClientOrigin removes every header that proxies use to tell an app
// about its client (IsClientOrigin): an app's client may send any of them,
// and the app would take them for its proxy's (issue 63, D7). Delta sets
// only its own (Forwarded, X-Forwarded-Host, -Proto, -Prefix) at the
// owner.
func StripClientOrigin(h http.Header) {
	for k := range h {
		if IsClientOrigin(k) {
			delete(h, k)
		}
	}
}

// clientOrigin are the names, folded (lower case, "_" read as "-"), of
// the headers proxies and CDNs set to say where a request came from,
// beside the X-Forwarded- family (any name that begins so).
var clientOrigin = []string{"forwarded", "x-forwarded", "x-real-ip", "x-client-ip", "true-client-ip", "x-original-url", "x-rewrite-url",
	"x-original-host", "x-host", "x-cluster-client-ip", "cf-connecting-ip", "fastly-client-ip", "x-proxyuser-ip", "client-ip"}

// IsClientOrigin reports whether header name k is one that proxies use to
// tell an app about its client (Forwarded, the X-Forwarded-* family,
// X-Real-IP, X-Client-IP, True-Client-IP, X-Original-URL, X-Rewrite-URL,
// and their kin), however it is spelled: case is folded and "_" read as
// "-", as CGI, WSGI, PHP and Rack read X_Forwarded_For as
// HTTP_X_FORWARDED_FOR.
// It runs on every header of every request, on both hops: it compares in
// place, with no copy.
func IsClientOrigin(k string) bool {
	if foldedPrefix(k, "x-forwarded-") {
		return true
	}
	for _, n := range clientOrigin {
		if len(k) == len(n) && foldedPrefix(k, n) {
			return true
		}
	}
	return false
}

// foldedPrefix reports whether k begins with p (lower case, "-") once k
// is folded as IsClientOrigin folds it.
func foldedPrefix(k, p string) bool {
	if len(k) < len(p) {
		return false
	}
	for i := range len(p) {
		c := k[i]
		switch {
		case c == '_':
			c = '-'
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		if c != p[i] {
			return false
		}
	}
	return true
}

// NotSent phrases what an app is told of a request that never left this
// computer: the cause, then "nothing was sent" (to peer, when one is
// named). Every such guarantee the caller's side gives is written here.
func NotSent(cause, peer string) string {
	if peer == "" {
		return cause + "; nothing was sent"
	}
	return cause + "; nothing was sent to " + peer
}

// NotCarriedOut phrases an owner's refusal before anything ran: the cause,
// then "nothing was carried out". Every such guarantee the owner gives is
// written here.
func NotCarriedOut(cause string) string { return cause + "; nothing was carried out" }

// KeptHeader is an answer's header as a journal keeps it: a copy without
// hop-by-hop headers and Content-Length (the body kept says its length).
func KeptHeader(h http.Header) http.Header {
	h = h.Clone()
	StripHop(h)
	h.Del("Content-Length")
	return h
}

// DecodeObject reads one JSON object of at most limit bytes from r into v:
// no field v does not have, no key twice (of two values, a reader and a
// person could each take another), nothing after it. Errors name the
// problem.
func DecodeObject(r io.Reader, limit int64, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return err
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("the body is over %d bytes", limit)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("the body is not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string)
		if seen[k] {
			return fmt.Errorf("the object holds %q twice", k)
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	strict := json.NewDecoder(bytes.NewReader(b))
	strict.DisallowUnknownFields()
	if err := strict.Decode(v); err != nil {
		return err
	}
	if strict.More() {
		return errors.New("more follows the object")
	}
	return nil
}

// IsGRPC reports whether a request with header h is gRPC's
// (Content-Type application/grpc, or application/grpc+FORMAT;
// docs/protocol.md §1c): every gRPC method is a POST and so a call, and
// HTTP/2 between its client, Delta and its server. gRPC-Web
// (application/grpc-web…) is HTTP/1.1's and not this.
func IsGRPC(h http.Header) bool {
	ct := h.Get("Content-Type")
	if len(ct) < len("application/grpc") || !strings.EqualFold(ct[:len("application/grpc")], "application/grpc") {
		return false
	}
	rest := ct[len("application/grpc"):]
	return rest == "" || rest[0] == '+' || rest[0] == ';'
}
