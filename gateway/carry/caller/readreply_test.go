package caller

import (
	"strings"
	"testing"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// TestMapOwnerReadReply: every reply of an owner's Delta to a read (or a
// session's opening) maps to the outcome its app is told, whether the
// road is at fault (a fall-back is allowed), and the guarantee read from
// the reply's fields, never from its words.
func TestMapOwnerReadReply(t *testing.T) {
	reply := func(e proto.PeerError, g localapi.Guarantee, detail string) peerclient.Reply {
		return peerclient.Reply{Status: 400, Err: e, Said: localapi.ErrorBody{Error: string(e), Detail: detail}.With(g)}
	}
	for _, tc := range []struct {
		reply     peerclient.Reply
		o         localapi.Outcome
		roadFault bool
		g         localapi.Guarantee
		says      string // a part of the detail
	}{
		{reply(proto.PeerUnauthorized, localapi.NotCarried, "no valid ticket"), localapi.Forbidden, true, localapi.NotCarried, "refused us at its door twice"},
		{reply(proto.PeerForbidden, localapi.NotCarried, "not a peer"), localapi.Forbidden, true, localapi.NotCarried, "refused us at its door (not a peer"},
		{reply(proto.PeerAppNotFound, localapi.NotCarried, proto.NotCarriedOut("no app notes")), localapi.NotFound, false, localapi.NotCarried, "studio: no app notes"},
		{reply(proto.PeerTimeout, localapi.NoGuarantee, "app notes did not answer within 30s"), localapi.Timeout, false, localapi.NoGuarantee, "did not answer within"},
		{reply(proto.PeerBadRequest, localapi.NotCarried, "the path does not make a request"), localapi.BadRequest, false, localapi.NotCarried, "does not make a request"},
		{reply(proto.PeerAppBroke, localapi.NoGuarantee, "app notes broke its answer"), localapi.AppError, false, localapi.NoGuarantee, "broke its answer"},
		{reply(proto.PeerAppDown, localapi.NotCarried, proto.NotCarriedOut("not listening")), localapi.Unavailable, false, localapi.NotCarried, "not listening"},
		{reply(proto.PeerBusy, localapi.NotCarried, proto.NotCarriedOut("over the cap")), localapi.Unavailable, false, localapi.NotCarried, "over the cap"},
		// No guarantee field: none is made up.
		{peerclient.Reply{Status: 502, Err: proto.PeerError("odd"), Said: localapi.ErrorBody{Error: "odd", Detail: "something"}}, localapi.Unavailable, false, localapi.NoGuarantee, "studio: something"},
	} {
		f := mapOwnerReadReply("studio", "lan", tc.reply)
		if f.o != tc.o || f.roadFault != tc.roadFault || f.g != tc.g || f.road != "lan" || !strings.Contains(f.detail, tc.says) {
			t.Errorf("%s: %s road fault %v guarantee %v road %q %q; want %s %v %v containing %q",
				tc.reply.Err, f.o, f.roadFault, f.g, f.road, f.detail, tc.o, tc.roadFault, tc.g, tc.says)
		}
	}
}
