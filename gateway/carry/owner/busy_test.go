package owner

import (
	"strings"
	"testing"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// TestBusyError: a call whose request id the owner holds already is
// refused with the receipt's state as its error, and with what the owner
// can promise: "not carried out" only where its receipt says so (fenced,
// not carried out), nothing where the app has it or had it.
func TestBusyError(t *testing.T) {
	for _, tc := range []struct {
		state proto.ReceiptState
		err   proto.PeerError
		g     localapi.Guarantee
		says  string
	}{
		{proto.ReceiptRunning, proto.PeerInProgress, localapi.NoGuarantee, "is being carried out now"},
		{proto.ReceiptFenced, proto.PeerFenced, localapi.NotCarried, "nothing was carried out"},
		{proto.ReceiptAnswered, proto.PeerAnswerExpired, localapi.NoGuarantee, "no longer kept"},
		{proto.ReceiptNotCarriedOut, proto.PeerNotDone, localapi.NotCarried, "nothing was carried out"},
		{proto.ReceiptInterrupted, proto.PeerError(proto.ReceiptInterrupted), localapi.NoGuarantee, "is interrupted"},
		{proto.ReceiptAppUnknown, proto.PeerError(proto.ReceiptAppUnknown), localapi.NoGuarantee, "is app_unknown"},
	} {
		e, detail, g := busyError(&journal.Receipt{State: tc.state})
		if e != tc.err || g != tc.g || !strings.Contains(detail, tc.says) {
			t.Errorf("%s: %s %q %v; want %s %v containing %q", tc.state, e, detail, g, tc.err, tc.g, tc.says)
		}
	}
}
