package localserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// The gRPC status codes Delta answers with (grpc/codes; docs/protocol.md
// §1c has the table and why).
const (
	grpcUnknown          = 2
	grpcInvalidArgument  = 3
	grpcDeadlineExceeded = 4
	grpcNotFound         = 5
	grpcAlreadyExists    = 6
	grpcPermissionDenied = 7
	grpcResourceExhaust  = 8
	grpcUnavailable      = 14
	grpcUnauthenticated  = 16
)

// GRPCStatus is the gRPC status of one of Delta's own answers (never an
// app's, which passes as it is): a request refused with nothing sent for
// the request's own fault, as what it is (INVALID_ARGUMENT, NOT_FOUND, …:
// sending it again would be refused again); one that left nothing done,
// or that the owner proved its app did not act on, UNAVAILABLE, the
// status gRPC's clients and retry policies retry; an outcome Delta
// cannot know, UNKNOWN, which no default or common retry policy retries
// (gRPC's transparent retry is only for a stream that never left the
// client; service configs, Envoy and the cloud libraries list
// UNAVAILABLE, and some DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED,
// CANCELLED or INTERNAL, never UNKNOWN).
func GRPCStatus(status int, o localapi.Outcome, g localapi.Guarantee) int {
	switch o {
	case localapi.Unknown, localapi.AppError:
		return grpcUnknown
	case localapi.BadRequest:
		if status == http.StatusRequestEntityTooLarge {
			return grpcResourceExhaust
		}
		return grpcInvalidArgument
	case localapi.Unauthorized:
		return grpcUnauthenticated
	case localapi.Forbidden:
		return grpcPermissionDenied
	case localapi.NotFound:
		return grpcNotFound
	case localapi.Conflict:
		return grpcAlreadyExists
	case localapi.Timeout:
		if g == localapi.NoGuarantee {
			return grpcDeadlineExceeded
		}
	}
	if g == localapi.NoGuarantee && o != localapi.Unavailable {
		return grpcUnknown
	}
	return grpcUnavailable
}

// grpcAnswers is a gRPC request's writer: an app's answer passes as it
// is, and one of Delta's own (an X-Delta-Outcome other than answered, in
// JSON) is turned into a gRPC status when the handler ends (finish): a
// trailers-only answer, 200 with grpc-status, grpc-message (Delta's
// words) and Delta's X-Delta-* headers as metadata (the outcome, the
// request id, the road).
type grpcAnswers struct {
	http.ResponseWriter
	own    bool
	status int
	body   bytes.Buffer
}

func (g *grpcAnswers) WriteHeader(code int) {
	h := g.ResponseWriter.Header()
	if o := h.Get(localapi.HeaderOutcome); !g.own && code >= 200 && o != "" && o != string(localapi.Answered) && o != string(localapi.Stale) &&
		strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		g.own, g.status = true, code
		return
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *grpcAnswers) Write(p []byte) (int, error) {
	if g.own {
		return g.body.Write(p)
	}
	return g.ResponseWriter.Write(p)
}

// FlushError flushes an app's answer; Delta's own waits for finish.
func (g *grpcAnswers) FlushError() error {
	if g.own {
		return nil
	}
	return http.NewResponseController(g.ResponseWriter).Flush()
}

// Unwrap is for http.ResponseController.
func (g *grpcAnswers) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// finish writes Delta's own answer, if the handler wrote one, as its
// gRPC status.
func (g *grpcAnswers) finish() {
	if !g.own {
		return
	}
	var eb localapi.ErrorBody
	json.Unmarshal(g.body.Bytes(), &eb)
	h := g.ResponseWriter.Header()
	h.Del("Content-Length")
	h.Del("Cache-Control")
	h.Set("Content-Type", "application/grpc")
	h.Set("Grpc-Status", strconv.Itoa(GRPCStatus(g.status, localapi.Outcome(eb.Error), eb.Guarantee())))
	h.Set("Grpc-Message", grpcMessage("Delta: "+eb.Error+": "+eb.Detail))
	g.ResponseWriter.WriteHeader(http.StatusOK)
}

// grpcMessage percent-encodes s as grpc-message is (gRPC's HTTP/2
// protocol): every byte outside printable ASCII, and '%'.
func grpcMessage(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '%' {
			b.WriteString("%" + strings.ToUpper(strconv.FormatInt(int64(c)|0x100, 16)[1:]))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// grpcTimeout reads a gRPC request's deadline (grpc-timeout: up to 8
// digits and a unit, H M S m u n) as Delta's wait for its answer's head:
// one Delta allows (up to proto.MaxTimeout), or none, when it is longer
// or unreadable (the client's own deadline still ends the call then).
func grpcTimeout(h http.Header) time.Duration {
	v := h.Get("Grpc-Timeout")
	if len(v) < 2 || len(v) > 9 {
		return 0
	}
	n, err := strconv.ParseInt(v[:len(v)-1], 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	unit := map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second, 'm': time.Millisecond, 'u': time.Microsecond, 'n': time.Nanosecond}[v[len(v)-1]]
	if unit == 0 || time.Duration(n) > proto.MaxTimeout/unit {
		return 0
	}
	return max(time.Duration(n)*unit, time.Millisecond)
}

// h2Answers is an HTTP/2 request's writer: "Connection: close", which
// Delta sets on a call's answer so that an HTTP/1.1 client's connection
// is not reused, would end an HTTP/2 client's whole connection (net/http
// sends GOAWAY for it) and every stream on it; it is dropped.
type h2Answers struct {
	http.ResponseWriter
	wrote bool
}

func (h *h2Answers) head() {
	if !h.wrote {
		h.wrote = true
		h.ResponseWriter.Header().Del("Connection")
	}
}

func (h *h2Answers) WriteHeader(code int) {
	if code >= 200 {
		h.head()
	} else {
		h.ResponseWriter.Header().Del("Connection")
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *h2Answers) Write(p []byte) (int, error) { h.head(); return h.ResponseWriter.Write(p) }

// FlushError flushes the answer.
func (h *h2Answers) FlushError() error {
	h.head()
	return http.NewResponseController(h.ResponseWriter).Flush()
}

// Unwrap is for http.ResponseController.
func (h *h2Answers) Unwrap() http.ResponseWriter { return h.ResponseWriter }
