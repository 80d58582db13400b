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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/journal"
	"github.com/delta-roads/delta/gateway/oneshot"
	"github.com/delta-roads/delta/gateway/peerclient"
	"github.com/delta-roads/delta/gateway/pintls"
	"github.com/delta-roads/delta/gateway/proto"
	"github.com/delta-roads/delta/gateway/readcache"
	"github.com/delta-roads/delta/gateway/roads"
)

// Target is a parsed /v1/peers/{peer}/{app}/{path...} request.
type Target struct {
	Peer, App string
	PathQuery string // escaped, starting with "/", with "?query" if any
	Timeout   time.Duration
	Pin       roads.Road
}

// Config configures a Caller.
type Config struct {
	// DB is the caller's journal. Required.
	DB *journal.DB
	// Peers reaches peers; Router is its router. Required.
	Peers  *peerclient.Client
	Router roads.Router
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
	// OnCall, OnRead and OnCacheHit count outcomes. Required.
	OnCall, OnRead func(proto.Outcome)
	OnCacheHit     func()
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

// callGrace is how long past X-Delta-Timeout (and the connect) the caller
// waits for the owner's reply: the owner answers outcome_unknown itself at
// the deadline, and that reply has to travel.
const callGrace = 3 * time.Second

// Call carries a call to its peer at most once (DESIGN §2, §4).
func (cr *Caller) Call(w http.ResponseWriter, r *http.Request, t Target) {
	rid := r.Header.Get(proto.HeaderRequestID)
	if rid == "" {
		rid = newRequestID()
	} else if err := proto.CheckRequestID(rid); err != nil {
		cr.refuseCall(w, proto.BadRequest, proto.NotSent(err.Error(), ""), "", t.Peer)
		return
	}
	if r.ContentLength > proto.MaxCallBody {
		cr.refuseTooLarge(w, r, proto.NotSent(fmt.Sprintf("the body is %d bytes, over the limit of %d bytes (8 MiB) for a call", r.ContentLength, proto.MaxCallBody), ""), rid, t.Peer)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, proto.MaxCallBody+1))
	if err != nil {
		cr.refuseCall(w, proto.BadRequest, proto.NotSent("could not read the request body from the app: "+err.Error(), ""), rid, t.Peer)
		return
	}
	if len(body) > proto.MaxCallBody {
		cr.refuseTooLarge(w, r, proto.NotSent(fmt.Sprintf("the body is over the limit of %d bytes (8 MiB) for a call", proto.MaxCallBody), ""), rid, t.Peer)
		return
	}
	callerApp := r.Header.Get(proto.HeaderApp)
	if len(callerApp) > 128 {
		callerApp = callerApp[:128]
	}
	c := &journal.Call{RequestID: rid, Peer: t.Peer, App: t.App, CallerApp: callerApp,
		Method: r.Method, Path: t.PathQuery, Digest: proto.Digest(r.Method, t.App, t.PathQuery, body)}
	// What a person may have to check later: the headers as sent (the
	// ticket aside) and the body.
	sent := proto.ForwardHeaders(r.Header)
	sent.Set(proto.HeaderRequestID, rid)
	sent.Set(proto.HeaderTimeout, proto.FormatTimeout(t.Timeout))
	sent.Set(proto.HeaderDigest, c.Digest)
	if callerApp != "" {
		sent.Set(proto.HeaderApp, callerApp)
	}
	c.Request = journal.KeepRequest(sent, body)
	// The journal answers before anything that depends on the roads: a
	// Delta that just started may not know its peer's roads yet, and an id
	// it holds must still get its recorded outcome (or 409).
	existing, err := cr.cfg.DB.Call(r.Context(), rid)
	switch {
	case err == nil:
		cr.answerExisting(w, r, c, existing, t.Timeout)
		return
	case !errors.Is(err, journal.ErrNotFound):
		cr.refuseCall(w, proto.Unavailable, proto.NotSent("could not read the journal ("+err.Error()+")", ""), rid, t.Peer)
		return
	}
	if !cr.cfg.Router.Known(t.Peer) {
		cr.refuseCall(w, proto.NotFound, proto.NotSent(fmt.Sprintf("%q is not one of this computer's peers", t.Peer), ""), rid, t.Peer)
		return
	}
	cr.sendCall(w, r, t, c, body)
}

