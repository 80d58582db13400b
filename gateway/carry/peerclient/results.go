package peerclient

import (
	"errors"
	"fmt"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// The results of attempts, made here so that each kind of ending is said
// once (caddy's classified iteration: DialError, roundtripSucceededError):
// an attempt function returns one of these to Do's loop, and keeps what
// its app is told for itself.

// Replied: the attempt has the answer — the owner's, its refusal, or an
// ending this side gives without another try (a request that cannot be
// made, a journal that cannot record it).
func Replied() Result { return Result{Verdict: Done} }

// DialFailed: connecting for cand failed, so nothing was sent: evidence
// against every road the dial raced, which a fall-back passes over.
func DialFailed(cand roads.Candidate, err error) Result {
	return Result{Verdict: Failed, RoadFault: true, Road: cand.Road, Tried: RacedRoads(cand), Reason: err, Evidence: roads.EvidenceConnect}
}

// FailedOn: the attempt failed on cand's road alone and not for the owner
// app (the owner's Delta answered with a failure of its door or its
// road): a fall-back takes another road, and nothing is proved of this
// one.
func FailedOn(cand roads.Candidate, err error) Result {
	return Result{Verdict: Failed, RoadFault: true, Road: cand.Road, Tried: []roads.Road{cand.Road}, Reason: err}
}

// LeftUnanswered: the request (some of it) left on cand's road and no
// answer came, for what j says of the road (err). Nothing that sends at
// most once is tried again after it.
func LeftUnanswered(cand roads.Candidate, j Judgment, err error) Result {
	return Result{Verdict: Failed, Sent: true, RoadFault: !j.GaveUp, Road: cand.Road, Tried: []roads.Road{cand.Road},
		Reason: err, Evidence: j.Evidence, Suspect: j.Suspect}
}

// RefusedAtDoor: the peer's door answered 401 on cand's road; a new
// ticket may cure it (Next renews once).
func RefusedAtDoor(cand roads.Candidate, why error) Result {
	return Result{Verdict: DoorRefused, Sent: true, Road: cand.Road, NeedsTicket: cand.NeedsTicket, Tried: []roads.Road{cand.Road}, Reason: why}
}

// ExchangeFailed: a pooled exchange (RoundTrip: a read, a question) got no
// answer. used is the road it went on, asked the candidate it was made
// for, and dialErr its dial's own failure (then nothing was sent, and the
// failed connect is the evidence); otherwise j is what the failure says of
// the road (Judge).
func ExchangeFailed(used, asked roads.Candidate, dialErr error, j Judgment, err error) Result {
	r := Result{Verdict: Failed, RoadFault: true, Road: used.Road, Tried: TriedRoads(used, asked, dialErr), Reason: err,
		Evidence: j.Evidence, Suspect: j.Suspect}
	if dialErr != nil {
		r.Evidence, r.Suspect = roads.EvidenceConnect, false
	}
	return r
}

// GaveUp: the exchange ended because its asker stopped waiting (an app's
// client went away), which says nothing of the road: no fall-back, no
// drop (DESIGN §2c).
func GaveUp(used roads.Candidate) Result { return Result{Verdict: Failed, Road: used.Road} }

// Unattempted is why Do made no attempt, or no further one: the router
// had no road (Road is ""), or the chosen road had no ticket. Nothing was
// sent on its account (Outcome, Guarantee). FellBack reports that no road
// was left after a fall-back: the failure that led there is then the
// caller's answer.
type Unattempted struct {
	Road     roads.Road
	FellBack bool
	// Err is the router's or the ticket source's error; Detail what an
	// app is told (proto.NotSent wording, naming the peer).
	Err    error
	Detail string
}

func (e *Unattempted) Error() string { return e.Detail }
func (e *Unattempted) Unwrap() error { return e.Err }

// Outcome is what an app is told of an exchange never attempted:
// unavailable.
func (e *Unattempted) Outcome() localapi.Outcome { return localapi.Unavailable }

// Guarantee is what is known of it: nothing was sent.
func (e *Unattempted) Guarantee() localapi.Guarantee { return localapi.NothingSent }

func noRoad(peer string, err error, fellBack bool) *Unattempted {
	detail := proto.NotSent(fmt.Sprintf("%s cannot be reached (%v)", peer, err), peer)
	var notYet *roads.NotYetError
	if errors.Is(err, roads.ErrHeldDown) || errors.Is(err, roads.ErrOffline) || errors.As(err, &notYet) {
		detail = proto.NotSent(err.Error(), peer) // it says why in its own words
	}
	return &Unattempted{Err: err, FellBack: fellBack, Detail: detail}
}

func noTicket(peer string, road roads.Road, err error) *Unattempted {
	return &Unattempted{Road: road, Err: fmt.Errorf("no ticket for %s: %w", peer, err),
		Detail: proto.NotSent(fmt.Sprintf("no ticket for %s (%v)", peer, err), peer)}
}
