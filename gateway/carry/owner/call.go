package owner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/relay"
	"github.com/delta-roads/delta/gateway/net/doors"
	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// spoolReserve is the room a call's body must leave free on the state
// folder's file system, so that the journal can still write.
const spoolReserve = 64 << 20

// roomWords says why self has no room for a call's body of size bytes
// with free bytes free, in units a person reads, the reserve named.
func roomWords(self string, free, size int64) string {
	return fmt.Sprintf("%s has no room for the call's body: its disk has %s free, the body is %s, and Delta keeps %s free for its journal",
		self, view.Bytes(max(free, 0)), view.Bytes(max(size, 0)), view.Bytes(spoolReserve))
}

// ownerCall is the owner's side of a call (DESIGN §2a, §4): the receipt
// is made when the call's head arrives, durably, before its body is read
// (a question about the id meanwhile is answered running); the body is
// then read whole (into memory when small, into a spool file otherwise)
// and checked, length and digest, and only then is the app asked once. An
// app never sees part of a call. Its answer is recorded before it is sent
// back, at its head when it streams.
func (o *Owner) ownerCall(w http.ResponseWriter, r *http.Request, t ownerTarget) {
	rid := r.Header.Get(localapi.HeaderRequestID)
	if err := proto.CheckRequestID(rid); err != nil {
		refuse(w, http.StatusBadRequest, proto.PeerBadRequest, err.Error())
		return
	}
	o.step(rid, "arrived")
	if r.Header.Get(proto.HeaderFlow) != "" {
		o.flowCall(w, r, t, rid)
		return
	}
	// The digest comes as a header when the caller had the body whole. A
	// streamed body comes with the caller's count of it as its trailer
	// (X-Delta-Body-Passed), and this side's sum is the call's digest (one
	// hash pass); a caller before that sent its own digest as the trailer,
	// which is still checked. A call with none of them comes from a caller
	// with a bug worth hearing about: refused, nothing read.
	digest := r.Header.Get(proto.HeaderDigest)
	streamed := streamedBody(r)
	if digest == "" && !streamed {
		doors.RefuseAndClose(w)
		refuse(w, http.StatusBadRequest, proto.PeerBadRequest, "the call carries no X-Delta-Digest (a header) and is not a streamed body (the trailer X-Delta-Body-Passed): the caller's Delta must name what it sends")
		return
	}
	size := r.ContentLength
	if streamed {
		var err error
		if size, err = bodyLength(r); err != nil {
			refuse(w, http.StatusBadRequest, proto.PeerBadRequest, err.Error())
			return
		}
	}
	if size > o.cfg.MaxCallBytes {
		doors.RefuseAndClose(w)
		refuse(w, http.StatusRequestEntityTooLarge, proto.PeerTooLarge, fmt.Sprintf("the body is %d bytes, over %s's limit of %d bytes for a call (max_call_bytes)", size, o.cfg.Self().Name, o.cfg.MaxCallBytes))
		return
	}
	inMemory := size >= 0 && size <= proto.InMemoryBody
	if !inMemory {
		if free, err := o.cfg.FreeBytes(o.cfg.SpoolDir); err == nil && free-max(size, 0) < spoolReserve {
			doors.RefuseAndClose(w)
			refuse(w, http.StatusInsufficientStorage, proto.PeerNoRoom, roomWords(o.cfg.Self().Name, free, size))
			return
		}
	}
	rec := &journal.Receipt{Caller: t.visitor.Node, RequestID: rid, Digest: digest, CallerName: t.visitor.Name,
		CallerApp: proto.AppName(t.callerApp), App: t.app.Name, Method: r.Method, Path: t.pathQuery}
	receive := o.cfg.DB.Receipts().Receive
	if inMemory {
		receive = o.cfg.DB.Receipts().ReceiveSmall // durable with HandReceipt's flush, before the app has it
	}
	dec, old, err := receive(r.Context(), rec)
	if err != nil {
		doors.RefuseAndClose(w)
		refuse(w, http.StatusServiceUnavailable, proto.PeerOwnerFailed, fmt.Sprintf("%s could not record the call (%v)", o.cfg.Self().Name, err))
		return
	}
	// said is the digest this side says in its reply, once it has summed
	// a streamed body: the caller's Delta records it as the call's.
	said := ""
	if dec == journal.Later {
		// The id is held, and this call's digest is known only once its
		// body has passed: read it (nothing is forwarded), then decide.
		b, err := o.receiveBody(w, r, t, size, inMemory)
		if err != nil {
			o.refuseBody(w, err)
			return
		}
		b.close()
		dec = journal.Decide(old, b.digest)
		if streamed {
			said = b.digest
			w.Header().Set(proto.HeaderDigest, said) // on every reply from here
		}
	}
	switch dec {
	case journal.Reused:
		doors.RefuseAndClose(w)
		refuse(w, http.StatusUnprocessableEntity, proto.PeerReused, fmt.Sprintf("request id %s from %s was used for another request (%s %s at %s)", rid, t.visitor.Name, old.Method, old.Path, old.ReceivedAt.Format(time.RFC3339)))
		return
	case journal.Replay:
		o.cfg.OnReplay()
		if old.Behind {
			o.markBehind(w)
		}
		doors.RefuseAndClose(w) // its body, if it is still coming, is not needed
		writeOwnerAnswer(w, old.Answer, nil, true, said)
		return
	case journal.Busy:
		doors.RefuseAndClose(w)
		e, what, g := busyError(old)
		body := localapi.ErrorBody{Error: string(e), Detail: fmt.Sprintf("call %s from %s %s; it is not forwarded again", rid, t.visitor.Name, what)}
		proto.WriteError(w, http.StatusConflict, body.With(g))
		return
	}

	o.step(rid, "receipt")
	b, err := o.receiveBody(w, r, t, size, inMemory)
	o.step(rid, "body whole")
	if err == nil && streamed {
		b.said = b.digest
	}
	if err == nil && digest != "" && b.digest != digest {
		b.close()
		err = bodyError{cause: fmt.Errorf("the call's digest is %s here but %s at the caller (the request changed on the way)", b.digest, digest), e: proto.PeerBadRequest, status: http.StatusBadRequest}
	}
	if err == nil && digest == "" {
		err = o.cfg.DB.Receipts().SetDigest(r.Context(), t.visitor.Node, rid, b.digest)
		if err != nil {
			b.close()
			err = bodyError{cause: fmt.Errorf("%s could not record the call's digest (%w)", o.cfg.Self().Name, err), e: proto.PeerOwnerFailed, status: http.StatusServiceUnavailable}
		}
	}
	if err != nil {
		// Not forwarded: nothing was carried out, and the receipt says so.
		if _, ferr := o.cfg.DB.Receipts().Finish(context.WithoutCancel(r.Context()), t.visitor.Node, rid, proto.ReceiptNotCarriedOut, nil); ferr != nil {
			o.cfg.Log.Error("could not record a call whose body did not arrive whole as not carried out", "request_id", rid, "caller", t.visitor.Name, "err", ferr)
		}
		o.cfg.Log.Info("a call's body did not arrive whole; it was not forwarded", "request_id", rid, "caller", t.visitor.Name, "app", t.app.Name, "err", err)
		o.refuseBody(w, err)
		return
	}
	o.forward(w, r, t, rid, b)
	o.step(rid, "replied")
}

