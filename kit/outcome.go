package kit

import "fmt"

// Unavailable: the owner app's answer did not come, and Delta says what
// it can promise. For a call it is always one of two: nothing was sent
// (NothingSent: no road, a connect that failed, a wrong token), or the
// owner's Delta proved the app did not act (NotCarriedOut: its door
// refused the caller, the app is not registered or was not listening, the
// body did not arrive whole); a call refused so may be made again. A read
// may also get neither promise (both false: it timed out, or the app broke
// its answer), and a read may always be asked again. Detail says why, in
// Delta's words. (Python's and TypeScript's NothingSent and NotCarriedOut
// are this type with those fields.)
type Unavailable struct {
	// Outcome is Delta's X-Delta-Outcome: unavailable, forbidden,
	// not_found, unauthorized, or timeout (reads only).
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

// BadInput: the request was malformed, and was refused for it (Delta's
// bad_request: a request id, timeout, path, Host or size it does not
// take; or the kit's, before asking Delta, with Status 0). It was not
// carried out. NothingSent is true unless some of it had left: a streamed
// call whose body grew past this computer's max_call_bytes is cut there,
// after its first bytes left and before its owner could have given it to
// its app (413).
type BadInput struct {
	// Status is the HTTP status Delta answered with (0: refused by the kit).
	Status      int
	Detail      string
	RequestID   string
	NothingSent bool
}

func (e *BadInput) Error() string { return "bad input: " + e.Detail }

// OutcomeUnknown: the call left and no complete answer came, so nobody
// knows yet whether the owner acted. Delta never sends it again; it asks
// the owner by RequestID until it knows. Client.WaitSettled waits for that.
type OutcomeUnknown struct {
	RequestID string
	Peer      string
	Detail    string
}

func (e *OutcomeUnknown) Error() string {
	return fmt.Sprintf("outcome unknown (request id %s): %s", e.RequestID, e.Detail)
}

// DeltaDown: this computer's Delta is not running, or did not take the
// connection. Nothing was sent.
type DeltaDown struct {
	// StateDir is the folder looked in; URL where Delta was looked for,
	// if local.json named it.
	StateDir string
	URL      string
	// RequestID is the call's id, when a call was refused so.
	RequestID string
	Err       error
}

func (e *DeltaDown) Error() string {
	where := "state folder " + e.StateDir
	if e.StateDir == "" {
		where = "no state folder"
	}
	if e.URL != "" {
		where += ", at " + e.URL
	}
	return fmt.Sprintf("Delta is not running (%s): %v; nothing was sent", where, e.Err)
}

func (e *DeltaDown) Unwrap() error { return e.Err }

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
// (docs/design.md §2a): the Read bytes that came are not the whole answer.
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
