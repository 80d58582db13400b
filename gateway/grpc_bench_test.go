package gateway_test

import (
	"context"
	"encoding/json"
	"net"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/delta-roads/delta/api/localapi"
)

// echoServer is grpc-go's interop TestService answering UnaryCall with
// its payload, and each message of FullDuplexCall with its payload as it
// comes.
type echoServer struct {
	testpb.UnimplementedTestServiceServer
}

func (echoServer) FullDuplexCall(st grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	for {
		m, err := st.Recv()
		if err != nil {
			return nil // its end, or its cancel: either way the stream is over
		}
		if err := st.Send(&testpb.StreamingOutputCallResponse{Payload: m.GetPayload()}); err != nil {
			return err
		}
	}
}

func (echoServer) UnaryCall(_ context.Context, in *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{Payload: in.GetPayload()}, nil
}

// BenchmarkGRPCUnary: grpc-go unary calls of 1 KiB on one client
// connection, one at a time (c=1) and 16 at once (c=16), directly and
// through two Deltas and a forward (each a journaled call, at most once;
// docs/protocol.md §1c); and a conversation's round trips (chat: one
// bidirectional stream, each 1 KiB message sent once the one before came
// back), which flow through the Deltas as they come. The ratios of the
// two are the figures docs/benchmarks.md reports.
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
			b.Run("c=1", func(b *testing.B) {
				for b.Loop() {
					if _, err := c.UnaryCall(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("c=16", func(b *testing.B) {
				b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := c.UnaryCall(context.Background(), req); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
			b.Run("chat", func(b *testing.B) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				st, err := c.FullDuplexCall(ctx)
				if err != nil {
					b.Fatal(err)
				}
				m := &testpb.StreamingOutputCallRequest{Payload: req.Payload}
				for b.Loop() {
					if err := st.Send(m); err != nil {
						b.Fatal(err)
					}
					if _, err := st.Recv(); err != nil {
						b.Fatal(err)
					}
				}
				st.CloseSend()
				st.Recv()
			})
		})
	}
}