// step logs that call rid reached a step, with the time in µs, when the
// log takes debug lines (delta run --trace-calls): tools/bench -parts
// steps reads them to break a call's time down (docs/benchmarks.md).
func (o *Owner) step(rid, step string) {
	if o.cfg.Log.Enabled(context.Background(), slog.LevelDebug) {
		o.cfg.Log.Debug("call step", "request_id", rid, "side", "owner", "step", step, "t_us", time.Now().UnixMicro())
	}
}

// keepReceived records what the call carried, by the caller's rule (h:
// the headers as forward stripped them, before Delta's secret and request
// id are added; the body up to 64 KiB, else its size): a person here who
// must check the app sees what it was asked (DESIGN §4). It is queued
// ahead of the call's outcome and not waited for.
func (o *Owner) keepReceived(ctx context.Context, h http.Header, t ownerTarget, rid string, b *callBody) {
	if h.Get("Cookie") != "" || h.Get("Authorization") != "" {
		h = h.Clone()
		h.Del("Cookie") // a session's secrets: passed to the app, never kept
		h.Del("Authorization")
	}
	kept := &record.Request{Headers: h, Size: int(b.size), Truncated: b.size > record.MaxKeptBody}
	switch {
	case b.flow != nil:
		kept.Size, kept.Truncated = 0, true // it passes as it comes, and is not kept
	case kept.Truncated:
	case b.file != nil:
		buf := make([]byte, b.size)
		if _, err := b.file.ReadAt(buf, 0); err != nil {
			o.cfg.Log.Warn("could not read back a call's body to keep it; its size is kept", "request_id", rid, "caller", t.visitor.Name, "err", err)
		} else {
			kept.Body = buf
		}
	default:
		kept.Body = b.mem
	}
	o.cfg.DB.Receipts().KeepReceived(ctx, t.visitor.Node, rid, kept, func(err error) {
		o.cfg.Log.Warn("could not keep what a call carried; its receipt is kept", "request_id", rid, "caller", t.visitor.Name, "err", err)
	})
}

