// Package caller is the caller's side of a request to a peer (DESIGN §2,
// §4, §5): a read, with the cache, one fall-back and stale answers; and a
// call, sent at most once, recorded before its first byte and before the
// app is told. It decides what the app is told; reaching the peer is the
// peer client's (peerclient), the reconciling of unknown calls the
// reconciler's.
package caller

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/carry/readcache"
	"github.com/delta-roads/delta/gateway/carry/relay"
	"github.com/delta-roads/delta/gateway/carry/transfer"
	"github.com/delta-roads/delta/gateway/net/doors"
	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// Target is a parsed /v1/peers/{peer}/{app}/{path...} request.
type Target struct {
	Peer, App string
	PathQuery string // escaped, starting with "/", with "?query" if any
	// Wait is how long the owner's app may take before its answer's head
	// (DESIGN §2c): the timeout the app's client said, or its forward's,
	// else the owner app's own, else Wait.Else.
	Wait proto.Wait
	Pin  roads.Road
	// Host is the Host the app's client used (the local API's or a
	// forward's), and Prefix the path it wrote before the app's own paths
	// (/v1/peers/PEER/APP; "" through a forward): the owner app gets them
	// as Host, X-Forwarded-Host, Forwarded and X-Forwarded-Prefix (DESIGN
	// §2b). If empty, the owner app gets its own address as Host.
	Host, Prefix string
	// Cookie is what of the app's Cookie header goes to the owner app:
	// nothing on /v1/peers/… (""), the client's own through a forward,
	// Delta's page cookie aside. A read that carries one is neither
	// served from nor stored in the cache, which every app here shares.
	Cookie string
	// Door is how the request came in: "" the local API (with its token),
	// "forward PEER/APP" a forward. A call's outcome is told again only
	// through the door it came in by (issue 63, D9).
	Door string
	// Authorization is the app's own Authorization header, through a
	// forward that asks for no token (a rest-server's password, a WebDAV
	// login): it goes to the owner app as it is, carried between the
	// Deltas as X-Delta-Authorization (proto.HeaderAuthorization), since
	// Authorization there holds Delta's ticket. "" for none.
	Authorization string
}

// header is the app's request header in as it goes to the owner: without
// hop-by-hop headers, credentials, X-Delta-* and a client's Forwarded
// fields (proto.ForwardHeaders), with t's Cookie, Host and Prefix.
func (t Target) header(in http.Header) http.Header {
	h := proto.ForwardHeaders(in)
	h.Del("Cookie")
	if t.Cookie != "" {
		h.Set("Cookie", t.Cookie)
	}
	if t.Host != "" {
		h.Set(proto.HeaderHost, t.Host)
	}
	if t.Prefix != "" {
		h.Set(proto.HeaderPrefix, t.Prefix)
	}
	if t.Authorization != "" {
		h.Set(proto.HeaderAuthorization, t.Authorization)
	}
	return h
}

// Config configures a Caller.
type Config struct {
	// DB is the caller's journal. Required.
	DB *journal.DB
	// Peers reaches peers, knows them, and alone tells the router what
	// an exchange proved about a road. Required.
	Peers *peerclient.Client
	// Cache is the read cache. Required.
	Cache *readcache.Cache
	// Ctx ends when Delta stops: calls waiting for an owner end then, and
	// are recorded. Required.
	Ctx context.Context
	// Now is the clock; Log the log. Required.
	Now func() time.Time
	Log *slog.Logger
	// FirstAsk is how soon the reconciler asks about a call that became
	// unknown; Wake wakes it. Required.
	FirstAsk time.Duration
	Wake     func()
	// OnCall, OnRead, OnCacheHit and OnRevalidated (a stored answer
	// served again after the owner's 304 to its validators) count
	// outcomes. Required.
	OnCall, OnRead func(localapi.Outcome)
	OnCacheHit     func()
	OnRevalidated  func()
	// OnCut counts an answer that broke off on its way to the app (by
	// what: "read", "call_answer", "session"), OnResume a read resumed on
	// a fresh road, OnGaveUp an exchange its app stopped waiting for (by
	// what: "read", "call", "session"). Required.
	OnCut    func(what string)
	OnResume func()
	OnGaveUp func(what string)
	// MaxCallBytes is the largest body a call may carry. Required.
	MaxCallBytes int64
	// Transfers, if not nil, keeps the transfers under way.
	Transfers *transfer.Set
}

// Caller carries this computer's apps' reads and calls to peers.
type Caller struct {
	cfg Config

	mu      sync.Mutex
	calls   sync.WaitGroup // calls being sent: Close waits for their outcome to be recorded
	closing bool
}

// New returns a caller.
func New(cfg Config) *Caller { return &Caller{cfg: cfg} }

// beginSend registers a call about to be sent; false if Delta is stopping
// (then nothing may be sent).
func (cr *Caller) beginSend() bool {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if cr.closing {
		return false
	}
	cr.calls.Add(1)
	return true
}

// StopSending makes every later call "Delta is stopping; nothing was sent".
func (cr *Caller) StopSending() {
	cr.mu.Lock()
	cr.closing = true
	cr.mu.Unlock()
}

// Wait waits until every call being sent has its outcome recorded and its
// app answered (after Config.Ctx ended, that is soon).
func (cr *Caller) Wait() { cr.calls.Wait() }

// newRequestID mints a random UUID (version 4).
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// callGrace is how long past a timeout said (X-Delta-Timeout, or the
// forward's) the caller waits for the owner's reply once the call's body
// is written: the owner answers outcome_unknown itself at the deadline,
// and that reply has to travel. With no timeout said, the caller waits as
// long as its app does.
const callGrace = 3 * time.Second

