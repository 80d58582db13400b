package caller

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

func resp(status int, kv ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	r := &http.Response{StatusCode: status, Header: h, ContentLength: -1}
	if v := h.Get("Content-Length"); v != "" {
		var n int64
		for _, c := range v {
			n = n*10 + int64(c-'0')
		}
		r.ContentLength = n
	}
	return r
}

func TestResumable(t *testing.T) {
	date := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	http1 := func(t time.Time) string { return t.Format(http.TimeFormat) }
	for _, tc := range []struct {
		name      string
		method    string
		reqRange  string
		resp      *http.Response
		validator string // "" when it may not resume
	}{
		{"strong ETag", "GET", "", resp(200, "Accept-Ranges", "bytes", "ETag", `"v1"`), `"v1"`},
		{"weak ETag only", "GET", "", resp(200, "Accept-Ranges", "bytes", "ETag", `W/"v1"`), ""},
		{"no Accept-Ranges", "GET", "", resp(200, "ETag", `"v1"`), ""},
		{"Accept-Ranges none", "GET", "", resp(200, "Accept-Ranges", "none", "ETag", `"v1"`), ""},
		{"Last-Modified a second before Date", "GET", "", resp(200, "Accept-Ranges", "bytes", "Last-Modified", http1(date.Add(-time.Second)), "Date", http1(date)), http1(date.Add(-time.Second))},
		{"Last-Modified equal to Date", "GET", "", resp(200, "Accept-Ranges", "bytes", "Last-Modified", http1(date), "Date", http1(date)), ""},
		{"Last-Modified without Date", "GET", "", resp(200, "Accept-Ranges", "bytes", "Last-Modified", http1(date)), ""},
		{"a 206 the app asked for", "GET", "bytes=0-9", resp(206, "Accept-Ranges", "bytes", "ETag", `"v1"`), ""},
		{"not 200", "GET", "", resp(203, "Accept-Ranges", "bytes", "ETag", `"v1"`), ""},
		{"HEAD", "HEAD", "", resp(200, "Accept-Ranges", "bytes", "ETag", `"v1"`), ""},
	} {
		h := http.Header{}
		if tc.reqRange != "" {
			h.Set("Range", tc.reqRange)
		}
		v, why := Resumable(tc.method, h, tc.resp)
		if v != tc.validator || (v == "") != (why != "") {
			t.Errorf("%s: validator %q, why %q; want validator %q", tc.name, v, why, tc.validator)
		}
	}
}

func TestContinues(t *testing.T) {
	first := resp(200, "Content-Length", "1000", "ETag", `"v1"`)
	for _, tc := range []struct {
		name string
		next *http.Response
		ok   bool
	}{
		{"exactly the rest", resp(206, "Content-Range", "bytes 400-999/1000", "ETag", `"v1"`), true},
		{"a 200: the resource changed", resp(200, "ETag", `"v2"`), false},
		{"another start", resp(206, "Content-Range", "bytes 0-999/1000", "ETag", `"v1"`), false},
		{"short of the end", resp(206, "Content-Range", "bytes 400-899/1000", "ETag", `"v1"`), false},
		{"another length", resp(206, "Content-Range", "bytes 400-1099/1100", "ETag", `"v1"`), false},
		{"another ETag", resp(206, "Content-Range", "bytes 400-999/1000", "ETag", `"v2"`), false},
		{"no Content-Range", resp(206, "ETag", `"v1"`), false},
	} {
		why := Continues(first, tc.next, 400)
		if (why == "") != tc.ok {
			t.Errorf("%s: %q", tc.name, why)
		}
	}
	// Resumed on Last-Modified: the continuation must carry the same one
	// (an owner that ignores If-Range after the file changed).
	lm := "Tue, 01 Dec 2026 10:00:00 GMT"
	first = resp(200, "Content-Length", "1000", "Last-Modified", lm)
	for _, tc := range []struct {
		name string
		next *http.Response
		ok   bool
	}{
		{"the same version", resp(206, "Content-Range", "bytes 400-999/1000", "Last-Modified", lm), true},
		{"a newer version", resp(206, "Content-Range", "bytes 400-999/1000", "Last-Modified", "Thu, 03 Dec 2026 10:00:00 GMT"), false},
		{"no Last-Modified", resp(206, "Content-Range", "bytes 400-999/1000"), false},
	} {
		if why := Continues(first, tc.next, 400); (why == "") != tc.ok {
			t.Errorf("%s: %q", tc.name, why)
		}
	}
}

