package caller

import (
	"fmt"
	"net/http"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// Asking is the guarantee of a call whose outcome is unknown: the words
// every such detail ends with.
func Asking(peer string) string {
	return "it will not be sent again, and Delta is asking " + peer + " what happened"
}

// callVerdict is what the caller makes of an owner's reply to a call.
type callVerdict struct {
	state  record.CallState
	o      localapi.Outcome
	detail string
	g      localapi.Guarantee
	// status is the app's HTTP status when not o's (413 for a body the
	// owner found too large); 0 for o's.
	status int
}

// mapOwnerReply turns the owner's reply to a call into the caller's state,
// outcome and guarantee (DESIGN §2: only replies made by the app are
// answered). The owner's guarantee is read from its reply's fields, never
// from its words: every refusal of the owner's after its door is phrased
// by proto.NotCarriedOut and carries carried_out: false; a refusal at its
// door carries the field, and its words are about the door only.
func mapOwnerReply(peer string, r peerclient.Reply) callVerdict {
	said := r.Detail()
	notDone := ""
	if r.Guarantee() == localapi.NoGuarantee || r.Err == proto.PeerUnauthorized || r.Err == proto.PeerForbidden {
		notDone = "; it was not carried out"
	}
	v := callVerdict{state: record.Unavailable, g: localapi.NotCarried}
	switch r.Err {
	case proto.PeerAnswered:
		return callVerdict{state: record.Answered, o: localapi.Answered}
	case proto.PeerUnauthorized:
		v.o, v.detail = localapi.Forbidden, fmt.Sprintf("%s refused us at its door twice, with a renewed ticket too (%s)%s", peer, said, notDone)
	case proto.PeerForbidden:
		v.o, v.detail = localapi.Forbidden, fmt.Sprintf("%s refused us at its door (%s)%s", peer, said, notDone)
	case proto.PeerAppNotFound:
		v.o, v.detail = localapi.NotFound, fmt.Sprintf("%s: %s%s", peer, said, notDone)
	case proto.PeerAppDown, proto.PeerOwnerFailed, proto.PeerFenced, proto.PeerNotDone, proto.PeerNoRoom, proto.PeerBodyCut, proto.PeerBusy:
		v.o, v.detail = localapi.Unavailable, fmt.Sprintf("%s: %s%s", peer, said, notDone)
	case proto.PeerReused:
		v.o, v.detail = localapi.Conflict, fmt.Sprintf("%s: %s%s", peer, said, notDone)
	case proto.PeerBadRequest:
		v.o, v.detail = localapi.BadRequest, fmt.Sprintf("%s refused the request as malformed (%s)%s", peer, said, notDone)
	case proto.PeerTooLarge:
		v.o, v.status, v.detail = localapi.BadRequest, http.StatusRequestEntityTooLarge, fmt.Sprintf("%s refused the request as too large (%s)%s", peer, said, notDone)
	case proto.PeerInProgress, proto.PeerUnknown, proto.PeerAppUnknown, proto.PeerInterrupted, proto.PeerAnswerExpired:
		return callVerdict{state: record.Unknown, o: localapi.Unknown, detail: fmt.Sprintf("%s says: %s; %s", peer, said, Asking(peer))}
	default:
		return callVerdict{state: record.Unknown, o: localapi.Unknown, detail: fmt.Sprintf("%s sent a reply that is not Delta's (%d, X-Delta-Outcome %q); the call may or may not have been carried out; %s",
			peer, r.Status, r.Err, Asking(peer))}
	}
	return v
}

// readFailure is why a read got no answer from the owner app.
type readFailure struct {
	o      localapi.Outcome
	detail string
	road   string
	g      localapi.Guarantee
	// roadFault reports whether the failure was the road's (transport,
	// door), as opposed to the owner app's: only the road's leads to a
	// fallback.
	roadFault bool
	// gaveUp reports that the app's client stopped waiting: nobody is
	// told anything, and the road is kept (DESIGN §2c).
	gaveUp bool
}

// mapOwnerReadReply turns an owner's own reply to a read into what the app
// is told, and whether the road is to blame.
func mapOwnerReadReply(peer, road string, r peerclient.Reply) readFailure {
	said := r.Detail()
	f := readFailure{road: road, detail: fmt.Sprintf("%s: %s", peer, said), g: r.Guarantee()}
	switch r.Err {
	case proto.PeerUnauthorized:
		f.o, f.roadFault = localapi.Forbidden, true
		f.detail = fmt.Sprintf("%s refused us at its door twice, with a renewed ticket too (%s)", peer, said)
	case proto.PeerForbidden:
		f.o, f.roadFault = localapi.Forbidden, true
		f.detail = fmt.Sprintf("%s refused us at its door (%s)", peer, said)
	case proto.PeerAppNotFound:
		f.o = localapi.NotFound
	case proto.PeerTimeout:
		f.o = localapi.Timeout
	case proto.PeerBadRequest:
		f.o = localapi.BadRequest
	case proto.PeerAppBroke:
		f.o = localapi.AppError
	default:
		f.o = localapi.Unavailable
	}
	return f
}