// answerExisting answers a call whose request id is in the journal: the
// same request gets that call's outcome, another one 409.
func (cr *Caller) answerExisting(w http.ResponseWriter, r *http.Request, c, existing *journal.Call, timeout time.Duration) {
	if existing.Digest != c.Digest {
		cr.refuseCall(w, proto.Conflict, proto.NotSent(fmt.Sprintf("request id %s is in use on this computer for another request (%s %s/%s%s at %s)", c.RequestID, existing.Method, existing.Peer, existing.App, existing.Path, existing.CreatedAt.Format(time.RFC3339)), ""), c.RequestID, c.Peer)
		return
	}
	cr.replyExisting(w, r, c.RequestID, timeout)
}

// sendCall makes the attempts of a call, records its outcome, and only then
// tells the app. Each attempt connects first (a connect carries nothing),
// then is recorded, then writes: the first in the same transaction that
// records the call as sending, so a crash after its first byte leaves the
// attempt in the record and no attempt costs a wait of its own.
func (cr *Caller) sendCall(w http.ResponseWriter, r *http.Request, t Target, c *journal.Call, body []byte) {
	// The call goes on if the app hangs up: its outcome must be recorded.
	// It ends early only when the gateway stops.
	if !cr.beginSend() {
		cr.recordUnsent(w, r, c, nil, proto.Unavailable, proto.NotSent("Delta is stopping", t.Peer), "", t.Timeout)
		return
	}
	defer cr.calls.Done()
	base, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	defer context.AfterFunc(cr.cfg.Ctx, cancel)()

	var attempts []journal.Attempt // written with the outcome, in one transaction
	recorded := false              // the call is in the journal as sending
	handled := false               // the app was answered already (a concurrent same id)
	var end, firstFailure *callEnd // how it ended; the failure that led to a fall-back
	err := cr.cfg.Peers.Do(base, peerclient.Call, t.Peer, t.Pin, func(try peerclient.Try) peerclient.Result {
		cand := try.Cand
		req, err := http.NewRequest(c.Method, "http://"+cand.Address+"/delta/v1/apps/"+t.App+t.PathQuery, bytes.NewReader(body))
		if err != nil {
			end = &callEnd{state: journal.Unavailable, o: proto.BadRequest, detail: proto.NotSent(fmt.Sprintf("the path %q does not make a valid request (%v)", t.PathQuery, err), "")}
			return peerclient.Result{Verdict: peerclient.Done}
		}
		req.Header = proto.ForwardHeaders(r.Header)
		if try.Ticket != "" {
			req.Header.Set("Authorization", proto.TicketAuth(try.Ticket))
		}
		req.Header.Set(proto.HeaderRequestID, c.RequestID)
		req.Header.Set(proto.HeaderTimeout, proto.FormatTimeout(t.Timeout))
		req.Header.Set(proto.HeaderDigest, c.Digest)
		if c.CallerApp != "" {
			req.Header.Set(proto.HeaderApp, c.CallerApp)
		}
		actx, acancel := context.WithTimeout(base, cand.Road.ConnectTimeout()+t.Timeout+callGrace)
		defer acancel()
		started := cr.cfg.Now()
		used := cand // the road the call went on (a race may pick another)
		var res *oneshot.Response
		rc, err := cr.cfg.Peers.Dial(actx, cand)
		if err != nil {
			err = &oneshot.Error{Op: "connect", Err: err, Timeout: oneshot.IsTimeout(err)}
		} else {
			used = rc.Cand
			at := journal.Attempt{N: len(attempts) + 1, Road: string(used.Road), Address: used.Address, StartedAt: started, FirstByte: true}
			var existing *journal.Call
			var jerr error
			if !recorded {
				c.Attempts = append(slices.Clone(attempts), at)
				existing, jerr = cr.cfg.DB.BeginCall(actx, c)
			} else {
				jerr = cr.cfg.DB.AddAttempt(actx, c.RequestID, at)
			}
			if jerr != nil || existing != nil {
				rc.Close()           // nothing was written to it
				if existing != nil { // the same id, sent by another request meanwhile
					cr.answerExisting(w, r, c, existing, t.Timeout)
					handled = true
				} else {
					end = &callEnd{state: journal.Unavailable, o: proto.Unavailable, road: string(used.Road),
						detail: proto.NotSent("could not record the call in the journal ("+jerr.Error()+")", "")}
				}
				return peerclient.Result{Verdict: peerclient.Done}
			}
			recorded = true
			res, err = oneshot.Do(actx, func(context.Context) (net.Conn, error) { return rc, nil }, req, proto.MaxAnswerBody)
		}
		var oe *oneshot.Error
		sent := err == nil || errors.As(err, &oe) && oe.Sent
		at := journal.Attempt{N: len(attempts) + 1, Road: string(used.Road), Address: used.Address, StartedAt: started, FirstByte: sent}
		if err != nil {
			at.Error = err.Error()
		} else if pe := proto.PeerError(res.Header.Get(proto.HeaderOutcome)); pe != proto.PeerAnswered {
			var eb proto.ErrorBody
			_ = json.Unmarshal(res.Bytes, &eb) // a reply that is not Delta's JSON has no detail to quote
			at.Error = fmt.Sprintf("%s replied %d %s: %s", t.Peer, res.StatusCode, pe, eb.Detail)
		}
		attempts = append(attempts, at)
		if err != nil {
			if !sent {
				o, detail := proto.Unavailable, proto.NotSent(fmt.Sprintf("%s did not answer (%s failed: %v)", t.Peer, peerclient.Describe(cand, oe.Op, oe.Timeout), oe.Err), t.Peer)
				var mm *pintls.MismatchError
				if errors.As(err, &mm) {
					o, detail = proto.Forbidden, proto.NotSent(fmt.Sprintf("%s's certificate on %s is not the one learned over the tailnet (%v)", t.Peer, cand, mm), t.Peer)
					cr.cfg.Log.Warn("certificate pin mismatch", "peer", t.Peer, "road", cand.Road, "address", cand.Address, "pinned", mm.Want, "presented", mm.Got)
				}
				end = &callEnd{state: journal.Unavailable, o: o, detail: detail, road: string(cand.Road)}
				if firstFailure == nil {
					firstFailure = end
				}
				return peerclient.Result{Verdict: peerclient.Failed, RoadFault: true, Road: cand.Road, Tried: peerclient.RacedRoads(cand), Reason: err}
			}
			detail := fmt.Sprintf("the call left for %s and no complete answer came (%s: %v); it may or may not have been carried out; it will not be sent again, and Delta is asking %s what happened", used, oe.Op, oe.Err, t.Peer)
			if cr.cfg.Ctx.Err() != nil {
				detail = fmt.Sprintf("Delta was stopping while the call waited for %s's answer; it left and may or may not have been carried out; it will not be sent again, and Delta will ask %s what happened when it runs again", t.Peer, t.Peer)
			}
			end = &callEnd{state: journal.Unknown, o: proto.Unknown, detail: detail, road: string(used.Road)}
			return peerclient.Result{Verdict: peerclient.Failed, Sent: true, RoadFault: true, Road: cand.Road}
		}
		peerErr := proto.PeerError(res.Header.Get(proto.HeaderOutcome))
		state, o, detail := mapOwnerReply(t.Peer, peerErr, res)
		end = &callEnd{state: state, o: o, detail: detail, road: string(used.Road), replayed: res.Header.Get(proto.HeaderReplayed) == "true", body: res.Bytes}
		if o == proto.Answered {
			h := res.Header.Clone()
			proto.StripHop(h)
			h.Del("Content-Length")
			end.ans = journal.NewAnswer(res.StatusCode, h, res.Bytes, proto.MaxStoredAnswer)
		}
		if peerErr == proto.PeerUnauthorized { // renewed and sent once more, if the loop allows
			return peerclient.Result{Verdict: peerclient.DoorRefused, Sent: true, Road: used.Road, NeedsTicket: used.NeedsTicket}
		}
		return peerclient.Result{Verdict: peerclient.Done}
	})
	if handled {
		return
	}
	var nr *peerclient.NoRoadError
	var te *peerclient.TicketError
	switch {
	case errors.As(err, &nr) && nr.FellBack && firstFailure != nil:
		end = firstFailure // after a fall-back, the failure that led to it is the answer
	case errors.As(err, &nr):
		end = &callEnd{state: journal.Unavailable, o: proto.Unavailable, detail: noRoadDetail(t.Peer, nr.Err)}
	case errors.As(err, &te):
		end = &callEnd{state: journal.Unavailable, o: proto.Unavailable, road: string(te.Road), detail: proto.NotSent(fmt.Sprintf("no ticket for %s (%v)", t.Peer, te.Err), t.Peer)}
	}
	if !recorded {
		// Nothing was sent: recorded at once in its final state.
		cr.recordUnsent(w, r, c, attempts, end.o, end.detail, end.road, t.Timeout)
		return
	}
	cr.finishCall(w, c, attempts, *end)
}

