package caller

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// FuzzOwnerAnswer feeds arbitrary bytes to the caller as an owner's answer
// to a call (status line, headers, interim answers, chunking) and reads it
// as the caller does: the head past interim answers, the reply classified
// and mapped, what has arrived taken ahead, the body. Whatever came: no
// interim answer is the answer, an answer that ended cleanly is whole (its
// announced length met), and the mapping gives one of the states a call
// may end in.
func FuzzOwnerAnswer(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 201 Created\r\nX-Delta-Outcome: answered\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 201 Created\r\nX-Delta-Outcome: answered\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-Delta-Outcome: answered\r\nContent-Length: 10\r\n\r\nshort",
		"HTTP/1.1 200 OK\r\nX-Delta-Outcome: answered\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
		"HTTP/1.1 503 Service Unavailable\r\nX-Delta-Outcome: app_unavailable\r\nContent-Type: application/json\r\n\r\n{\"error\":\"app_unavailable\",\"detail\":\"x; nothing was carried out\",\"carried_out\":false}",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
		"HTTP/1.1 409 Conflict\r\nX-Delta-Outcome: in_progress\r\nContent-Length: 3\r\n\r\n{}x",
		"garbage",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		near, far := net.Pipe()
		go func() {
			io.Copy(io.Discard, io.LimitReader(far, 1<<16)) // the request
		}()
		go func() {
			far.Write(raw)
			far.Close()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequest("POST", "http://studio/delta/v1/apps/notes/x", nil)
		var interim []int
		a, err := h1.Once(ctx, near, req, h1.Options{Idle: time.Second, Wait: time.Second,
			Got1xx: func(code int, _ http.Header) { interim = append(interim, code) }})
		if err != nil {
			var oe *h1.Error
			if !errors.As(err, &oe) || !oe.Sent {
				t.Fatalf("a failed answer is not an exchange error that was sent: %v", err)
			}
			return
		}
		defer a.Body.Close()
		if a.StatusCode >= 100 && a.StatusCode < 200 && a.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("the interim answer %d was taken for the answer", a.StatusCode)
		}
		for _, c := range interim {
			if c < 100 || c >= 200 || c == http.StatusSwitchingProtocols {
				t.Fatalf("%d told as an interim answer", c)
			}
		}
		reply := peerclient.Classify(a.Response)
		v := mapOwnerReply("studio", reply)
		switch v.state {
		case "answered", "unavailable", "unknown":
		default:
			t.Fatalf("the reply mapped to %q", v.state)
		}
		if v.o == localapi.Answered && v.detail != "" || v.o != localapi.Answered && v.detail == "" {
			t.Fatalf("outcome %s with detail %q", v.o, v.detail)
		}
		if reply.Err != proto.PeerAnswered {
			return
		}
		if a.StatusCode < 100 || a.StatusCode > 999 {
			t.Fatalf("status %d, which no app can be told, classified as answered", a.StatusCode)
		}
		ahead, whole, err := a.ReadAhead(proto.MaxStoredAnswer)
		rest, rerr := io.ReadAll(a.Body)
		n := int64(len(ahead) + len(rest))
		if whole && len(rest) != 0 {
			t.Fatalf("ReadAhead said whole and %d bytes followed", len(rest))
		}
		if err == nil && rerr == nil && a.ContentLength >= 0 && n != a.ContentLength {
			t.Fatalf("a body of %d bytes ended cleanly with %d of them (Content-Length %s)", a.ContentLength, n, strconv.FormatInt(a.ContentLength, 10))
		}
	})
}