// bodyError is why a call's body was not taken.
type bodyError struct {
	cause  error
	e      proto.PeerError
	status int
}

func (e bodyError) Error() string { return e.cause.Error() }

func (o *Owner) refuseBody(w http.ResponseWriter, err error) {
	be, ok := err.(bodyError)
	if !ok {
		be = bodyError{cause: err, e: proto.PeerBodyCut, status: http.StatusBadRequest}
	}
	doors.RefuseAndClose(w)
	refuse(w, be.status, be.e, be.cause.Error()+"; it was not forwarded to the app")
}

// callBody is a call's body as it arrived whole: in memory, or in a spool
// file (removed by close).
type callBody struct {
	mem    []byte
	file   *os.File
	size   int64
	digest string
	// said is the digest said in the reply: the body's, when it streamed
	// (the caller's Delta did not sum it); "" when the caller sent it.
	said string
	// flow is a flowing call's body, passed on as it arrives (size -1).
	flow *flowBody
}

func (b *callBody) reader() io.Reader {
	if b.flow != nil {
		return b.flow
	}
	if b.file != nil {
		return b.file
	}
	return bytes.NewReader(b.mem)
}

func (b *callBody) close() {
	if b.file != nil {
		b.file.Close()
		os.Remove(b.file.Name())
		b.file = nil
	}
}