// callEnd is how a call ended: the state recorded, the outcome the app is
// told with its detail and road, and the answer.
type callEnd struct {
	state    journal.CallState
	o        proto.Outcome
	detail   string
	road     string
	ans      *journal.Answer
	replayed bool
	body     []byte // what the app is given when answered (nil: ans.Body)
}

// recordUnsent records a call that never left as unavailable, with its
// attempts (none wrote a byte), and only then tells the app. If the same
// request id was recorded meanwhile by another request, that one's outcome
// is the answer.
func (cr *Caller) recordUnsent(w http.ResponseWriter, r *http.Request, c *journal.Call, attempts []journal.Attempt, o proto.Outcome, detail, road string, timeout time.Duration) {
	c.State, c.Outcome, c.Detail, c.Attempts = journal.Unavailable, string(o), detail, attempts
	// Not cr.cfg.Ctx: the outcome is recorded even while the gateway closes.
	existing, err := cr.cfg.DB.BeginCall(context.WithoutCancel(cr.cfg.Ctx), c)
	if existing != nil {
		cr.answerExisting(w, r, c, existing, timeout)
		return
	}
	if err != nil {
		// Nothing was sent either way; the app is told so, and a repeat
		// will be tried afresh.
		cr.cfg.Log.Error("could not record a call that was not sent", "request_id", c.RequestID, "outcome", o, "err", err)
	}
	cr.cfg.OnCall(o)
	cr.replyCallError(w, o, detail, c.RequestID, c.Peer, road)
}