// Call carries a call to its peer at most once (DESIGN §2, §2a, §4). The
// journal and the target are checked before the app's body is read, so a
// conflict or an unknown peer is answered before an app that sent Expect:
// 100-continue sends its body (Go's server says 100 Continue at the
// first read).
func (cr *Caller) Call(w http.ResponseWriter, r *http.Request, t Target) {
	rid := r.Header.Get(localapi.HeaderRequestID)
	if rid == "" {
		rid = newRequestID()
	} else if err := proto.CheckRequestID(rid); err != nil {
		cr.refuseCall(w, localapi.BadRequest, proto.NotSent(err.Error(), ""), "", t.Peer)
		return
	}
	cr.step(rid, "arrived")
	callerApp := proto.CallerApp(r.Header) // sent on as X-Delta-App: the owner names it too
	// The journal answers before anything that depends on the roads: a
	// Delta that just started may not know its peer's roads yet, and an id
	// it holds must still get its recorded outcome (or 409).
	existing, err := cr.cfg.DB.Calls().Get(r.Context(), rid)
	switch {
	case err == nil && existing.Door != t.Door:
		cr.refuseCall(w, localapi.Conflict, otherDoor(rid), rid, t.Peer)
		return
	case err == nil:
		cr.repeat(w, r, t, existing)
		return
	case !errors.Is(err, journal.ErrNotFound):
		cr.refuseCall(w, localapi.Unavailable, proto.NotSent("could not read the journal ("+err.Error()+")", ""), rid, t.Peer)
		return
	}
	if ok, why := cr.cfg.Peers.Known(t.Peer); !ok {
		cr.refuseCall(w, localapi.NotFound, proto.NotSent(why, ""), rid, t.Peer)
		return
	}
	if r.ContentLength > cr.cfg.MaxCallBytes {
		cr.refuseTooLarge(w, r, proto.NotSent(fmt.Sprintf("the body is %d bytes, over the limit of %d bytes for a call (max_call_bytes in config.json)", r.ContentLength, cr.cfg.MaxCallBytes), ""), rid, t.Peer)
		return
	}
	var body *callBody
	if proto.IsGRPC(r.Header) && r.ProtoMajor == 2 {
		// A gRPC request flows (docs/protocol.md §1c): a stream's
		// messages go as they come, and its answer's as they come, both
		// at once, as a conversation (a bidirectional stream) needs.
		body, err = flowingBody(w, r, cr.cfg.MaxCallBytes), nil
	} else {
		body, err = readCallBody(relay.ProgressBody(w, r, proto.BodyIdle), r.ContentLength, r.Method, t.App, t.PathQuery, cr.cfg.MaxCallBytes)
	}
	if errors.Is(err, errTooLarge) {
		cr.refuseTooLarge(w, r, proto.NotSent(err.Error(), ""), rid, t.Peer)
		return
	}
	if err != nil {
		cr.refuseCall(w, localapi.BadRequest, proto.NotSent(err.Error(), ""), rid, t.Peer)
		return
	}
	cr.step(rid, "body read")
	c := &record.Call{RequestID: rid, Peer: t.Peer, App: t.App, CallerApp: callerApp, Door: t.Door,
		Method: r.Method, Path: t.PathQuery, Digest: body.Digest(), GRPC: proto.IsGRPC(r.Header)}
	// What a person may have to check later: the headers as sent (the
	// ticket aside) and the body (its size once it has passed, when it
	// streams).
	sent := t.header(r.Header)
	sent.Del("Cookie") // a session's secret: sent, never kept
	sent.Del(proto.HeaderAuthorization)
	sent.Set(localapi.HeaderRequestID, rid)
	t.Wait.Set(sent)
	if c.Digest != "" {
		sent.Set(proto.HeaderDigest, c.Digest)
	}
	if callerApp != "" {
		sent.Set(localapi.HeaderApp, callerApp)
	}
	if body.whole {
		c.Request = record.KeepRequest(sent, body.head)
	} else {
		c.Request = &record.Request{Headers: sent, Truncated: true}
	}
	cr.sendCall(w, r, t, c, body)
}

// repeat answers a call whose request id is in the journal: the same
// request gets that call's outcome, another one 409. Its body is read only
// as far as telling the two apart needs.
func (cr *Caller) repeat(w http.ResponseWriter, r *http.Request, t Target, existing *record.Call) {
	rid := existing.RequestID
	conflict := func(why string) {
		cr.refuseCall(w, localapi.Conflict, proto.NotSent(fmt.Sprintf("request id %s is in use on this computer for %s (%s %s/%s%s at %s)", rid, why,
			existing.Method, existing.Peer, existing.App, existing.Path, existing.CreatedAt.Format(time.RFC3339)), ""), rid, t.Peer)
	}
	if existing.Digest == "" {
		conflict("a call whose body streamed and whose digest is not known here (its body did not pass whole, or its owner has not said its digest yet), so this one cannot be told apart from it")
		return
	}
	// What tells another request apart before its body is read (an app
	// that sent Expect: 100-continue is refused before sending it): the
	// method, the target, the size when both are known.
	sized := existing.Request != nil && (!existing.Request.Truncated || existing.Request.Size > 0)
	if existing.Method != r.Method || existing.Peer != t.Peer || existing.App != t.App || existing.Path != t.PathQuery ||
		r.ContentLength >= 0 && sized && int64(existing.Request.Size) != r.ContentLength {
		conflict("another request")
		return
	}
	h := proto.NewDigest(r.Method, t.App, t.PathQuery)
	n, err := io.Copy(h, io.LimitReader(relay.ProgressBody(w, r, proto.BodyIdle), cr.cfg.MaxCallBytes+1))
	switch {
	case err != nil:
		cr.refuseCall(w, localapi.BadRequest, proto.NotSent(fmt.Sprintf("could not read the request body from the app after %d bytes (%v)", n, err), ""), rid, t.Peer)
		return
	case n > cr.cfg.MaxCallBytes || proto.DigestOf(h) != existing.Digest:
		conflict("another request")
		return
	}
	cr.replyExisting(w, r, rid, t.Wait.Said)
}

