package peerclient

// Kind is what an exchange with a peer is: it decides how hard the loop
// may try (DESIGN §2, §4, §5).
type Kind int

const (
	// Call is a write, sent at most once: after its first byte nothing is
	// tried again.
	Call Kind = iota
	// Read may be tried once more on a freshly chosen road whatever
	// happened on a thunderbolt or lan road.
	Read
	// Question is the reconciler's "what do you know of this call": any
	// road, until one answers, at most MaxQuestionTries attempts.
	Question
)

// MaxQuestionTries bounds the attempts of one question.
const MaxQuestionTries = 4

// Verdict is how an attempt ended, as far as the loop cares.
type Verdict int

const (
	// Done: the attempt has the answer (the owner's, or its refusal).
	Done Verdict = iota
	// DoorRefused: the peer's door said 401, a new ticket may cure it.
	DoorRefused
	// Failed: the attempt got no answer.
	Failed
)

// Facts are what the stop rules look at after an attempt.
type Facts struct {
	Kind    Kind
	Verdict Verdict
	// Sent reports whether a byte of the request was written.
	Sent bool
	// RoadFault reports whether the failure was the road's (transport,
	// door), not the owner app's, nor the caller giving up.
	RoadFault bool
	// NeedsTicket reports whether the attempt's road presents tickets.
	NeedsTicket bool
	// Local reports whether the attempt was on a thunderbolt or lan road.
	Local bool
	// Pinned reports whether the app pinned the road (X-Delta-Route).
	Pinned bool
	// Renewed and FellBack report whether the loop renewed a ticket, or
	// dropped a road and chose again, already.
	Renewed, FellBack bool
	// Tries counts the attempts made so far, this one included.
	Tries int
}

// Action is what the loop does next.
type Action int

const (
	// Stop: the attempt's outcome is the answer.
	Stop Action = iota
	// Renew: renew the ticket and attempt once more on a new connection.
	Renew
	// FallBack: drop the road(s) the attempt tried and choose again.
	FallBack
)

func (a Action) String() string {
	return [...]string{"stop", "renew", "fall back"}[a]
}

// Next is the stop rules, one pure function:
//   - an answer is the answer;
//   - a door's 401 on a road with tickets renews the ticket, once;
//   - a call falls back once, only before its first byte, only from a
//     thunderbolt or lan road it was not pinned to;
//   - a read falls back once from a thunderbolt or lan road it was not
//     pinned to, on a road fault (a second 401 is one);
//   - a question tries other roads until MaxQuestionTries.
//
// A failure on the tailnet, or a pinned road's, is the answer.
func Next(f Facts) Action {
	switch f.Verdict {
	case Done:
		return Stop
	case DoorRefused:
		if f.NeedsTicket && !f.Renewed {
			return Renew
		}
		if f.Kind != Read {
			return Stop
		}
		f.RoadFault = true // a read refused twice at the door tries another road
	}
	if !f.RoadFault {
		return Stop
	}
	switch f.Kind {
	case Call:
		if !f.Sent && f.Local && !f.Pinned && !f.FellBack {
			return FallBack
		}
	case Read:
		if f.Local && !f.Pinned && !f.FellBack {
			return FallBack
		}
	case Question:
		if f.Tries < MaxQuestionTries {
			return FallBack
		}
	}
	return Stop
}