// receiveBody reads a call's body whole, summing its digest: into memory
// when it is small, else into a spool file. Each read may take
// proto.BodyIdle; a body that breaks off, is shorter or longer than
// announced, or over the limit is an error, and nothing is kept.
func (o *Owner) receiveBody(w http.ResponseWriter, r *http.Request, t ownerTarget, size int64, inMemory bool) (*callBody, error) {
	h := proto.NewDigest(r.Method, t.app.Name, t.pathQuery)
	limit := o.cfg.MaxCallBytes
	if size >= 0 {
		// Never past what was announced: a body longer than its length
		// is refused at the first byte over, not read (into memory, for
		// a small announced one) to its end.
		limit = min(limit, size)
	}
	src := io.LimitReader(relay.ProgressBody(w, r, proto.BodyIdle), limit+1)
	b := &callBody{}
	var n int64
	var err error
	if inMemory {
		var buf bytes.Buffer
		buf.Grow(int(size) + bytes.MinRead) // read into, with no copy buffer of its own
		n, err = buf.ReadFrom(io.TeeReader(src, h))
		b.mem = buf.Bytes()
	} else {
		b.file, n, err = o.spool(src, h)
	}
	switch {
	case err != nil && errors.Is(err, errNoRoom):
		b.close()
		return nil, bodyError{cause: err, e: proto.PeerNoRoom, status: http.StatusInsufficientStorage}
	case err != nil:
		b.close()
		return nil, fmt.Errorf("the body did not arrive whole: it broke off after %d bytes (%v)", n, err)
	case n > o.cfg.MaxCallBytes:
		b.close()
		return nil, bodyError{cause: fmt.Errorf("the body is over %s's limit of %d bytes for a call (max_call_bytes)", o.cfg.Self().Name, o.cfg.MaxCallBytes), e: proto.PeerTooLarge, status: http.StatusRequestEntityTooLarge}
	case size >= 0 && n > size:
		b.close()
		return nil, fmt.Errorf("the body is longer than the %d bytes announced: refused at byte %d, not read further", size, n)
	case size >= 0 && n != size:
		b.close()
		return nil, fmt.Errorf("the body did not arrive whole: %d bytes of the %d announced", n, size)
	}
	b.size, b.digest = n, proto.DigestOf(h)
	if err := checkTrailer(r, b); err != nil {
		b.close()
		return nil, err
	}
	if b.file != nil {
		if _, err := b.file.Seek(0, io.SeekStart); err != nil {
			b.close()
			return nil, bodyError{cause: fmt.Errorf("%s could not read back the call's body (%v)", o.cfg.Self().Name, err), e: proto.PeerOwnerFailed, status: http.StatusServiceUnavailable}
		}
	}
	return b, nil
}

// bodyLength is the size a streamed body's caller said it has
// (proto.HeaderBodyLength); -1 when it said none.
func bodyLength(r *http.Request) (int64, error) {
	v := r.Header.Get(proto.HeaderBodyLength)
	if v == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q is not a size in bytes", proto.HeaderBodyLength, v)
	}
	return n, nil
}

// streamedBody says whether r's body streams between the Deltas: chunked,
// with the caller's count of it (X-Delta-Body-Passed), or, from a caller
// before one hash pass, its digest (X-Delta-Digest), announced as its
// trailer.
func streamedBody(r *http.Request) bool {
	_, passed := r.Trailer[proto.HeaderBodyPassed]
	_, digest := r.Trailer[proto.HeaderDigest]
	return passed || digest
}

// checkTrailer checks what came after a streamed body b, whose length was
// checked against what was announced: the caller's count of the bytes it
// read from its app must be the bytes that arrived (the caller sends it
// only once its app's body ended whole), and a digest sent by a caller
// before one hash pass must be this side's sum. A streamed body that ended
// without its trailer did not arrive whole.
func checkTrailer(r *http.Request, b *callBody) error {
	if sent := r.Trailer.Get(proto.HeaderDigest); sent != "" && sent != b.digest {
		return bodyError{cause: fmt.Errorf("the call's digest is %s here but %s at the caller (the body changed on the way)", b.digest, sent), e: proto.PeerBadRequest, status: http.StatusBadRequest}
	} else if _, announced := r.Trailer[proto.HeaderDigest]; announced && sent == "" {
		return fmt.Errorf("the body did not arrive whole: it ended without its digest (the trailer %s)", proto.HeaderDigest)
	}
	if _, announced := r.Trailer[proto.HeaderBodyPassed]; !announced {
		return nil
	}
	v := r.Trailer.Get(proto.HeaderBodyPassed)
	if v == "" {
		return fmt.Errorf("the body did not arrive whole: it ended without the caller's count of it (the trailer %s)", proto.HeaderBodyPassed)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil || n < 0:
		return bodyError{cause: fmt.Errorf("the trailer %s %q is not a size in bytes", proto.HeaderBodyPassed, v), e: proto.PeerBadRequest, status: http.StatusBadRequest}
	case n != b.size:
		return bodyError{cause: fmt.Errorf("the caller's Delta read %d bytes of the body from its app, and %d arrived (the body changed on the way)", n, b.size), e: proto.PeerBadRequest, status: http.StatusBadRequest}
	}
	return nil
}