// callRun is one call being sent: its attempts, and how it ended.
type callRun struct {
	cr   *Caller
	w    http.ResponseWriter
	r    *http.Request
	t    Target
	c    *record.Call
	body *callBody
	base context.Context

	attempts     []record.Attempt // written with the outcome, in one transaction
	recorded     bool             // the call is in the journal as sending
	handled      bool             // the app was answered already (a concurrent same id)
	end          *callEnd         // how it ended
	firstFailure *callEnd         // the failure that led to a fall-back
	// duplex writes a flowing call's body while its answer comes, and
	// flowDone (if not nil) is called once it has ended.
	duplex   *h1.Duplex
	flowDone func()
}

// stopFlow ends a flowing call's body on its way once the call is over:
// the app's reads of it end (the door's read deadline passes), then its
// writer, which is waited for; nothing of the app's request is read
// after it.
func (run *callRun) stopFlow() {
	if run.duplex == nil {
		return
	}
	_ = http.NewResponseController(run.w).SetReadDeadline(time.Now())
	run.endTry()
}

// endTry ends a flowing call's try that wrote none of its body (its
// owner answered before asking for it): its writer has left or leaves at
// once, and the body is there for the next try.
func (run *callRun) endTry() {
	if run.duplex == nil {
		return
	}
	if err := run.duplex.Stop(); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		run.cr.cfg.Log.Debug("a flowing call's request ended before its end", "request_id", run.c.RequestID, "err", err)
	}
	run.duplex = nil
	if run.flowDone != nil {
		run.flowDone()
		run.flowDone = nil
	}
}

// sendCall makes the attempts of a call, records its outcome, and only then
// tells the app. Each attempt connects first (a connect carries nothing),
// then is recorded, then writes: the first in the same transaction that
// records the call as sending, so a crash after its first byte leaves the
// attempt in the record and no attempt costs a wait of its own.
func (cr *Caller) sendCall(w http.ResponseWriter, r *http.Request, t Target, c *record.Call, body *callBody) {
	// The call ends when its app stops waiting (DESIGN §2c: its
	// exchange, not the road), or when the gateway stops; either way its
	// outcome is recorded: nothing was sent, or outcome_unknown once its
	// first byte left, reconciled as any other.
	if !cr.beginSend() {
		cr.recordUnsent(w, r, c, nil, &callEnd{o: localapi.Unavailable, detail: proto.NotSent("Delta is stopping", t.Peer)}, t.Wait.Said)
		return
	}
	defer cr.calls.Done()
	base, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	defer context.AfterFunc(cr.cfg.Ctx, cancel)()
	defer context.AfterFunc(r.Context(), cancel)()

	run := &callRun{cr: cr, w: w, r: r, t: t, c: c, body: body, base: base}
	defer run.stopFlow() // once its answer has passed: the request's own end is the app's, or the answer's
	err := cr.cfg.Peers.Do(base, peerclient.Call, t.Peer, t.Pin, run.attempt)
	if run.handled {
		return
	}
	// The app may still be sending a body that went nowhere (the owner
	// refused it, or replayed an answer, before asking for it): take the
	// rest first, so that the app reads what it is told rather than a
	// reset of a connection it was writing to.
	body.drain(w, r)
	var un *peerclient.Unattempted
	switch {
	case errors.As(err, &un) && un.FellBack && run.firstFailure != nil:
		run.end = run.firstFailure // after a fall-back, the failure that led to it is the answer
	case errors.As(err, &un):
		run.end = &callEnd{state: record.Unavailable, o: un.Outcome(), road: string(un.Road), detail: un.Detail}
	}
	if !run.recorded {
		// Nothing was sent: recorded at once in its final state.
		cr.recordUnsent(w, r, c, run.attempts, run.end, t.Wait.Said)
		return
	}
	cr.finishCall(w, r, c, run.attempts, run.end)
	cr.step(c.RequestID, "answered")
}

// step logs that call rid reached a step, with the time in µs, when the
// log takes debug lines (delta run --trace-calls): tools/bench -parts
// steps reads them to break a call's time down (docs/benchmarks.md).
func (cr *Caller) step(rid, step string) {
	if cr.cfg.Log.Enabled(context.Background(), slog.LevelDebug) {
		cr.cfg.Log.Debug("call step", "request_id", rid, "side", "caller", "step", step, "t_us", time.Now().UnixMicro())
	}
}

