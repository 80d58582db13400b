package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// grpcGoServer is grpc-go's interop TestService as an app: UnaryCall
// echoes its payload with trailing metadata x-length (a ResponseStatus
// is answered as that status; a payload "slow" waits for its deadline),
// a payload "hold" is answered once the test releases it,
// StreamingOutputCall sends one message, then the second only once the
// client has the first (next), StreamingInputCall sums its payloads,
// FullDuplexCall answers each message as it comes, and tells ended how
// its request stream ended (nil: whole, as io.EOF said).
type grpcGoServer struct {
	testpb.UnimplementedTestServiceServer
	next chan struct{}
	// held and release: a payload "hold" is told on held, and answered
	// once release closes.
	held    chan struct{}
	release chan struct{}
	holds   atomic.Int32 // the "hold" calls the app was sent
	ended   chan error
}

func (s *grpcGoServer) FullDuplexCall(st grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	for {
		m, err := st.Recv()
		if err == io.EOF {
			s.ended <- nil
			return nil
		}
		if err != nil {
			s.ended <- err
			return err
		}
		if err := st.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: append([]byte("echo:"), m.GetPayload().GetBody()...)}}); err != nil {
			s.ended <- err
			return err
		}
	}
}

func (s *grpcGoServer) UnaryCall(ctx context.Context, in *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if st := in.GetResponseStatus(); st != nil {
		return nil, status.Error(codes.Code(st.Code), st.Message)
	}
	if string(in.GetPayload().GetBody()) == "hold" {
		s.holds.Add(1)
		s.held <- struct{}{}
		<-s.release
		return &testpb.SimpleResponse{Payload: in.GetPayload()}, nil
	}
	if string(in.GetPayload().GetBody()) == "slow" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	md, _ := metadata.FromIncomingContext(ctx)
	grpc.SetTrailer(ctx, metadata.Pairs("x-length", strconv.Itoa(len(in.GetPayload().GetBody())), "x-echo", strings.Join(md.Get("x-app-meta"), ",")))
	return &testpb.SimpleResponse{Payload: in.GetPayload()}, nil
}

func (s *grpcGoServer) StreamingOutputCall(in *testpb.StreamingOutputCallRequest, st grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	if err := st.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: []byte("one")}}); err != nil {
		return err
	}
	select {
	case <-s.next:
	case <-st.Context().Done():
		return status.Error(codes.FailedPrecondition, "the client never had the first message before the stream ended")
	}
	return st.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: []byte("two")}})
}

func (s *grpcGoServer) StreamingInputCall(st grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	n := 0
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return st.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: int32(n)})
		}
		if err != nil {
			return err
		}
		n += len(m.GetPayload().GetBody())
	}
}

// grpcGoChecks runs grpc-go's client against target: unary with an
// 8 MiB message and metadata both ways, server streaming that flows,
// client streaming, an app's status, a deadline.
func grpcGoChecks(t *testing.T, target string, app *grpcGoServer) {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)), grpc.WithDisableRetry())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := testpb.NewTestServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	big := make([]byte, 8<<20)
	rand.Read(big)
	var trailer metadata.MD
	resp, err := c.UnaryCall(metadata.AppendToOutgoingContext(ctx, "x-app-meta", "m1"), &testpb.SimpleRequest{Payload: &testpb.Payload{Body: big}}, grpc.Trailer(&trailer))
	if err != nil || !bytes.Equal(resp.GetPayload().GetBody(), big) || strings.Join(trailer.Get("x-length"), "") != strconv.Itoa(len(big)) || strings.Join(trailer.Get("x-echo"), "") != "m1" {
		t.Fatalf("%s: unary: %v (trailer %v)", target, err, trailer)
	}

	st, err := c.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.Recv(); err != nil || string(m.GetPayload().GetBody()) != "one" {
		t.Fatalf("%s: the first message: %v %v", target, m, err)
	}
	app.next <- struct{}{} // the server sends "two" only now
	if m, err := st.Recv(); err != nil || string(m.GetPayload().GetBody()) != "two" {
		t.Fatalf("%s: the second message: %v %v", target, m, err)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("%s: the stream's end: %v", target, err)
	}

	up, err := c.StreamingInputCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{10, 20, 30} {
		up.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, n)}})
	}
	if r, err := up.CloseAndRecv(); err != nil || r.GetAggregatedPayloadSize() != 60 {
		t.Fatalf("%s: client streaming: %v %v", target, r, err)
	}

	// Bidirectional, as a conversation: each message is sent only once
	// the answer to the one before it came; the server sees its end.
	chat, err := c.FullDuplexCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		say := "m" + strconv.Itoa(i)
		if err := chat.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte(say)}}); err != nil {
			t.Fatalf("%s: chat send %d: %v", target, i, err)
		}
		if m, err := chat.Recv(); err != nil || string(m.GetPayload().GetBody()) != "echo:"+say {
			t.Fatalf("%s: chat answer %d: %v %v", target, i, m, err)
		}
	}
	chat.CloseSend()
	if _, err := chat.Recv(); err != io.EOF {
		t.Fatalf("%s: the chat's end: %v", target, err)
	}
	if err := <-app.ended; err != nil {
		t.Fatalf("%s: the server saw the chat's request end with %v, want its end", target, err)
	}

	// A conversation its client cancels halfway: the server sees it
	// cancelled, never ended as whole.
	cctx, cancelChat := context.WithCancel(ctx)
	chat, err = c.FullDuplexCall(cctx)
	if err != nil {
		t.Fatal(err)
	}
	chat.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte("half")}})
	if m, err := chat.Recv(); err != nil || string(m.GetPayload().GetBody()) != "echo:half" {
		t.Fatalf("%s: the cancelled chat's answer: %v %v", target, m, err)
	}
	cancelChat()
	if err := <-app.ended; status.Code(err) != codes.Canceled {
		t.Fatalf("%s: the server saw a cancelled chat end with %v, want CANCELLED", target, err)
	}

	_, err = c.UnaryCall(ctx, &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.NotFound), Message: "no such note"}})
	if s := status.Convert(err); s.Code() != codes.NotFound || s.Message() != "no such note" {
		t.Fatalf("%s: an app's status: %v", target, err)
	}

	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	_, err = c.UnaryCall(short, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("slow")}})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("%s: a deadline: %v", target, err)
	}
}