// mapOwnerReply turns the owner's reply to a call into the caller's state
// and outcome (DESIGN §2: only replies made by the app are answered).
func mapOwnerReply(peer string, pe proto.PeerError, res *oneshot.Response) (journal.CallState, proto.Outcome, string) {
	var eb proto.ErrorBody
	json.Unmarshal(res.Bytes, &eb)
	said := eb.Detail
	if said == "" {
		said = fmt.Sprintf("%d %s", res.StatusCode, http.StatusText(res.StatusCode))
	}
	notDone := "; it was not carried out"
	if strings.Contains(said, "nothing was carried out") {
		notDone = ""
	}
	switch pe {
	case proto.PeerAnswered:
		return journal.Answered, proto.Answered, ""
	case proto.PeerUnauthorized:
		return journal.Unavailable, proto.Forbidden, fmt.Sprintf("%s refused us at its door twice, with a renewed ticket too (%s)%s", peer, said, notDone)
	case proto.PeerForbidden:
		return journal.Unavailable, proto.Forbidden, fmt.Sprintf("%s refused us at its door (%s)%s", peer, said, notDone)
	case proto.PeerAppNotFound:
		return journal.Unavailable, proto.NotFound, fmt.Sprintf("%s: %s%s", peer, said, notDone)
	case proto.PeerAppDown, proto.PeerFenced, proto.PeerNotDone:
		return journal.Unavailable, proto.Unavailable, fmt.Sprintf("%s: %s%s", peer, said, notDone)
	case proto.PeerReused:
		return journal.Unavailable, proto.Conflict, fmt.Sprintf("%s: %s%s", peer, said, notDone)
	case proto.PeerBadRequest, proto.PeerTooLarge:
		return journal.Unavailable, proto.BadRequest, fmt.Sprintf("%s refused the request as malformed (%s)%s", peer, said, notDone)
	case proto.PeerInProgress, proto.PeerUnknown, proto.PeerAppUnknown, proto.PeerInterrupted, proto.PeerAnswerExpired:
		return journal.Unknown, proto.Unknown, fmt.Sprintf("%s says: %s; it will not be sent again, and Delta is asking %s what happened", peer, said, peer)
	}
	return journal.Unknown, proto.Unknown, fmt.Sprintf("%s sent a reply that is not Delta's (%d, X-Delta-Outcome %q); the call may or may not have been carried out; it will not be sent again, and Delta is asking %s what happened",
		peer, res.StatusCode, pe, peer)
}