// attempt is one try at sending the call (peerclient.Do's attempt):
// connect, record the attempt before anything is written
// (beforeWrite), write the call once (send), and say what came of it.
func (run *callRun) attempt(try peerclient.Try) peerclient.Result {
	started := run.cr.cfg.Now()
	used := try.Cand // the road the call went on (a race may pick another)
	var a *h1.Answer
	rc, err := run.cr.cfg.Peers.Dial(run.base, try.Cand)
	if err != nil {
		err = h1.ConnectError(err)
	} else {
		used = rc.Cand
		if res, stop := run.beforeWrite(rc, started); stop {
			return res
		}
		a, err = run.send(try, rc)
	}
	var oe *h1.Error
	sent := err == nil || errors.As(err, &oe) && oe.Sent
	at := record.Attempt{N: len(run.attempts) + 1, Road: string(used.Road), Address: used.Address, StartedAt: started, FirstByte: sent}
	var reply peerclient.Reply
	if err == nil {
		run.learn(a.Header.Get(proto.HeaderDigest))
	}
	if err != nil {
		at.Error = err.Error()
	} else if reply = peerclient.Classify(a.Response); reply.Err != proto.PeerAnswered {
		at.Error = fmt.Sprintf("%s replied %d %s: %s", run.t.Peer, reply.Status, reply.Err, reply.Said.Detail)
		at.Reply = string(reply.Err)
	}
	run.attempts = append(run.attempts, at)
	switch {
	case err != nil && !sent && run.gone():
		run.end = &callEnd{state: record.Unavailable, o: localapi.Unavailable, road: string(used.Road),
			detail: proto.NotSent("the app stopped waiting before the call left", run.t.Peer)}
		run.cr.gaveUp("call", run.t, used, started, "before its first byte")
		return peerclient.GaveUp(used)
	case err != nil && !sent:
		return run.notSent(try.Cand, err, oe)
	case err != nil:
		return run.leftUnanswered(try.Cand, used, oe, started)
	}
	v := mapOwnerReply(run.t.Peer, reply)
	run.end = &callEnd{cand: used, state: v.state, o: v.o, status: v.status, detail: v.detail, g: v.g, road: string(used.Road), replayed: reply.Replayed}
	if v.o == localapi.Answered {
		run.end.live = a // its body is read (or streamed) once the loop is done
	}
	if body := run.body; reply.Err == proto.PeerUnauthorized && body.untouched() { // renewed and sent once more, if the loop allows
		run.endTry()
		body.mu.Lock()
		body.off = 0 // nothing of it went: the door refused the head
		body.mu.Unlock()
		return peerclient.RefusedAtDoor(used, errors.New(at.Error))
	}
	return peerclient.Replied()
}

// learn records the digest the owner said in its reply to a streamed body
// that passed whole, before the call's outcome: a repeat of its id, and a
// question about it, name it from now on. Until then (an outcome unknown
// before any reply) the call has no digest: a repeat is refused 409, and
// the owner's word on the id alone settles it.
func (run *callRun) learn(said string) {
	if !run.body.learned(said) {
		return
	}
	cr, c := run.cr, run.c
	c.Digest = said
	if err := cr.cfg.DB.Calls().SetBody(context.WithoutCancel(run.base), c.RequestID, said, run.body.Size()); err != nil {
		cr.cfg.Log.Error("could not record a streamed call's digest, which its owner said; the owner's word on its id decides its reconciliation", "request_id", c.RequestID, "err", err)
	}
}

// beforeWrite records the attempt on rc (and the roads a race tried first,
// which failed before anything was written: each an attempt of its own)
// before the first byte: the call's "sending" with it, or the attempts
// added to a call recorded already. stop says the attempt ends here,
// nothing written: the id was taken meanwhile, or the journal could not
// record it.
func (run *callRun) beforeWrite(rc *peerclient.RoadConn, started time.Time) (res peerclient.Result, stop bool) {
	cr, c, used := run.cr, run.c, rc.Cand
	lost := len(run.attempts)
	for _, f := range rc.Lost {
		run.attempts = append(run.attempts, record.Attempt{N: len(run.attempts) + 1, Road: string(f.Cand.Road), Address: f.Cand.Address, StartedAt: started,
			Error: h1.ConnectError(f.Err).Error()})
	}
	at := record.Attempt{N: len(run.attempts) + 1, Road: string(used.Road), Address: used.Address, StartedAt: started, FirstByte: true}
	var existing *record.Call
	var jerr error
	if !run.recorded {
		c.Attempts = append(slices.Clone(run.attempts), at)
		cr.step(c.RequestID, "connected")
		existing, jerr = cr.cfg.DB.Calls().Begin(run.base, c)
		cr.step(c.RequestID, "journaled")
	} else {
		for _, l := range run.attempts[lost:] {
			if jerr == nil {
				jerr = cr.cfg.DB.Calls().AddAttempt(run.base, c.RequestID, l)
			}
		}
		if jerr == nil {
			jerr = cr.cfg.DB.Calls().AddAttempt(run.base, c.RequestID, at)
		}
	}
	if jerr == nil && existing == nil {
		run.recorded = true
		return peerclient.Replied(), false // not used: the attempt goes on
	}
	rc.Close()           // nothing was written to it
	if existing != nil { // the same id, sent by another request meanwhile
		if run.body.whole {
			cr.answerExisting(run.w, run.r, c, existing, run.t.Wait.Said)
		} else {
			cr.refuseCall(run.w, localapi.Conflict, proto.NotSent(fmt.Sprintf("request id %s was taken meanwhile by another request, which Delta cannot tell apart from this one (its body streams)", c.RequestID), ""), c.RequestID, run.t.Peer)
		}
		run.handled = true
	} else {
		run.end = &callEnd{state: record.Unavailable, o: localapi.Unavailable, road: string(used.Road),
			detail: proto.NotSent("could not record the call in the journal ("+jerr.Error()+")", "")}
	}
	return peerclient.Replied(), true
}