// errNoRoom is the cause when the spool's file system is full.
var errNoRoom = errors.New("no room for the call's body")

// spool writes src to a new file in the spool folder as it arrives,
// summing it into h.
func (o *Owner) spool(src io.Reader, h hash.Hash) (*os.File, int64, error) {
	f, err := os.CreateTemp(o.cfg.SpoolDir, "call-*.body")
	if err != nil {
		return nil, 0, fmt.Errorf("%s could not make a spool file (%w)", o.cfg.Self().Name, err)
	}
	w := &roomyWriter{w: f, room: func() (int64, error) { return o.cfg.FreeBytes(o.cfg.SpoolDir) }}
	n, err := relay.CopySummed(w, src, h)
	if errors.Is(err, syscall.ENOSPC) {
		err = fmt.Errorf("%w: %s's disk filled up after %d bytes", errNoRoom, o.cfg.Self().Name, n)
	}
	return f, n, err
}

// roomyWriter writes a body of unknown length to the spool as long as the
// file system keeps spoolReserve free for the journal (looked at every
// 8 MiB), so that a body too big for the disk is refused before the
// journal cannot write.
type roomyWriter struct {
	w     io.Writer
	room  func() (int64, error)
	since int64
}

func (r *roomyWriter) Write(p []byte) (int, error) {
	if r.since += int64(len(p)); r.since >= 8<<20 {
		r.since = 0
		if free, err := r.room(); err == nil && free < spoolReserve {
			return 0, fmt.Errorf("%w: less than %d bytes would be left for the journal", errNoRoom, spoolReserve)
		}
	}
	return r.w.Write(p)
}

// CleanSpool removes what calls left in the spool folder when Delta
// stopped (their receipts are interrupted: nothing of them is forwarded
// again), and makes the folder.
func CleanSpool(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("owner: clean the spool folder %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("owner: make the spool folder %s: %w", dir, err)
	}
	return nil
}

// appResult is what came of a call forwarded to the app.
type appResult struct {
	state proto.ReceiptState
	ans   *record.Answer
	whole []byte // the whole answer body, when it was read whole
	// live is an answer recorded at its head whose body streams: the
	// handler takes it (closes taken) and passes it on, or, when the
	// handler left, the forwarder drains and records it.
	live     *h1.Answer
	ahead    []byte // of live's body, what was read already
	taken    chan struct{}
	finished chan struct{} // closed once live's body is read
	err      error
	held     bool // the outcome is held in memory, not yet written
}

