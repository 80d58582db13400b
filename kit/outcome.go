package kit

import "fmt"

// Unavailable: the request was not carried out. Either nothing was sent
// (NothingSent: no road, a connect that failed, a bad request, a wrong
// token), or the owner's Delta proved the app did not act (its door
// refused the caller, the app is not registered or was not listening, the
// body did not arrive whole). Detail says why, in Delta's words. A call
// refused so may be made again.
type Unavailable struct {
	// Outcome is Delta's X-Delta-Outcome: unavailable, forbidden,
	// not_found, bad_request, unauthorized, or timeout (reads only).
	Outcome string
	// Status is the HTTP status Delta answered with.
	Status    int
	Detail    string
	RequestID string
	Peer      string
	Road      string
	// NothingSent reports whether nothing of the request left this
	// computer (Delta's "sent": false).
	NothingSent bool
	// NotCarriedOut reports whether it was certainly not carried out
	// (Delta's "carried_out": false): nothing was sent, or the request
	// reached the owner, whose Delta proved its app did not act. Both
	// false: no promise either way, which only a read is ever told (a
	// read that timed out, an app that broke its answer).
	NotCarriedOut bool
}

func (e *Unavailable) Error() string { return e.Outcome + ": " + e.Detail }

// OutcomeUnknown: the call left and no complete answer came, so nobody
// knows yet whether the owner acted. Delta never sends it again; it asks
// the owner by RequestID until it knows. Client.Settle waits for that.
type OutcomeUnknown struct {
	RequestID string
	Peer      string
	Detail    string
}

func (e *OutcomeUnknown) Error() string {
	return fmt.Sprintf("outcome unknown (request id %s): %s", e.RequestID, e.Detail)
}

// LocalDeltaDown: this computer's Delta is not running, or did not take the
// connection. Nothing was sent.
type LocalDeltaDown struct {
	// StateDir is the folder looked in; URL where Delta was looked for,
	// if local.json named it.
	StateDir string
	URL      string
	// RequestID is the call's id, when a call was refused so.
	RequestID string
	Err       error
}

func (e *LocalDeltaDown) Error() string {
	where := "state folder " + e.StateDir
	if e.StateDir == "" {
		where = "no state folder"
	}
	if e.URL != "" {
		where += ", at " + e.URL
	}
	return fmt.Sprintf("Delta is not running (%s): %v; nothing was sent", where, e.Err)
}

func (e *LocalDeltaDown) Unwrap() error { return e.Err }

// Conflict: the request id is in use on this computer for another request
// (another method, path or body). Nothing was sent.
type Conflict struct {
	RequestID string
	Detail    string
}

func (e *Conflict) Error() string {
	return fmt.Sprintf("conflict (request id %s): %s", e.RequestID, e.Detail)
}

// Cut: an answer broke off before its end, and could not be continued
// (DESIGN §2a): the Read bytes that came are not the whole answer.
type Cut struct {
	Read int64
	// Total is the answer's length, -1 if it was not announced.
	Total int64
	Err   error
}

func (e *Cut) Error() string {
	if e.Total >= 0 {
		return fmt.Sprintf("the answer broke off after %d of its %d bytes: %v; what came is not the whole answer", e.Read, e.Total, e.Err)
	}
	return fmt.Sprintf("the answer broke off after %d bytes: %v; what came is not the whole answer", e.Read, e.Err)
}

func (e *Cut) Unwrap() error { return e.Err }
