package owner

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/net/doors"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// flowCall is the owner's side of a flowing call (proto.HeaderFlow: a
// gRPC request, docs/protocol.md §1c). Its receipt is made and marked
// handed before the first byte goes to the app, as any call's; then its
// body passes to the app as it arrives (flowBody), and the app's answer
// to the caller as it comes, both at once. The app is told the request
// ended only when the caller's count of it came and names what arrived;
// a request cut short reaches it as a reset stream (HTTP/2's
// RST_STREAM, which gRPC's servers read as CANCELLED), never as an end.
func (o *Owner) flowCall(w http.ResponseWriter, r *http.Request, t ownerTarget, rid string) {
	if !proto.IsGRPC(r.Header) || !streamedBody(r) {
		doors.RefuseAndClose(w)
		refuse(w, http.StatusBadRequest, proto.PeerBadRequest, fmt.Sprintf("a flowing call (%s) must be a gRPC request whose body streams with the caller's count of it as its trailer (%s)", proto.HeaderFlow, proto.HeaderBodyPassed))
		return
	}
	declared, err := bodyLength(r)
	if err != nil {
		refuse(w, http.StatusBadRequest, proto.PeerBadRequest, err.Error())
		return
	}
	rec := &journal.Receipt{Caller: t.visitor.Node, RequestID: rid, CallerName: t.visitor.Name,
		CallerApp: proto.AppName(t.callerApp), App: t.app.Name, Method: r.Method, Path: t.pathQuery}
	// Durable with Hand's flush, before the app has any of it.
	dec, old, err := o.cfg.DB.Receipts().ReceiveSmall(r.Context(), rec)
	if err != nil {
		doors.RefuseAndClose(w)
		refuse(w, http.StatusServiceUnavailable, proto.PeerOwnerFailed, fmt.Sprintf("%s could not record the call (%v)", o.cfg.Self().Name, err))
		return
	}
	if dec != journal.Forward {
		// Its id is known here. A flowing call is carried once, and its
		// caller never sends one again (it cannot be told apart from
		// another by its body, which it did not sum first).
		doors.RefuseAndClose(w)
		e, what, g := busyError(old)
		body := localapi.ErrorBody{Error: string(e), Detail: fmt.Sprintf("call %s from %s %s; it is not forwarded again", rid, t.visitor.Name, what)}
		proto.WriteError(w, http.StatusConflict, body.With(g))
		return
	}
	ctl := http.NewResponseController(w)
	// Its answer is written while its request is still read; and the
	// door's limit on a request's time is lifted: a stream lives as long
	// as its two apps keep it, and a dead road is found by its keepalives
	// and probes (§1b).
	_ = ctl.EnableFullDuplex()
	_ = ctl.SetReadDeadline(time.Time{})
	fb := &flowBody{r: r, max: o.cfg.MaxCallBytes, declared: declared}
	o.forward(w, r, t, rid, &callBody{size: -1, flow: fb})
	fb.stop(ctl)
}

// flowBody is a flowing call's body on its way to the app: what arrives,
// as it arrives; io.EOF only once the caller's count (the trailer
// X-Delta-Body-Passed, and X-Delta-Body-Length when it was said) names
// what arrived; any other end is an error, which ends the app's stream
// as reset. stop ends it, waiting for a read under way: nothing reads the
// request once its handler has left.
type flowBody struct {
	r        *http.Request
	max      int64
	declared int64 // -1: not said

	mu      sync.Mutex // held while r.Body is read
	n       int64
	err     error // how it ended: io.EOF, or why not
	stopped bool
}

// errFlowStopped ends a flowing call's body that its call outlived: its
// answer ended (or its caller left) before its request.
var errFlowStopped = errors.New("the call ended before its request did")

func (f *flowBody) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	if f.stopped {
		f.err = errFlowStopped
		return 0, f.err
	}
	n, err := f.r.Body.Read(p)
	f.n += int64(n)
	switch {
	case f.n > f.max:
		f.err = fmt.Errorf("the stream is over the limit of %d bytes for a call (max_call_bytes)", f.max)
	case f.declared >= 0 && f.n > f.declared:
		f.err = fmt.Errorf("the body is longer than the %d bytes announced", f.declared)
	case err == io.EOF:
		f.err = f.ended()
	case err != nil:
		f.err = fmt.Errorf("the caller's stream broke off after %d bytes (%w)", f.n, err)
	}
	if f.err != nil && f.err != io.EOF {
		return 0, f.err // nothing more of it reaches the app, not even this
	}
	return n, f.err
}

// ended checks the caller's count at the body's end: io.EOF when it names
// what arrived, else why the body did not arrive whole.
func (f *flowBody) ended() error {
	if f.declared >= 0 && f.n != f.declared {
		return fmt.Errorf("the body did not arrive whole: %d bytes of the %d announced", f.n, f.declared)
	}
	if err := checkTrailer(f.r, &callBody{size: f.n}); err != nil {
		return err
	}
	return io.EOF
}

func (f *flowBody) Close() error { return nil }

// stop ends the body: a read under way ends (the door's read deadline
// passes) and is waited for.
func (f *flowBody) stop(ctl *http.ResponseController) {
	_ = ctl.SetReadDeadline(time.Now())
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
}