// finishCall records a call's outcome (a compare-and-set from sending) and
// then tells the app.
func (cr *Caller) finishCall(w http.ResponseWriter, c *journal.Call, attempts []journal.Attempt, e callEnd) {
	t := journal.Transition{From: []journal.CallState{journal.Sending}, To: e.state, Outcome: string(e.o), Detail: e.detail, Answer: e.ans, Attempts: attempts}
	if e.state == journal.Unknown {
		t.NextAsk = cr.cfg.Now().Add(cr.cfg.FirstAsk)
	}
	// Not cr.cfg.Ctx: an outcome is recorded even while the gateway closes (Close
	// waits for it before it closes the journal).
	moved, held, err := cr.cfg.DB.MoveOrHold(context.WithoutCancel(cr.cfg.Ctx), c.RequestID, t)
	if err != nil || !moved {
		cr.cfg.Log.Error("could not record a call's outcome", "request_id", c.RequestID, "outcome", e.o, "err", err)
	}
	if held {
		cr.cfg.Log.Error("the journal could not write a call's outcome; it is held in memory and written when the journal takes writes again", "request_id", c.RequestID, "outcome", e.o, "err", cr.cfg.DB.Behind().Err)
		markBehind(w)
	}
	cr.cfg.OnCall(e.o)
	if e.state == journal.Answered || e.state == journal.Unknown {
		cr.invalidate(c, e.ans)
	}
	if e.state == journal.Unknown {
		cr.cfg.Log.Warn("call outcome unknown", "request_id", c.RequestID, "peer", c.Peer, "detail", e.detail)
		cr.cfg.Wake()
	}
	if e.o != proto.Answered {
		cr.replyCallError(w, e.o, e.detail, c.RequestID, c.Peer, e.road)
		return
	}
	writeAnswer(w, e.ans, e.body, c.RequestID, e.road, e.replayed)
}

// invalidate drops the cached reads a call may have changed (RFC 9111
// §4.4): its own URI, and the app's Location and Content-Location when
// they name a path of the same app. A call whose outcome is unknown may
// have acted too, so it invalidates as well; dropping more than needed
// costs one read.
func (cr *Caller) invalidate(c *journal.Call, ans *journal.Answer) {
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

// refuseCall counts and writes an outcome that is not recorded in the
// journal (the call was refused before it was).
func (cr *Caller) refuseCall(w http.ResponseWriter, o proto.Outcome, detail, rid, peer string) {
	cr.cfg.OnCall(o)
	cr.replyCallError(w, o, detail, rid, peer, "")
}

// refuseTooLarge refuses a call whose body is over the limit: bad_request,
// with status 413.
func (cr *Caller) refuseTooLarge(w http.ResponseWriter, r *http.Request, detail, rid, peer string) {
	// Read (and drop) the rest of a body of up to 64 MiB first: if the app
	// is still writing when the connection closes, it gets a reset instead
	// of this answer.
	io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))
	cr.cfg.OnCall(proto.BadRequest)
	w.Header().Set("Connection", "close")
	proto.WriteError(w, http.StatusRequestEntityTooLarge, proto.ErrorBody{Error: string(proto.BadRequest), Detail: detail, RequestID: rid, Peer: peer})
}

