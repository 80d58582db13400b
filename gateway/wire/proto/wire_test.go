package proto

import (
	"net/http"
	"testing"
)

func TestGuaranteeWords(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{NotSent("no road", ""), "no road; nothing was sent"},
		{NotSent("studio did not answer", "studio"), "studio did not answer; nothing was sent to studio"},
		{NotCarriedOut("no app \"notes\" is registered on studio"), "no app \"notes\" is registered on studio; nothing was carried out"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}

// TestIsClientOrigin: every header that proxies use to tell an app about
// its client is known, however it is spelled (issue 63, D7); others are
// not.
func TestIsClientOrigin(t *testing.T) {
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "x-forwarded-host", "X-Forwarded-Proto", "X-Forwarded-Port", "X-Forwarded-Ssl",
		"X-Forwarded-Scheme", "X-Forwarded-Server", "X-Forwarded-Uri", "X-Forwarded-Prefix", "X_Forwarded_For", "x_forwarded_proto", "X-FORWARDED-FOR",
		"X-Original-URL", "X-Rewrite-URL", "X-Real-IP", "X-Client-IP", "True-Client-IP", "X_Real_Ip", "X-Original-Host", "X-Host",
		"X-Cluster-Client-IP", "CF-Connecting-IP", "Fastly-Client-IP", "X-Forwarded"} {
		if !IsClientOrigin(k) {
			t.Errorf("%s is not taken for a client's origin", k)
		}
	}
	for _, k := range []string{"Host", "Origin", "Referer", "X-Forwarder", "Forwarded-For-Me", "X-Delta-Host", "Accept", "Destination"} {
		if IsClientOrigin(k) {
			t.Errorf("%s is taken for a client's origin", k)
		}
	}
}

// BenchmarkIsClientOrigin: the check runs on every header of every
// request, on both hops (a request's usual headers, one of them a
// client's X-Forwarded-For).
func BenchmarkIsClientOrigin(b *testing.B) {
	hs := []string{"Accept", "User-Agent", "X-Forwarded-For", "Content-Type", "X-Delta-Request-Id", "Authorization", "Cookie", "Accept-Encoding"}
	b.ReportAllocs()
	for b.Loop() {
		for _, h := range hs {
			IsClientOrigin(h)
		}
	}
}

// TestIsGRPC: gRPC's content types, not gRPC-Web's nor another's.
func TestIsGRPC(t *testing.T) {
	for ct, want := range map[string]bool{"application/grpc": true, "application/grpc+proto": true, "Application/GRPC;charset=x": true,
		"application/grpc-web": false, "application/grpc-web+proto": false, "application/json": false, "": false, "application/grpcx": false} {
		if got := IsGRPC(http.Header{"Content-Type": {ct}}); got != want {
			t.Errorf("%q: %v", ct, got)
		}
	}
}
