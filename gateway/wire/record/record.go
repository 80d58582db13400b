// Package record is the vocabulary of a call's record in the caller's
// journal (DESIGN §4): its states, the call, its attempts, its answer and
// the events of its history. The journal stores and reads them; the view,
// the status page and the tray show them, without the database.
package record

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/delta-roads/delta/api/localapi"
)

// ErrNotFound is returned (wrapped) for a call, receipt or app that is not
// in the journal.
var ErrNotFound = errors.New("not found")

// CallState is the state of a call in the caller's journal (DESIGN §4):
// the local API's word for it (localapi.CallState), named here as the
// journal speaks it.
type CallState = localapi.CallState

// The caller's call states: sending → answered | unavailable | unknown;
// unknown → carried_out | not_carried_out | needs_person.
const (
	Sending       = localapi.CallSending
	Answered      = localapi.CallAnswered
	Unavailable   = localapi.CallUnavailable
	Unknown       = localapi.CallUnknown
	CarriedOut    = localapi.CallCarriedOut
	NotCarriedOut = localapi.CallNotCarriedOut
	NeedsPerson   = localapi.CallNeedsPerson
)

// CallStates are the call states, in the order a call meets them.
var CallStates = []CallState{Sending, Answered, Unavailable, Unknown, CarriedOut, NotCarriedOut, NeedsPerson}

// Call is one call in the caller's journal.
type Call struct {
	RequestID string
	Peer      string
	App       string
	CallerApp string
	// Door is how the call came in: "" the local API (with the token),
	// "forward PEER/APP" a forward. Its outcome is told again only
	// through the same door.
	Door   string
	Method string
	// GRPC: a gRPC call (Content-Type application/grpc), shown by its
	// service and method (its Path, /package.Service/Method).
	GRPC      bool
	Path      string
	Digest    string
	State     CallState
	Outcome   string // the outcome the app was told
	Dismissed bool
	// DismissedBy names who set the call aside ("the status page", "the
	// local API"); empty if nobody did, or before this was recorded.
	DismissedBy string
	Detail      string
	OwnerState  string // what the owner last said when asked
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Answer      *Answer // nil until there is one
	Asks        int     // how many times the owner was asked
	NextAskAt   time.Time
	Attempts    []Attempt
	// Request is what was sent, while the journal keeps it; nil if not
	// (or not read).
	Request *Request
	// SettledBy is "a person" when a person settled the call, with their
	// note.
	SettledBy  string
	SettleNote string
	// Behind: the outcome is held in memory, not yet written (the journal
	// could not write it: a full disk); it is written when space frees.
	Behind bool
}

// Request is what a call sent: its headers as sent and its body, up to
// MaxKeptBody; a larger body keeps only its size (Truncated).
type Request struct {
	Headers   http.Header
	Body      []byte
	Size      int
	Truncated bool
	// Forgotten: a person had its headers and body dropped (delta
	// forget); its size stays.
	Forgotten bool
}

// MaxKeptBody is the largest request body the journal keeps.
const MaxKeptBody = 64 << 10

// Attempt is one try at sending a call.
type Attempt struct {
	N         int
	Road      string
	Address   string
	StartedAt time.Time
	FirstByte bool // whether the request's first byte was written
	Error     string
	// Reply is the owner's own reply, when it made one that is not the
	// app's answer: its reason (proto.PeerError: "app_unavailable",
	// "app_not_found", …). Empty when no reply came or the app answered.
	Reply string
}

// Answer is an owner app's answer to a call, as kept in a journal.
type Answer struct {
	Status  int
	Headers http.Header
	// Body is the answer's body. Empty with Omitted set when the body was
	// larger than the journal keeps (it is then known by BodyDigest only).
	Body []byte
	// Omitted reports whether the body was too large to keep.
	Omitted bool
	// BodyDigest is the SHA-256 of the whole body, hex.
	BodyDigest string
}

// Event is one step in a call's history: the call entered State, the owner
// said OwnerState, or a person dismissed it. Seq orders events across calls
// and never repeats, so a reader can follow the journal from a cursor.
type Event struct {
	Seq        int64
	RequestID  string
	At         time.Time
	State      CallState
	OwnerState string
	Dismissed  bool
	Detail     string
	// From is the state before this event; empty for a call's first.
	From CallState
}

// NewAnswer builds the Answer to keep for a response: the body is kept
// when it is at most maxBody bytes, otherwise only its digest.
func NewAnswer(status int, h http.Header, body []byte, maxBody int) *Answer {
	sum := sha256.Sum256(body)
	a := &Answer{Status: status, Headers: h.Clone(), BodyDigest: hex.EncodeToString(sum[:])}
	if len(body) > maxBody {
		a.Omitted = true
	} else {
		a.Body = body
	}
	return a
}

// KeepRequest is the request to keep of a call that sent body with
// headers: the body itself up to MaxKeptBody, else its size only.
func KeepRequest(headers http.Header, body []byte) *Request {
	r := &Request{Headers: headers, Size: len(body)}
	if len(body) > MaxKeptBody {
		r.Truncated = true
	} else {
		r.Body = body
	}
	return r
}