// notSent ends an attempt on cand that failed before anything was written
// (the connect, a pin, the app's own body): nothing was sent, and a lan or
// thunderbolt road may be fallen back from.
func (run *callRun) notSent(cand roads.Candidate, err error, oe *h1.Error) peerclient.Result {
	cr, t, body := run.cr, run.t, run.body
	o, detail := localapi.Unavailable, proto.NotSent(fmt.Sprintf("%s did not answer (%s failed: %v)", t.Peer, peerclient.Describe(cand, oe.Op, oe.Timeout), oe.Err), t.Peer)
	var mm *pintls.MismatchError
	if errors.As(err, &mm) {
		o, detail = localapi.Forbidden, proto.NotSent(fmt.Sprintf("%s's certificate on %s is not the one learned over the tailnet (%v)", t.Peer, cand, mm), t.Peer)
		cr.cfg.Log.Warn("certificate pin mismatch", "peer", t.Peer, "road", cand.Road, "address", cand.Address, "pinned", mm.Want, "presented", mm.Got)
	}
	if srcErr := body.failed(); srcErr != nil { // the app's own body broke before anything left
		run.end = &callEnd{state: record.Unavailable, o: localapi.BadRequest, detail: proto.NotSent(srcErr.Error(), t.Peer), road: string(cand.Road)}
		return peerclient.Replied()
	}
	run.end = &callEnd{state: record.Unavailable, o: o, detail: detail, road: string(cand.Road)}
	if run.firstFailure == nil {
		run.firstFailure = run.end
	}
	return peerclient.DialFailed(cand, err)
}

// leftUnanswered ends an attempt whose call left (some of it) on used and
// got no complete answer: its outcome is unknown (or, cut at this side's
// own size limit, not carried out), and it is never sent again.
func (run *callRun) leftUnanswered(cand, used roads.Candidate, oe *h1.Error, started time.Time) peerclient.Result {
	t := run.t
	detail := fmt.Sprintf("the call left for %s and no complete answer came (%s: %v); it may or may not have been carried out; %s", used, oe.Op, oe.Err, Asking(t.Peer))
	srcErr := run.body.failed()
	gone := run.gone() || srcErr != nil
	end := &callEnd{state: record.Unknown, o: localapi.Unknown, road: string(used.Road)}
	switch {
	case run.cr.cfg.Ctx.Err() != nil:
		detail = fmt.Sprintf("Delta was stopping while the call waited for %s's answer; it left and may or may not have been carried out; it will not be sent again, and Delta will ask %s what happened when it runs again", t.Peer, t.Peer)
		gone = true // not the road's doing either
	case errors.Is(srcErr, errTooLarge) && !run.body.flow:
		// Cut here, at this side's own limit, before the body's end: an
		// owner gives its app a streamed body only once it has arrived
		// whole, with this side's count of it (the trailer
		// X-Delta-Body-Passed, sent only at the body's end), so this
		// call cannot have been carried out, whatever its owner saw. It
		// is settled so at once (issue 63, U6), and the app may send it
		// again, smaller or to a computer that takes more.
		end.state, end.o, end.status, end.g = record.NotCarriedOut, localapi.BadRequest, http.StatusRequestEntityTooLarge, localapi.NotCarried
		detail = proto.NotCarriedOut(fmt.Sprintf("%s there, before its end, and %s gives an app a streamed body only once it has arrived whole", srcErr, t.Peer))
	case srcErr != nil && run.body.flow:
		detail = fmt.Sprintf("%s; %s passed the stream to its app as it came, and ends it for the app as cut, never as whole; %s", srcErr, t.Peer, Asking(t.Peer))
	case srcErr != nil:
		detail = fmt.Sprintf("%s; %s never gives an app part of a call, and %s", srcErr, t.Peer, Asking(t.Peer))
	case gone:
		detail = fmt.Sprintf("the app stopped waiting after the call left for %s, before its answer came; it may or may not have been carried out; %s", used, Asking(t.Peer))
		run.cr.gaveUp("call", t, used, started, "after its first byte, before its answer")
	}
	end.detail = detail
	run.end = end
	return peerclient.LeftUnanswered(cand, peerclient.Judge(peerclient.BeforeHead, gone, oe), oe)
}

// gone reports whether the call's app stopped waiting (its request's
// context ended while Delta runs).
func (run *callRun) gone() bool { return run.r.Context().Err() != nil && run.cr.cfg.Ctx.Err() == nil }

// send writes the call on rc, once: a small body whole with its digest in
// X-Delta-Digest, a larger one streamed (chunked, after the owner's 100
// Continue) with the count of what passed as the trailer
// X-Delta-Body-Passed (the owner sums it and says its digest in the
// reply). It returns the answer's head.
func (run *callRun) send(try peerclient.Try, rc net.Conn) (*h1.Answer, error) {
	cr, t, c, body := run.cr, run.t, run.c, run.body
	run.endTry() // a try before this one's, which wrote none of the body
	h := t.header(run.r.Header)
	h.Set(localapi.HeaderRequestID, c.RequestID)
	t.Wait.Set(h)
	if c.CallerApp != "" {
		h.Set(localapi.HeaderApp, c.CallerApp)
	}
	opt := h1.Options{Idle: proto.BodyIdle} // the answer's head: as long as its app waits for it
	if said := t.Wait.Said; said > 0 {
		// The owner's Delta replies outcome_unknown itself at the
		// timeout said; past that and callGrace, it did not.
		opt.Wait = said + callGrace
	}
	// A small body goes whole, as an in-memory reader (written with its
	// head in one piece); a larger one streams, counted as a transfer.
	var rd io.Reader = bytes.NewReader(body.head)
	if !body.whole {
		rd = io.NopCloser(body)
		if tr := cr.cfg.Transfers; tr != nil {
			x := tr.Start(localapi.TransferCall, t.Peer, t.App, t.PathQuery, string(try.Cand.Road))
			if body.flow {
				run.flowDone = x.Done
			} else {
				defer x.Done()
			}
			rd = io.NopCloser(x.Reader(body, true))
		}
	}
	req, err := peerclient.AppRequest(run.base, try, c.Method, t.App, t.PathQuery, h, rd)
	if err != nil {
		rc.Close()
		return nil, &h1.Error{Op: "send the request", Err: fmt.Errorf("the path %q does not make a valid request (%w)", t.PathQuery, err)}
	}
	if body.whole {
		h.Set(proto.HeaderDigest, c.Digest)
	} else {
		req.ContentLength, req.TransferEncoding = -1, []string{"chunked"}
		req.Trailer = http.Header{proto.HeaderBodyPassed: nil}
		body.trailer = req.Trailer
		if body.declared >= 0 {
			h.Set(proto.HeaderBodyLength, strconv.FormatInt(body.declared, 10))
		}
		opt.Continue = true
		if body.flow {
			h.Set(proto.HeaderFlow, "messages")
			run.duplex = &h1.Duplex{}
			opt.Duplex = run.duplex
		}
		opt.Written = func() {
			// Its size once the body has passed; its digest comes with
			// the owner's reply (run.learn).
			if err := cr.cfg.DB.Calls().SetBody(context.WithoutCancel(run.base), c.RequestID, "", body.Size()); err != nil {
				cr.cfg.Log.Error("could not record a streamed call's size", "request_id", c.RequestID, "err", err)
			}
		}
	}
	a, err := h1.Once(run.base, rc, req, opt)
	cr.step(c.RequestID, "answer's head")
	return a, err
}

