package caller

import (
	"strings"
	"testing"

	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// TestMapOwnerReadReply: every reply of an owner's Delta to a read (or a
// session's opening) maps to the outcome its app is told, whether the
// road is at fault (a fall-back is allowed), and the guarantee read from
// the reply's fields, never from its words.
func TestMapOwnerReadReply(t *testing.T) {
	reply := func(e proto.PeerError, g proto.Guarantee, detail string) peerclient.Reply {
		return peerclient.Reply{Status: 400, Err: e, Said: proto.ErrorBody{Error: string(e), Detail: detail}.With(g)}
	}
	for _, tc := range []struct {
		reply     peerclient.Reply
		o         proto.Outcome
		roadFault bool
		g         proto.Guarantee
		says      string // a part of the detail
	}{
		{reply(proto.PeerUnauthorized, proto.NotCarried, "no valid ticket"), proto.Forbidden, true, proto.NotCarried, "refused us at its door twice"},
		{reply(proto.PeerForbidden, proto.NotCarried, "not a peer"), proto.Forbidden, true, proto.NotCarried, "refused us at its door (not a peer"},
		{reply(proto.PeerAppNotFound, proto.NotCarried, proto.NotCarriedOut("no app notes")), proto.NotFound, false, proto.NotCarried, "studio: no app notes"},
		{reply(proto.PeerTimeout, proto.NoGuarantee, "app notes did not answer within 30s"), proto.Timeout, false, proto.NoGuarantee, "did not answer within"},
		{reply(proto.PeerBadRequest, proto.NotCarried, "the path does not make a request"), proto.BadRequest, false, proto.NotCarried, "does not make a request"},
		{reply(proto.PeerAppBroke, proto.NoGuarantee, "app notes broke its answer"), proto.AppError, false, proto.NoGuarantee, "broke its answer"},
		{reply(proto.PeerAppDown, proto.NotCarried, proto.NotCarriedOut("not listening")), proto.Unavailable, false, proto.NotCarried, "not listening"},
		{reply(proto.PeerBusy, proto.NotCarried, proto.NotCarriedOut("over the cap")), proto.Unavailable, false, proto.NotCarried, "over the cap"},
		// No guarantee field: none is made up.
		{peerclient.Reply{Status: 502, Err: proto.PeerError("odd"), Said: proto.ErrorBody{Error: "odd", Detail: "something"}}, proto.Unavailable, false, proto.NoGuarantee, "studio: something"},
	} {
		f := mapOwnerReadReply("studio", "lan", tc.reply)
		if f.o != tc.o || f.roadFault != tc.roadFault || f.g != tc.g || f.road != "lan" || !strings.Contains(f.detail, tc.says) {
			t.Errorf("%s: %s road fault %v guarantee %v road %q %q; want %s %v %v containing %q",
				tc.reply.Err, f.o, f.roadFault, f.g, f.road, f.detail, tc.o, tc.roadFault, tc.g, tc.says)
		}
	}
}
