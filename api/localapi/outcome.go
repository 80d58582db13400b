package localapi

import "net/http"

// Outcome is what the local API tells an app happened (DESIGN §2). It
// travels in X-Delta-Outcome and in the error body's "error";
// kit/contract/outcomes.json lists them for every kit.
type Outcome string

// The outcomes of the local API.
const (
	Answered     Outcome = "answered"
	Stale        Outcome = "stale"
	BadRequest   Outcome = "bad_request"
	Unauthorized Outcome = "unauthorized"
	NotFound     Outcome = "not_found"
	Conflict     Outcome = "conflict"
	Forbidden    Outcome = "forbidden"
	Unavailable  Outcome = "unavailable"
	Timeout      Outcome = "timeout"
	Unknown      Outcome = "outcome_unknown"
	// AppError is a read's when the owner app broke its answer before its
	// head (closed, reset, or not HTTP): the app's fault, not the road's
	// (DESIGN §2b).
	AppError Outcome = "app_error"
)

// Status is the HTTP status Delta uses for an outcome it makes itself.
// Answered and Stale carry the owner's status instead; for them it is 200.
func (o Outcome) Status() int {
	switch o {
	case BadRequest:
		return http.StatusBadRequest
	case Unauthorized:
		return http.StatusUnauthorized
	case NotFound:
		return http.StatusNotFound
	case Conflict:
		return http.StatusConflict
	case Forbidden:
		return http.StatusForbidden
	case Unavailable:
		return http.StatusServiceUnavailable
	case Timeout:
		return http.StatusGatewayTimeout
	case Unknown, AppError:
		return http.StatusBadGateway
	}
	return http.StatusOK
}

// The X-Delta-* headers an app sends to its Delta or reads in its answers
// (docs/protocol.md §1). The headers only the two Deltas speak to each
// other are the peer wire's (gateway/wire/proto).
const (
	HeaderOutcome   = "X-Delta-Outcome"
	HeaderRoute     = "X-Delta-Route"
	HeaderRequestID = "X-Delta-Request-Id"
	HeaderTimeout   = "X-Delta-Timeout"
	HeaderApp       = "X-Delta-App"
	HeaderReplayed  = "X-Delta-Replayed"
	HeaderStale     = "X-Delta-Stale"
	HeaderCaller    = "X-Delta-Caller"
	HeaderSecret    = "X-Delta-Forward-Secret"
	// HeaderAnswerOmitted is on a replayed answer whose body was too
	// large to keep: the status and headers are the owner's, the body is
	// not.
	HeaderAnswerOmitted = "X-Delta-Answer-Omitted"
	// HeaderJournal is "behind" on an outcome the journal holds in memory
	// because it could not write it (a full disk): the same outcome is
	// told to every repeat, and written when space frees.
	HeaderJournal = "X-Delta-Journal"
)

// ErrorBody is the JSON body of every answer Delta makes itself.
type ErrorBody struct {
	Error     string `json:"error"`
	Detail    string `json:"detail"`
	RequestID string `json:"request_id,omitempty"`
	Peer      string `json:"peer,omitempty"`
	Road      string `json:"road,omitempty"`
	// Sent is false when nothing of the request left this computer; the
	// field is absent when it may have (DESIGN §2).
	Sent *bool `json:"sent,omitempty"`
	// CarriedOut is false when the request was certainly not carried
	// out: nothing was sent, or the owner proved its app did not act.
	// Absent when that is not known.
	CarriedOut *bool `json:"carried_out,omitempty"`
}

// Guarantee is what Delta can promise of a request that got no answer
// from an app: the guarantee an ErrorBody carries as fields, so that no
// reader parses it back from a sentence.
type Guarantee int

const (
	// NoGuarantee: it may or may not have been carried out.
	NoGuarantee Guarantee = iota
	// NotCarried: it reached the owner, whose Delta proved the app did not
	// act (carried_out: false).
	NotCarried
	// NothingSent: no byte of it left this computer (sent: false and
	// carried_out: false).
	NothingSent
)

// With returns b carrying g.
func (b ErrorBody) With(g Guarantee) ErrorBody {
	no := false
	switch g {
	case NothingSent:
		b.Sent, b.CarriedOut = &no, &no
	case NotCarried:
		b.CarriedOut = &no
	}
	return b
}

// Guarantee is what b promises.
func (b ErrorBody) Guarantee() Guarantee {
	switch {
	case b.Sent != nil && !*b.Sent:
		return NothingSent
	case b.CarriedOut != nil && !*b.CarriedOut:
		return NotCarried
	}
	return NoGuarantee
}

// CallState is the state of a call in the caller's journal, as a call's
// record (Call.State) says it (DESIGN §4).
type CallState string

// The call states: sending → answered | unavailable | unknown;
// unknown → carried_out | not_carried_out | needs_person.
const (
	CallSending       CallState = "sending"
	CallAnswered      CallState = "answered"
	CallUnavailable   CallState = "unavailable"
	CallUnknown       CallState = "unknown"
	CallCarriedOut    CallState = "carried_out"
	CallNotCarriedOut CallState = "not_carried_out"
	CallNeedsPerson   CallState = "needs_person"
)

// Unsettled reports whether a call in state s waits for reconciliation or a
// person.
func (s CallState) Unsettled() bool { return s == CallUnknown || s == CallNeedsPerson }