// startGRPCGo starts the grpc-go app, stopped when the test ends.
func startGRPCGo(t *testing.T) (*grpcGoServer, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &grpcGoServer{next: make(chan struct{}), held: make(chan struct{}, 1), release: make(chan struct{}), ended: make(chan error, 1)}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20))
	testpb.RegisterTestServiceServer(srv, app)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Error(err)
		}
	})
	return app, ln.Addr().String()
}

// TestGRPCGo: grpc-go's client and server (its interop TestService)
// through two Deltas as processes and a forward, the same checks run
// directly first.
func TestGRPCGo(t *testing.T) {
	_, _, app, addr, fwd := grpcGoPair(t)
	grpcGoChecks(t, addr, app)
	grpcGoChecks(t, fwd, app)
}

// TestGRPCOwnerCrash: the owner's Delta is killed while its app holds a
// gRPC call, which the app then answers into the void: the client is
// told UNKNOWN, which its retry policies never retry, with
// x-delta-outcome outcome_unknown and the request id it sent; Delta
// never sends it again, and once the owner is back, reconciliation
// settles it as far as the owner knows: interrupted, so a person decides
// (needs_person), and the app had it once.
func TestGRPCOwnerCrash(t *testing.T) {
	laptop, studio, app, _, fwd := grpcGoPair(t)
	conn, err := grpc.NewClient("passthrough:///"+fwd, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDisableRetry())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const id = "grpc-crash-1"
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-delta-request-id", id), time.Minute)
	defer cancel()
	var trailer metadata.MD
	told := make(chan error, 1)
	go func() {
		_, err := testpb.NewTestServiceClient(conn).UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("hold")}}, grpc.Trailer(&trailer))
		told <- err
	}()
	<-app.held
	studio.kill(t)
	err = <-told
	close(app.release)
	if s := status.Convert(err); s.Code() != codes.Unknown || !strings.Contains(s.Message(), "outcome_unknown") ||
		strings.Join(trailer.Get("x-delta-outcome"), "") != "outcome_unknown" || strings.Join(trailer.Get("x-delta-request-id"), "") != id {
		t.Fatalf("the gRPC client was told %v (metadata %v), want UNKNOWN with outcome_unknown and %s", err, trailer, id)
	}
	studio.start(t)
	if call := laptop.c.GetCall(t, id, 60); call.State != "needs_person" || call.OwnerState != "interrupted" || call.Path != "/grpc.testing.TestService/UnaryCall" {
		t.Fatalf("the call is %s (owner says %q, path %s: %s), want needs_person after interrupted", call.State, call.OwnerState, call.Path, call.Detail)
	}
	if n := app.holds.Load(); n != 1 {
		t.Errorf("the app was sent the call %d times, want once", n)
	}
}

// grpcGoPair starts laptop and studio, and on studio the grpc-go app
// registered as "tests", with laptop's forward to it: the app, its
// address and the forward's (host:port, a gRPC client's target).
func grpcGoPair(t *testing.T) (laptop, studio *proc, app *grpcGoServer, addr, fwd string) {
	t.Helper()
	laptop, studio = twoProcs(t)
	studio.start(t)
	laptop.start(t)
	app, addr = startGRPCGo(t)
	studio.register(t, "tests", "http://"+addr)
	fwd = strings.TrimSuffix(strings.TrimPrefix(forwardURL(t, laptop, "tests"), "http://"), "/")
	return laptop, studio, app, addr, fwd
}

// TestGRPCCallerCrash: the caller's Delta is killed (SIGKILL) halfway
// through a bidirectional conversation that flows both ways: the app's
// server sees its request stream cancelled, never ended as whole (what
// arrived was passed as it came; its end is given only with the
// caller's count of it), and its client is told the stream broke.
func TestGRPCCallerCrash(t *testing.T) {
	laptop, _, app, _, fwd := grpcGoPair(t)
	conn, err := grpc.NewClient("passthrough:///"+fwd, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDisableRetry())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chat, err := testpb.NewTestServiceClient(conn).FullDuplexCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	chat.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte("first")}})
	if m, err := chat.Recv(); err != nil || string(m.GetPayload().GetBody()) != "echo:first" {
		t.Fatalf("the first answer: %v %v", m, err)
	}
	laptop.kill(t)
	if err := <-app.ended; status.Code(err) != codes.Canceled {
		t.Fatalf("the server saw the stream of a killed caller end with %v, want CANCELLED", err)
	}
	if _, err := chat.Recv(); status.Code(err) != codes.Unavailable && status.Code(err) != codes.Internal {
		t.Errorf("the client of a killed Delta was told %v", err)
	}
}
