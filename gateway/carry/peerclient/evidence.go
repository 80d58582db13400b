package peerclient

import (
	"errors"
	"io"
	"syscall"

	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/roads"
)

// Phase is where an exchange stood when it failed, after its connect.
type Phase int

const (
	// BeforeHead: the request went (some or all of it), and no head of
	// an answer had come.
	BeforeHead Phase = iota
	// InBody: the answer's head had come, and its body was coming.
	InBody
)

// Judgment is what a failed exchange says of its road (DESIGN §2c:
// silence is the app's, death is the road's).
type Judgment struct {
	// GaveUp reports that the exchange ended because its asker stopped
	// waiting (an app's client closed its connection, or timed out): it
	// says nothing of the road.
	GaveUp bool
	// Cut reports that the road was dropped already, on evidence of its
	// own, and this exchange's connection closed for it (a *CutError).
	Cut bool
	// Evidence, when not "", is what the failure proves of the road: it
	// is dropped for it.
	Evidence roads.Evidence
	// Suspect reports that the failure proves nothing by itself (a close
	// in the middle of an answer: the owner's app may have broken off,
	// or its Delta died), but the road is to be probed at once: the
	// probe's failure, not this, drops it.
	Suspect bool
}

// Judge says what an exchange that failed with err in phase proves of its
// road; gone reports whether the exchange's asker had stopped waiting
// (its context had ended by its client's doing, not by the road's). It is
// pure: the rules of docs/protocol.md's table.
//
//   - The asker gone: nothing (GaveUp).
//   - Closed here because its road was dropped: already acted on (Cut).
//   - TCP keepalive's verdict (ETIMEDOUT): the road is dead (keepalive).
//   - Before the head, the connection closed or reset by the other end:
//     the peer's Delta answers its own app's failures with a reply, so
//     nobody but the Delta (or the road) closed it (closed).
//   - In the body, a close or reset: the owner's Delta cuts an answer its
//     app broke off the same way; probe the road (Suspect).
//   - Anything else after the connect (a deadline of this side's own, an
//     answer Delta cannot read): probe the road (Suspect).
func Judge(phase Phase, gone bool, err error) Judgment {
	var cut *CutError
	switch {
	case gone:
		return Judgment{GaveUp: true}
	case errors.As(err, &cut):
		return Judgment{Cut: true}
	case errors.Is(err, syscall.ETIMEDOUT):
		return Judgment{Evidence: roads.EvidenceKeepalive}
	case closedByPeer(err) && phase == BeforeHead:
		return Judgment{Evidence: roads.EvidenceClosed}
	}
	return Judgment{Suspect: true}
}

// closedByPeer reports whether err is the other end closing or resetting
// the connection.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, h1.ErrClosedEarly) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED)
}

// Ended acts on how an exchange outside Do's loop ended on cand's road (a
// body that broke off after its head): evidence drops the road (its other
// exchanges are cut), a suspicion has it probed at once; a give-up, or a
// road dropped already, does nothing more.
func (c *Client) Ended(cand roads.Candidate, j Judgment, err error) {
	switch {
	case j.Evidence != "":
		c.cfg.Router.Invalidate(cand.Peer, cand.Road, &roads.DropError{Evidence: j.Evidence, Err: err})
	case j.Suspect:
		if s, ok := c.cfg.Router.(roads.Suspecter); ok {
			s.Suspect(cand.Peer, cand.Road, err.Error())
		}
	}
}
