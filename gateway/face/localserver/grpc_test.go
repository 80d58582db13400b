package localserver

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// TestGRPCStatus is docs/protocol.md §1c's table.
func TestGRPCStatus(t *testing.T) {
	for _, tc := range []struct {
		status int
		o      localapi.Outcome
		g      localapi.Guarantee
		want   int
	}{
		{503, localapi.Unavailable, localapi.NothingSent, grpcUnavailable},
		{409, localapi.Unavailable, localapi.NotCarried, grpcUnavailable},
		{504, localapi.Timeout, localapi.NothingSent, grpcUnavailable},
		{504, localapi.Timeout, localapi.NoGuarantee, grpcDeadlineExceeded},
		{502, localapi.Unknown, localapi.NoGuarantee, grpcUnknown},
		{400, localapi.BadRequest, localapi.NothingSent, grpcInvalidArgument},
		{413, localapi.BadRequest, localapi.NotCarried, grpcResourceExhaust},
		{401, localapi.Unauthorized, localapi.NothingSent, grpcUnauthenticated},
		{403, localapi.Forbidden, localapi.NothingSent, grpcPermissionDenied},
		{404, localapi.NotFound, localapi.NothingSent, grpcNotFound},
		{409, localapi.Conflict, localapi.NothingSent, grpcAlreadyExists},
		{502, "something new", localapi.NoGuarantee, grpcUnknown},
	} {
		if got := GRPCStatus(tc.status, tc.o, tc.g); got != tc.want {
			t.Errorf("%d %s (%d): %d, want %d", tc.status, tc.o, tc.g, got, tc.want)
		}
	}
}

// TestGRPCAnswers: Delta's own answer to a gRPC request is a
// trailers-only gRPC status with its words and metadata; an app's passes
// untouched.
func TestGRPCAnswers(t *testing.T) {
	w := httptest.NewRecorder()
	g := &grpcAnswers{ResponseWriter: w}
	proto.WriteError(g, 503, localapi.ErrorBody{Error: "unavailable", Detail: "no road to studio; nothing was sent 100%", RequestID: "r-1"}.With(localapi.NothingSent))
	g.finish()
	h := w.Result().Header
	if w.Code != 200 || h.Get("Content-Type") != "application/grpc" || h.Get("Grpc-Status") != "14" || w.Body.Len() != 0 ||
		h.Get("Grpc-Message") != "Delta: unavailable: no road to studio; nothing was sent 100%25" || h.Get("X-Delta-Request-Id") != "r-1" {
		t.Errorf("Delta's own: %d %v %q", w.Code, h, w.Body)
	}
	w = httptest.NewRecorder()
	g = &grpcAnswers{ResponseWriter: w}
	g.Header().Set(localapi.HeaderOutcome, string(localapi.Answered))
	g.Header().Set("Content-Type", "application/grpc")
	g.WriteHeader(200)
	g.Write([]byte("\x00\x00\x00\x00\x01x"))
	g.finish()
	if w.Body.String() != "\x00\x00\x00\x00\x01x" || w.Result().Header.Get("Grpc-Status") != "" {
		t.Errorf("an app's answer was changed: %v %q", w.Result().Header, w.Body)
	}
}

// TestGRPCTimeout: grpc-timeout's units, and none for one over Delta's
// longest wait or not gRPC's form.
func TestGRPCTimeout(t *testing.T) {
	for v, want := range map[string]time.Duration{"5S": 5 * time.Second, "100m": 100 * time.Millisecond, "2M": 2 * time.Minute,
		"1H": 0, "999999999S": 0, "10": 0, "": 0, "5x": 0, "-5S": 0, "300u": time.Millisecond, "7n": time.Millisecond} {
		if got := grpcTimeout(http.Header{"Grpc-Timeout": {v}}); got != want {
			t.Errorf("grpc-timeout %q: %v, want %v", v, got, want)
		}
	}
}