// callEnd is how a call ended: the state recorded, the outcome the app is
// told with its detail, guarantee and road, and the answer.
type callEnd struct {
	cand     roads.Candidate // the road it went on, when it left
	state    record.CallState
	o        localapi.Outcome
	status   int // the app's HTTP status when not o's; 0 for o's
	detail   string
	g        localapi.Guarantee
	road     string
	replayed bool
	// live is the owner app's answer, its body still to read (answered).
	live *h1.Answer
}

// recordUnsent records a call that never left as unavailable, with its
// attempts (none wrote a byte), and only then tells the app. If the same
// request id was recorded meanwhile by another request, that one's outcome
// is the answer.
func (cr *Caller) recordUnsent(w http.ResponseWriter, r *http.Request, c *record.Call, attempts []record.Attempt, e *callEnd, timeout time.Duration) {
	c.State, c.Outcome, c.Detail, c.Attempts = record.Unavailable, string(e.o), e.detail, attempts
	// Not cr.cfg.Ctx: the outcome is recorded even while the gateway closes.
	existing, err := cr.cfg.DB.Calls().Begin(context.WithoutCancel(cr.cfg.Ctx), c)
	if existing != nil {
		cr.answerExisting(w, r, c, existing, timeout)
		return
	}
	if err != nil {
		// Nothing was sent either way; the app is told so, and a repeat
		// will be tried afresh.
		cr.cfg.Log.Error("could not record a call that was not sent", "request_id", c.RequestID, "outcome", e.o, "err", err)
	}
	cr.cfg.OnCall(e.o)
	cr.replyCallError(w, e.o, e.detail, localapi.NothingSent, c.RequestID, c.Peer, e.road)
}

// answerExisting answers a call whose request id was recorded meanwhile
// by another request: the same request (same digest) gets that call's
// outcome, another one 409.
func (cr *Caller) answerExisting(w http.ResponseWriter, r *http.Request, c, existing *record.Call, timeout time.Duration) {
	if existing.Door != c.Door {
		cr.refuseCall(w, localapi.Conflict, otherDoor(c.RequestID), c.RequestID, c.Peer)
		return
	}
	if existing.Digest != c.Digest || c.Digest == "" {
		cr.refuseCall(w, localapi.Conflict, proto.NotSent(fmt.Sprintf("request id %s is in use on this computer for another request (%s %s/%s%s at %s)", c.RequestID, existing.Method, existing.Peer, existing.App, existing.Path, existing.CreatedAt.Format(time.RFC3339)), ""), c.RequestID, c.Peer)
		return
	}
	cr.replyExisting(w, r, c.RequestID, timeout)
}

// finishCall records a call's outcome (a compare-and-set from sending) and
// then tells the app. An answer of up to proto.MaxStoredAnswer bytes of
// known length is read whole and recorded with its body; a longer one, or
// one of unknown length (a stream), is recorded at its head and streams
// to the app, its body recorded when it has passed (DESIGN §2a).
func (cr *Caller) finishCall(w http.ResponseWriter, r *http.Request, c *record.Call, attempts []record.Attempt, e *callEnd) {
	var ans *record.Answer
	var whole, ahead []byte
	stream := false
	if a := e.live; a != nil {
		h := proto.KeptHeader(a.Header)
		var err error
		var complete bool
		ahead, complete, err = a.ReadSmall(proto.MaxStoredAnswer)
		switch {
		case err != nil:
			a.Body.Close()
			e = &callEnd{state: record.Unknown, o: localapi.Unknown, road: e.road, detail: fmt.Sprintf(
				"%s's app answered %d and its answer broke off on its way here after %d bytes (%v); %s keeps the answer, and Delta is asking it for it; the call is not sent again",
				c.Peer, a.StatusCode, len(ahead), err, c.Peer)}
		case complete:
			a.Body.Close()
			whole = ahead
			ans = record.NewAnswer(a.StatusCode, relay.Kept(a.Header, a.Trailer), whole, proto.MaxStoredAnswer)
		default:
			stream = true
			ans = &record.Answer{Status: a.StatusCode, Headers: h, Omitted: true}
		}
	}
	t := journal.Transition{From: []record.CallState{record.Sending}, To: e.state, Outcome: string(e.o), Detail: e.detail, Answer: ans, Attempts: attempts}
	if e.state == record.Unknown {
		t.NextAsk = cr.cfg.Now().Add(cr.cfg.FirstAsk)
	}
	// Not cr.cfg.Ctx: an outcome is recorded even while the gateway closes (Close
	// waits for it before it closes the journal).
	moved, held, err := cr.cfg.DB.Calls().MoveOrHold(context.WithoutCancel(cr.cfg.Ctx), c.RequestID, t)
	cr.step(c.RequestID, "outcome journaled")
	if err != nil || !moved {
		cr.cfg.Log.Error("could not record a call's outcome", "request_id", c.RequestID, "outcome", e.o, "err", err)
	}
	if held {
		cr.cfg.Log.Error("the journal could not write a call's outcome; it is held in memory and written when the journal takes writes again", "request_id", c.RequestID, "outcome", e.o, "err", cr.cfg.DB.Behind().Err)
		markBehind(w)
	}
	cr.cfg.OnCall(e.o)
	if e.state == record.Answered || e.state == record.Unknown {
		cr.invalidate(c, ans)
	}
	if e.state == record.Unknown {
		cr.cfg.Log.Warn("call outcome unknown", "request_id", c.RequestID, "peer", c.Peer, "detail", e.detail)
		cr.cfg.Wake()
	}
	if e.o != localapi.Answered {
		cr.replyCallErrorStatus(w, e.status, e.o, e.detail, e.g, c.RequestID, c.Peer, e.road)
		return
	}
	if !stream {
		writeAnswer(w, ans, whole, c.RequestID, e.road, e.replayed)
		return
	}
	cr.streamAnswer(w, r, c, e, ahead)
}