// forward hands a call whose body arrived whole to its app, once, and
// passes on its answer. It keeps waiting past the caller's deadline, or
// past the caller going away, up to ExtraWait more, so that the app's
// answer is recorded. With no timeout (t.timeout 0) there is no deadline:
// the caller is answered when its app answers.
func (o *Owner) forward(w http.ResponseWriter, r *http.Request, t ownerTarget, rid string, b *callBody) {
	var deadline time.Time // from the moment the whole body is here; zero: none
	if t.timeout > 0 {
		deadline = time.Now().Add(t.timeout)
	}
	if b.said != "" {
		w.Header().Set(proto.HeaderDigest, b.said) // on every reply from here
	}
	req, err := http.NewRequest(r.Method, t.app.URL+t.pathQuery, b.reader())
	if err != nil { // cannot happen: the URL was checked at registration
		b.close()
		o.finish(context.Background(), t, rid, proto.ReceiptNotCarriedOut, nil)
		refuse(w, http.StatusBadRequest, proto.PeerBadRequest, "the call does not make a request to the app ("+err.Error()+")")
		return
	}
	req.ContentLength = b.size
	if b.size == 0 {
		req.Body = http.NoBody
	}
	req.Header = proto.ForwardHeaders(r.Header)
	req.Header.Del(proto.HeaderBodyLength)
	req.Header.Del(proto.HeaderFlow)
	o.keepReceived(r.Context(), req.Header, t, rid, b) // before Delta's own headers are added
	req.Header.Set(localapi.HeaderRequestID, rid)
	o.appHeaders(req, t, t.timeout)
	// On disk before the first byte goes to the app: a restart that finds
	// the receipt still running knows then whether the app ever had the
	// call (journal.Receipts.Recover).
	herr := o.cfg.DB.Receipts().Hand(r.Context(), t.visitor.Node, rid)
	o.step(rid, "handed")
	if err := herr; err != nil {
		b.close()
		o.finish(context.WithoutCancel(r.Context()), t, rid, proto.ReceiptNotCarriedOut, nil)
		refuse(w, http.StatusServiceUnavailable, proto.PeerOwnerFailed, fmt.Sprintf("%s could not record that the call goes to its app, so it did not send it (%v)", o.cfg.Self().Name, err))
		return
	}

	done := make(chan *appResult, 1)
	gone := make(chan struct{}) // closed when the handler leaves without a result
	o.cfg.Go(func() { o.askApp(t, rid, req, b, deadline, done, gone) })

	took := false
	defer func() {
		if !took {
			close(gone)
		}
	}()
	var late <-chan time.Time // the deadline: the caller is told outcome_unknown, and the app's answer is still recorded
	if !deadline.IsZero() {
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		late = timer.C
	}
	select {
	case res := <-done:
		took = true
		if res.held {
			o.markBehind(w)
		}
		switch res.state {
		case proto.ReceiptAnswered:
			if res.live != nil {
				close(res.taken)
				o.streamAnswer(w, t, rid, res, b.said)
				return
			}
			writeOwnerAnswer(w, res.ans, res.whole, false, b.said)
		case proto.ReceiptNotCarriedOut:
			refuse(w, http.StatusServiceUnavailable, proto.PeerAppDown, fmt.Sprintf("app %s on %s is not listening (%v)", t.app.Name, o.cfg.Self().Name, res.err))
		case proto.ReceiptAppUnknown:
			peerError(w, http.StatusBadGateway, proto.PeerUnknown, fmt.Sprintf("app %s on %s got the call and its connection broke before a complete answer (%v); it may or may not have acted", t.app.Name, o.cfg.Self().Name, res.err))
		default:
			peerError(w, http.StatusServiceUnavailable, proto.PeerUnknown, fmt.Sprintf("%s is stopping and app %s has not answered; the call is recorded as interrupted", o.cfg.Self().Name, t.app.Name))
		}
	case <-late:
		peerError(w, http.StatusBadGateway, proto.PeerUnknown, fmt.Sprintf("app %s on %s has not answered within %s; %s keeps waiting for it (up to %s more) and records its answer",
			t.app.Name, o.cfg.Self().Name, view.Span(t.timeout), o.cfg.Self().Name, view.Span(ExtraWait)))
	case <-r.Context().Done():
		// The caller hung up; the app's answer is still recorded.
	}
}