// mapOwnerReply reads the owner's guarantee from its fields; every reply
// the owner's Delta makes maps to one state, and only the app's answer is
// answered.
func TestMapOwnerReply(t *testing.T) {
	refusal := func(e proto.PeerError, g localapi.Guarantee, detail string) peerclient.Reply {
		return peerclient.Reply{Status: 409, Err: e, Said: localapi.ErrorBody{Error: string(e), Detail: detail}.With(g)}
	}
	for _, tc := range []struct {
		reply  peerclient.Reply
		state  record.CallState
		o      localapi.Outcome
		g      localapi.Guarantee
		suffix string // the detail ends so
	}{
		{peerclient.Reply{Status: 201, Err: proto.PeerAnswered}, record.Answered, localapi.Answered, localapi.NoGuarantee, ""},
		{refusal(proto.PeerUnauthorized, localapi.NotCarried, "studio refused the request at its door: no valid ticket"), record.Unavailable, localapi.Forbidden, localapi.NotCarried, "; it was not carried out"},
		{refusal(proto.PeerForbidden, localapi.NotCarried, "studio refused the request at its door: not a peer"), record.Unavailable, localapi.Forbidden, localapi.NotCarried, "; it was not carried out"},
		{refusal(proto.PeerAppNotFound, localapi.NotCarried, proto.NotCarriedOut("no app")), record.Unavailable, localapi.NotFound, localapi.NotCarried, "nothing was carried out"},
		{refusal(proto.PeerAppDown, localapi.NotCarried, proto.NotCarriedOut("not listening")), record.Unavailable, localapi.Unavailable, localapi.NotCarried, "nothing was carried out"},
		{refusal(proto.PeerNoRoom, localapi.NotCarried, proto.NotCarriedOut("no room")), record.Unavailable, localapi.Unavailable, localapi.NotCarried, "nothing was carried out"},
		{refusal(proto.PeerBodyCut, localapi.NotCarried, proto.NotCarriedOut("the body did not arrive whole")), record.Unavailable, localapi.Unavailable, localapi.NotCarried, "nothing was carried out"},
		{refusal(proto.PeerFenced, localapi.NotCarried, proto.NotCarriedOut("fenced")), record.Unavailable, localapi.Unavailable, localapi.NotCarried, "nothing was carried out"},
		{refusal(proto.PeerReused, localapi.NotCarried, proto.NotCarriedOut("another request")), record.Unavailable, localapi.Conflict, localapi.NotCarried, "nothing was carried out"},
		{refusal(proto.PeerTooLarge, localapi.NotCarried, proto.NotCarriedOut("too large")), record.Unavailable, localapi.BadRequest, localapi.NotCarried, "nothing was carried out)"},
		// An owner's refusal without the guarantee field gets the words.
		{refusal(proto.PeerAppDown, localapi.NoGuarantee, "not listening"), record.Unavailable, localapi.Unavailable, localapi.NotCarried, "; it was not carried out"},
		{refusal(proto.PeerInProgress, localapi.NoGuarantee, "running"), record.Unknown, localapi.Unknown, localapi.NoGuarantee, Asking("studio")},
		{refusal(proto.PeerUnknown, localapi.NoGuarantee, "broke"), record.Unknown, localapi.Unknown, localapi.NoGuarantee, Asking("studio")},
		{refusal(proto.PeerAppUnknown, localapi.NoGuarantee, "broke"), record.Unknown, localapi.Unknown, localapi.NoGuarantee, Asking("studio")},
		{refusal(proto.PeerInterrupted, localapi.NoGuarantee, "restarted"), record.Unknown, localapi.Unknown, localapi.NoGuarantee, Asking("studio")},
		{refusal(proto.PeerAnswerExpired, localapi.NoGuarantee, "expired"), record.Unknown, localapi.Unknown, localapi.NoGuarantee, Asking("studio")},
		// A reply that is not Delta's.
		{peerclient.Reply{Status: 200}, record.Unknown, localapi.Unknown, localapi.NoGuarantee, Asking("studio")},
	} {
		v := mapOwnerReply("studio", tc.reply)
		if v.state != tc.state || v.o != tc.o || v.g != tc.g || !strings.HasSuffix(v.detail, tc.suffix) {
			t.Errorf("%q: %s %s %d %q; want %s %s %d ending %q", tc.reply.Err, v.state, v.o, v.g, v.detail, tc.state, tc.o, tc.g, tc.suffix)
		}
		if strings.Count(v.detail, "carried out") > 1 {
			t.Errorf("%q: the guarantee is said twice: %q", tc.reply.Err, v.detail)
		}
	}
}

// TestTooLargeIs413: the owner's too_large reaches the app as 413, as the
// caller's own refusal of a body over its limit does (issue 34 U6).
func TestTooLargeIs413(t *testing.T) {
	v := mapOwnerReply("studio", peerclient.Reply{Status: 413, Err: proto.PeerTooLarge,
		Said: localapi.ErrorBody{Error: string(proto.PeerTooLarge), Detail: proto.NotCarriedOut("the body is over studio's limit")}.With(localapi.NotCarried)})
	if v.o != localapi.BadRequest || v.status != 413 || v.g != localapi.NotCarried || !strings.Contains(v.detail, "too large") {
		t.Errorf("too_large: %+v", v)
	}
}

// TestUntouched: a body may be sent once more only when nothing of it
// was passed on; a flowing body reads nothing ahead, so its count says.
func TestUntouched(t *testing.T) {
	b := &callBody{src: strings.NewReader("message"), max: 1 << 20, declared: -1, flow: true}
	if !b.untouched() {
		t.Fatal("a flowing body nothing of which was read is not untouched")
	}
	if _, err := b.Read(make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	if b.untouched() {
		t.Error("a flowing body 3 bytes of which passed is untouched: it would be sent again without them")
	}
}