func (cr *Caller) replyCallError(w http.ResponseWriter, o proto.Outcome, detail, rid, peer, road string) {
	w.Header().Set("Connection", "close")
	proto.WriteError(w, o.Status(), proto.ErrorBody{Error: string(o), Detail: detail, RequestID: rid, Peer: peer, Road: road})
}

// markBehind says on an answer that its outcome is held in memory, not yet
// in the journal.
func markBehind(w http.ResponseWriter) {
	w.Header().Set(proto.HeaderJournal, "behind; this outcome is held in memory because the journal could not write it (is the disk full?), and is written when it can")
}

// writeAnswer writes the owner app's answer to the app.
func writeAnswer(w http.ResponseWriter, ans *journal.Answer, body []byte, rid, road string, replayed bool) {
	h := w.Header()
	for k, vs := range ans.Headers {
		h[k] = vs
	}
	h.Set(proto.HeaderOutcome, string(proto.Answered))
	h.Set(proto.HeaderRequestID, rid)
	if road != "" {
		h.Set(proto.HeaderRoute, road)
	}
	if replayed {
		h.Set(proto.HeaderReplayed, "true")
	}
	if body == nil && ans.Omitted {
		h.Set(proto.HeaderAnswerOmitted, "the answer's body was over 1 MiB and is not kept for replay")
	}
	if body == nil {
		body = ans.Body
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	w.WriteHeader(ans.Status)
	w.Write(body)
}

// replyExisting answers a repeat of a call already in the journal with that
// call's outcome; if it is still being sent, it waits for it first.
func (cr *Caller) replyExisting(w http.ResponseWriter, r *http.Request, rid string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(r.Context(), timeout+callGrace+8*time.Second)
	defer cancel()
	var c *journal.Call
	for {
		changed := cr.cfg.DB.Changed()
		var err error
		if c, err = cr.cfg.DB.Call(ctx, rid); err != nil {
			cr.refuseCall(w, proto.Unavailable, proto.NotSent("could not read the journal ("+err.Error()+")", ""), rid, "")
			return
		}
		if c.State != journal.Sending {
			break
		}
		select {
		case <-changed:
			continue
		case <-ctx.Done():
		}
		cr.refuseCall(w, proto.Unknown, fmt.Sprintf("the same call (request id %s) is still being sent by an earlier request and has no outcome yet; it is not sent twice; ask GET /v1/calls/%s for its outcome", rid, rid), rid, c.Peer)
		return
	}
	road := ""
	if n := len(c.Attempts); n > 0 {
		road = c.Attempts[n-1].Road
	}
	if c.Behind {
		markBehind(w)
	}
	if c.Answer != nil && (c.State == journal.Answered || c.State == journal.CarriedOut) {
		cr.cfg.OnCall(proto.Answered)
		writeAnswer(w, c.Answer, nil, rid, road, true)
		return
	}
	again := "; this request id was used before, so it is not sent again"
	o, detail := proto.Unknown, fmt.Sprintf("this call is %s (%s)%s", c.State, c.Detail, again)
	switch c.State {
	case journal.NotCarriedOut:
		o, detail = proto.Unavailable, c.Detail+again
	case journal.Unavailable:
		o, detail = proto.Outcome(c.Outcome), c.Detail+again
	}
	cr.cfg.OnCall(o)
	cr.replyCallError(w, o, detail, rid, c.Peer, road)
}