// askApp sends the call to the app once and records what came of it
// (Delta's background work: Close waits for it). The app has until
// ExtraWait past the deadline, or, with none, past the caller going away
// (gone closed).
func (o *Owner) askApp(t ownerTarget, rid string, req *http.Request, b *callBody, deadline time.Time, done chan<- *appResult, gone <-chan struct{}) {
	defer b.close()
	ctx, cancel := context.WithCancel(o.cfg.Ctx)
	defer cancel()
	wait := time.Duration(0) // the head's: the context's alone
	if deadline.IsZero() {
		go func() { // ends with askApp (ctx)
			select {
			case <-gone:
			case <-ctx.Done():
				return
			}
			t := time.NewTimer(ExtraWait)
			defer t.Stop()
			select {
			case <-t.C:
				cancel()
			case <-ctx.Done():
			}
		}()
	} else {
		wait = time.Until(deadline) + ExtraWait
	}
	var out *appResult
	a, err := func() (*h1.Answer, error) {
		conn, err := dialApp(ctx, req.URL.Host)
		if err != nil {
			return nil, h1.ConnectError(err)
		}
		// Interim answers (102, 103) are never the answer: the final one is.
		if grpc := proto.IsGRPC(req.Header); grpc || t.app.H2C {
			// gRPC is HTTP/2's, and an app registered --h2c speaks it
			// (docs/protocol.md §1c): HTTP/2 with prior knowledge, with
			// the TE gRPC's servers ask for.
			if grpc {
				req.Header.Set("Te", "trailers")
			}
			return h1.OnceH2(ctx, conn, req, h1.Options{Wait: wait})
		}
		return h1.Once(ctx, conn, req, h1.Options{Idle: proto.BodyIdle, Wait: wait, QuickAck: true})
	}()
	o.step(rid, "app answered")
	b.close() // written whole (or refused): the spool is no longer needed
	var oe *h1.Error
	switch {
	case err == nil && (a.StatusCode < 200 && a.StatusCode != http.StatusSwitchingProtocols || a.StatusCode > 999):
		// No final status an app's caller could be told (1xx are read
		// past; this is 0-99 or over 999): the app broke HTTP.
		a.Body.Close()
		out = &appResult{state: proto.ReceiptAppUnknown, err: fmt.Errorf("it answered the status %d, which is no answer", a.StatusCode)}
	case err == nil && a.StatusCode == http.StatusSwitchingProtocols:
		// An app that switches protocols on a call that asked for no
		// upgrade broke HTTP after it may have acted.
		a.Body.Close()
		out = &appResult{state: proto.ReceiptAppUnknown, err: errors.New("it answered 101 Switching Protocols to a call that asked for no upgrade")}
	case err == nil:
		body, whole, rerr := a.ReadSmall(proto.MaxStoredAnswer)
		switch {
		case rerr != nil:
			a.Body.Close()
			out = &appResult{state: proto.ReceiptAppUnknown, err: rerr}
		case whole:
			a.Body.Close()
			out = &appResult{state: proto.ReceiptAnswered, ans: record.NewAnswer(a.StatusCode, relay.Kept(a.Header, a.Trailer), body, proto.MaxStoredAnswer), whole: body}
		default:
			// A stream, or longer than is kept: recorded at its head.
			out = &appResult{state: proto.ReceiptAnswered, ans: &record.Answer{Status: a.StatusCode, Headers: proto.KeptHeader(a.Header), Omitted: true},
				live: a, ahead: body, taken: make(chan struct{}), finished: make(chan struct{})}
		}
	case o.cfg.Ctx.Err() != nil:
		// Delta is stopping: the receipt stays running and becomes
		// interrupted at the next start.
		done <- &appResult{err: err}
		return
	case errors.As(err, &oe) && !oe.Sent:
		out = &appResult{state: proto.ReceiptNotCarriedOut, err: err}
	default:
		out = &appResult{state: proto.ReceiptAppUnknown, err: err}
	}
	out.held = o.finish(context.Background(), t, rid, out.state, out.ans)
	o.step(rid, "answer journaled")
	done <- out
	if out.live == nil {
		return
	}
	select {
	case <-out.taken: // the handler passes it on and records its body
		<-out.finished
	case <-gone:
		// Nobody to pass it to: its body is still read and recorded.
		o.recordStream(t, rid, out, nil)
	}
}