// streamAnswer passes an answer recorded at its head to the app as it
// arrives, and records its body (up to proto.MaxStoredAnswer; else its
// digest) once it has passed. A body that breaks off is never ended as if
// whole: the app's connection is cut.
func (cr *Caller) streamAnswer(w http.ResponseWriter, r *http.Request, c *record.Call, e *callEnd, ahead []byte) {
	a := e.live
	defer a.Body.Close()
	again := ""
	if e.replayed {
		again = "true"
	}
	var x *transfer.Transfer
	if cr.cfg.Transfers != nil {
		x = cr.cfg.Transfers.Start(localapi.TransferCall, c.Peer, c.App, c.Path, e.road)
		defer x.Done()
	}
	var n int64
	relay.Relay(w, relay.Answer{Status: a.StatusCode, Header: a.Header, Length: a.ContentLength, Trailer: &a.Trailer,
		Set: []string{localapi.HeaderOutcome, string(localapi.Answered), localapi.HeaderRequestID, c.RequestID,
			localapi.HeaderRoute, e.road, "Connection", "close", localapi.HeaderReplayed, again},
		Ready: len(ahead) > 0 || a.Buffered() > 0,
		Pass: func(w http.ResponseWriter) (http.Header, error) {
			keep := &relay.KeptBody{Limit: proto.MaxStoredAnswer}
			var err error
			n, err = flowTo(w, io.MultiReader(bytes.NewReader(ahead), a.Body), keep, x)
			body := &record.Answer{Omitted: true} // a call's record keeps no digest of its answer
			if kept, ok := keep.Kept(); ok && err == nil {
				body.Body, body.Omitted = kept, false
			}
			if err == nil && len(a.Trailer) > 0 {
				body.Headers = relay.Kept(a.Header, a.Trailer) // a replay ends with them too
			}
			if jerr := cr.cfg.DB.Calls().SetAnswerBody(context.WithoutCancel(cr.cfg.Ctx), c.RequestID, body); jerr != nil {
				cr.cfg.Log.Error("could not record the body of a call's answer", "request_id", c.RequestID, "err", jerr)
			}
			return nil, err
		},
		OnCut: func(err error) {
			if errors.Is(err, relay.ErrWriterGone) || r.Context().Err() != nil && cr.cfg.Ctx.Err() == nil {
				// Its answer was recorded at its head; the app's client went
				// away while its body came (DESIGN §2c: the road is kept).
				cr.cfg.OnGaveUp("call")
				cr.cfg.Log.Info("an app stopped waiting: its call's answer is ended, and the road kept", "request_id", c.RequestID, "peer", c.Peer, "road", e.road, "bytes", n)
				return
			}
			cr.cfg.Peers.Ended(e.cand, peerclient.Judge(peerclient.InBody, false, err), err)
			cr.cfg.OnCut("call_answer")
			cr.cfg.Log.Warn("a call's answer broke off on its way to the app; its connection is cut so it cannot take the answer for whole",
				"request_id", c.RequestID, "peer", c.Peer, "bytes", n, "err", err)
		},
	})
}

// invalidate drops the cached reads a call may have changed (RFC 9111
// §4.4): its own URI, and the app's Location and Content-Location when
// they name a path of the same app. A call whose outcome is unknown may
// have acted too, so it invalidates as well; dropping more than needed
// costs one read.
func (cr *Caller) invalidate(c *record.Call, ans *record.Answer) {
	if cr.cfg.Cache == nil {
		return
	}
	cr.cfg.Cache.Invalidate(readcache.Key(c.Peer, c.App, c.Path))
	if ans == nil {
		return
	}
	for _, h := range []string{"Location", "Content-Location"} {
		v := ans.Headers.Get(h)
		u, err := url.Parse(v)
		if v == "" || err != nil || u.IsAbs() || u.Host != "" || !strings.HasPrefix(u.Path, "/") {
			continue // another origin's, or relative to a path Delta does not guess
		}
		pq := u.EscapedPath()
		if u.RawQuery != "" {
			pq += "?" + u.RawQuery
		}
		cr.cfg.Cache.Invalidate(readcache.Key(c.Peer, c.App, pq))
	}
}

