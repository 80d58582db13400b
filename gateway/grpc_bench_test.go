package gateway_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/delta-roads/delta/api/localapi"
)

// echoServer is grpc-go's interop TestService answering UnaryCall with
// its payload.
type echoServer struct {
	testpb.UnimplementedTestServiceServer
}

func (echoServer) UnaryCall(_ context.Context, in *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{Payload: in.GetPayload()}, nil
}

// BenchmarkGRPCUnary: grpc-go unary calls of 1 KiB, one at a time on one
// client connection, directly and through two Deltas and a forward (each
// a journaled call, at most once; docs/protocol.md §1c). The ratio of the
// two is the figure docs/benchmarks.md reports.
func BenchmarkGRPCUnary(b *testing.B) {
	laptop, studio := pair(b, func(n *node) { n.cfg.Logger = nil })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	testpb.RegisterTestServiceServer(srv, echoServer{})
	go srv.Serve(ln)
	defer srv.Stop()
	studio.register(b, "tests", "http://"+ln.Addr().String())
	r := laptop.c.Must(b, "PUT", "/v1/forwards/studio/tests", []byte(`{}`))
	var f localapi.Forward
	if err := json.Unmarshal(r.Body, &f); err != nil || r.Status != 200 {
		b.Fatalf("open a forward: %d %s", r.Status, r.Body)
	}
	fwd := strings.TrimSuffix(strings.TrimPrefix(f.URL, "http://"), "/")
	req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: make([]byte, 1024)}}
	for _, target := range []struct{ name, addr string }{{"direct", ln.Addr().String()}, {"two-deltas", fwd}} {
		b.Run(target.name, func(b *testing.B) {
			conn, err := grpc.NewClient("passthrough:///"+target.addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDisableRetry())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			c := testpb.NewTestServiceClient(conn)
			for b.Loop() {
				if _, err := c.UnaryCall(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