// finish records a receipt's outcome, or holds it in memory when the
// journal cannot write (it reports whether it did).
func (o *Owner) finish(ctx context.Context, t ownerTarget, rid string, state proto.ReceiptState, ans *record.Answer) (held bool) {
	_, held, err := o.cfg.DB.Receipts().FinishOrHold(ctx, t.visitor.Node, rid, state, ans)
	if err != nil {
		o.cfg.Log.Error("could not record a receipt's outcome", "request_id", rid, "caller", t.visitor.Name, "err", err)
	}
	if held {
		o.cfg.Log.Error("the journal could not write a receipt's outcome; it is held in memory and written when the journal takes writes again", "request_id", rid, "caller", t.visitor.Name, "state", state, "err", o.cfg.DB.Behind().Err)
	}
	return held
}

// streamAnswer passes an answer recorded at its head to the caller's
// Delta as it arrives, and records its body once it has passed.
func (o *Owner) streamAnswer(w http.ResponseWriter, t ownerTarget, rid string, res *appResult, digest string) {
	a := res.live
	relay.Relay(w, relay.Answer{Status: a.StatusCode, Header: res.ans.Headers, Length: a.ContentLength, Trailer: &a.Trailer,
		Set:   []string{localapi.HeaderOutcome, string(proto.PeerAnswered), proto.HeaderDigest, digest},
		Ready: len(res.ahead) > 0 || a.Buffered() > 0,
		Pass:  func(w http.ResponseWriter) (http.Header, error) { return nil, o.recordStream(t, rid, res, w) }})
}

// recordStream passes a streaming answer's body on to w as it arrives
// (nil: nobody takes it), and records it (up to proto.MaxStoredAnswer;
// always its digest) once it has passed. When w goes away the rest is
// still read, to be recorded. It returns why the answer did not reach w
// whole: the app's body broke off, or w went away.
func (o *Owner) recordStream(t ownerTarget, rid string, res *appResult, w http.ResponseWriter) error {
	a := res.live
	defer close(res.finished)
	defer a.Body.Close()
	keep := &relay.KeptBody{Limit: proto.MaxStoredAnswer, Sum: sha256.New()}
	src := io.MultiReader(bytes.NewReader(res.ahead), a.Body)
	var gone, broke error
	if w != nil {
		if _, err := relay.Flow(w, src, keep); errors.Is(err, relay.ErrWriterGone) {
			gone = err
		} else {
			broke = err
		}
	}
	if w == nil || gone != nil {
		buf := relay.CopyBuffers.Get()
		_, broke = io.CopyBuffer(keep, src, *buf)
		relay.CopyBuffers.Put(buf)
	}
	ans := &record.Answer{Omitted: true, BodyDigest: hex.EncodeToString(keep.Sum.Sum(nil))}
	if kept, ok := keep.Kept(); ok && broke == nil {
		ans.Body, ans.Omitted = kept, false
	}
	if broke == nil && len(a.Trailer) > 0 {
		ans.Headers = relay.Kept(a.Header, a.Trailer) // a replay ends with them too
	}
	if jerr := o.cfg.DB.Receipts().SetAnswerBody(context.Background(), t.visitor.Node, rid, ans); jerr != nil {
		o.cfg.Log.Error("could not record the body of a receipt's answer", "request_id", rid, "caller", t.visitor.Name, "err", jerr)
	}
	if broke != nil {
		o.cfg.Log.Warn("an app's streamed answer to a call broke off", "request_id", rid, "caller", t.visitor.Name, "app", t.app.Name, "err", broke)
		return broke
	}
	if gone != nil {
		o.cfg.Log.Info("the caller went away while an app's answer streamed; it was read to its end and recorded", "request_id", rid, "caller", t.visitor.Name, "err", gone)
	}
	return gone
}