// otherDoor is the conflict of a request id in use by a call that came in
// by another door: nothing of that call is told (issue 63, D9: through a
// forward without a token, anyone could have had the answer of a call made
// with it, or its method, target and time).
func otherDoor(rid string) string {
	return proto.NotSent(fmt.Sprintf("request id %s is in use on this computer by a call that came in by another door (the local API with its token, or another forward); nothing of it is told here: choose another request id", rid), "")
}

// refuseCall counts and writes an outcome that is not recorded in the
// journal (the call was refused before it was): nothing was sent.
func (cr *Caller) refuseCall(w http.ResponseWriter, o localapi.Outcome, detail, rid, peer string) {
	cr.cfg.OnCall(o)
	cr.replyCallError(w, o, detail, localapi.NothingSent, rid, peer, "")
}

// refuseTooLarge refuses a call whose body is over the limit: bad_request,
// with status 413, nothing sent.
func (cr *Caller) refuseTooLarge(w http.ResponseWriter, r *http.Request, detail, rid, peer string) {
	if !strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		// Read (and drop) the rest of a body of up to 64 MiB first: if the
		// app is still writing when the connection closes, it gets a reset
		// instead of this answer. An app that waits for 100 Continue sends
		// nothing more.
		io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))
	}
	cr.cfg.OnCall(localapi.BadRequest)
	doors.RefuseAndClose(w)
	proto.WriteError(w, http.StatusRequestEntityTooLarge, localapi.ErrorBody{Error: string(localapi.BadRequest), Detail: detail, RequestID: rid, Peer: peer}.With(localapi.NothingSent))
}

func (cr *Caller) replyCallError(w http.ResponseWriter, o localapi.Outcome, detail string, g localapi.Guarantee, rid, peer, road string) {
	cr.replyCallErrorStatus(w, 0, o, detail, g, rid, peer, road)
}

// replyCallErrorStatus is replyCallError with the HTTP status when it is
// not o's (0: o's): 413 for a body the owner found too large.
func (cr *Caller) replyCallErrorStatus(w http.ResponseWriter, status int, o localapi.Outcome, detail string, g localapi.Guarantee, rid, peer, road string) {
	if status == 0 {
		status = o.Status()
	}
	w.Header().Set("Connection", "close")
	proto.WriteError(w, status, localapi.ErrorBody{Error: string(o), Detail: detail, RequestID: rid, Peer: peer, Road: road}.With(g))
}

// markBehind says on an answer that its outcome is held in memory, not yet
// in the journal.
func markBehind(w http.ResponseWriter) {
	w.Header().Set(localapi.HeaderJournal, "behind; this outcome is held in memory because the journal could not write it (is the disk full?), and is written when it can")
}

// writeAnswer writes the owner app's answer to the app.
func writeAnswer(w http.ResponseWriter, ans *record.Answer, body []byte, rid, road string, replayed bool) {
	omitted, again := "", ""
	if body == nil && ans.Omitted {
		omitted = "the answer's body was over 1 MiB and is not kept for replay"
	}
	if body == nil {
		body = ans.Body
	}
	if replayed {
		again = "true"
	}
	relay.Recorded(w, ans.Status, ans.Headers, body, localapi.HeaderOutcome, string(localapi.Answered), localapi.HeaderRequestID, rid,
		localapi.HeaderRoute, road, localapi.HeaderReplayed, again, localapi.HeaderAnswerOmitted, omitted, "Connection", "close")
}

// replyExisting answers a repeat of a call already in the journal with that
// call's outcome; if it is still being sent, it waits for it first: as
// long as the earlier one may wait for its owner (the timeout said, else
// as long as this app waits).
func (cr *Caller) replyExisting(w http.ResponseWriter, r *http.Request, rid string, timeout time.Duration) {
	ctx := r.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout+callGrace+8*time.Second)
		defer cancel()
	}
	var c *record.Call
	for {
		changed := cr.cfg.DB.Changed()
		var err error
		if c, err = cr.cfg.DB.Calls().Get(ctx, rid); err != nil {
			cr.refuseCall(w, localapi.Unavailable, proto.NotSent("could not read the journal ("+err.Error()+")", ""), rid, "")
			return
		}
		if c.State != record.Sending {
			break
		}
		select {
		case <-changed:
			continue
		case <-ctx.Done():
		}
		cr.cfg.OnCall(localapi.Unknown)
		cr.replyCallError(w, localapi.Unknown, fmt.Sprintf("the same call (request id %s) is still being sent by an earlier request and has no outcome yet; it is not sent twice; ask GET /v1/calls/%s for its outcome", rid, rid), localapi.NoGuarantee, rid, c.Peer, "")
		return
	}
	road := ""
	if n := len(c.Attempts); n > 0 {
		road = c.Attempts[n-1].Road
	}
	if c.Behind {
		markBehind(w)
	}
	if c.Answer != nil && (c.State == record.Answered || c.State == record.CarriedOut) {
		cr.cfg.OnCall(localapi.Answered)
		writeAnswer(w, c.Answer, nil, rid, road, true)
		return
	}
	again := "; this request id was used before, so it is not sent again"
	o, detail, g := localapi.Unknown, fmt.Sprintf("this call is %s (%s)%s", c.State, c.Detail, again), localapi.NoGuarantee
	switch c.State {
	case record.NotCarriedOut:
		o, detail, g = localapi.Unavailable, c.Detail+again, localapi.NotCarried
	case record.Unavailable:
		o, detail, g = localapi.Outcome(c.Outcome), c.Detail+again, localapi.NotCarried
		if len(c.Attempts) == 0 || !c.Attempts[len(c.Attempts)-1].FirstByte {
			g = localapi.NothingSent
		}
	}
	cr.cfg.OnCall(o)
	cr.replyCallError(w, o, detail, g, rid, c.Peer, road)
}
