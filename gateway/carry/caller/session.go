package caller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/carry/relay"
	"github.com/delta-roads/delta/gateway/carry/session"
	"github.com/delta-roads/delta/gateway/carry/transfer"
	"github.com/delta-roads/delta/gateway/net/doors"
	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// Session opens a session (an Upgrade: a WebSocket) with app on peer and
// relays it (DESIGN §2a). Its opening follows the call rules up to its
// first byte: a connection of its own, over the best road then, one
// fall-back before anything was written; it is sent at most once and
// never journaled. After the owner app's 101 the app's connection is
// taken from the server and bytes go both ways until either end closes;
// a lost road closes both ends (the peer client closes connections over
// a lost interface), and the app opens a new session, which takes the
// new best road.
func (cr *Caller) Session(w http.ResponseWriter, r *http.Request, t Target) {
	if tr := cr.cfg.Transfers; tr != nil {
		release, ok := tr.AdmitSession()
		if !ok {
			cr.cfg.OnRead(localapi.Unavailable)
			doors.RefuseAndClose(w)
			proto.WriteError(w, http.StatusServiceUnavailable, localapi.ErrorBody{Error: string(localapi.Unavailable), Peer: t.Peer,
				Detail: proto.NotSent(fmt.Sprintf("this Delta has %d sessions open, as many as it keeps at once", transfer.MaxSessions), t.Peer)}.With(localapi.NothingSent))
			return
		}
		defer release()
	}
	defer doors.HijackDone(r.Context()) // the app's connection, once the session ends
	upgrade := r.Header.Get("Upgrade")
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(cr.cfg.Ctx, cancel)()
	o := &openRun{cr: cr, r: r, t: t, ctx: ctx, upgrade: upgrade, started: cr.cfg.Now()}
	err := cr.cfg.Peers.Do(ctx, peerclient.Call, t.Peer, t.Pin, o.attempt)
	a, fail, road, firstErr := o.a, o.fail, o.road, o.firstErr
	var un *peerclient.Unattempted
	switch {
	case errors.As(err, &un) && un.FellBack && firstErr != nil:
		fail = firstErr
	case errors.As(err, &un):
		fail = &readFailure{o: un.Outcome(), g: un.Guarantee(), road: string(un.Road), detail: un.Detail}
	}
	if fail != nil && fail.gaveUp {
		return // nobody waits for it
	}
	if fail != nil || a == nil {
		if fail == nil {
			fail = &readFailure{o: localapi.Unavailable, detail: "no answer to the session's opening"}
		}
		cr.cfg.OnRead(fail.o)
		proto.WriteError(w, fail.o.Status(), localapi.ErrorBody{Error: string(fail.o), Detail: fail.detail, Peer: t.Peer, Road: fail.road}.With(fail.g))
		return
	}
	cr.cfg.OnRead(localapi.Answered)
	h := a.Header.Clone()
	proto.StripDelta(h)
	if a.StatusCode != http.StatusSwitchingProtocols {
		// The owner app declined the upgrade: its answer, as a read's.
		defer a.Body.Close()
		relay.Relay(w, relay.Answer{Status: a.StatusCode, Header: h, Length: a.ContentLength, Trailer: &a.Trailer, Method: r.Method,
			Set:   []string{localapi.HeaderOutcome, string(localapi.Answered), localapi.HeaderRoute, road},
			Ready: a.Buffered() > 0, Body: a.Body,
			OnCut: func(err error) {
				if !errors.Is(err, relay.ErrWriterGone) {
					cr.cfg.OnCut("read")
				}
			}})
		return
	}
	far, farR := a.Switched()
	h.Set(localapi.HeaderOutcome, string(localapi.Answered))
	h.Set(localapi.HeaderRoute, road)
	near, nearR, err := session.Take(w, h)
	if err != nil {
		far.Close()
		if errors.Is(err, session.ErrNotTaken) {
			proto.WriteError(w, http.StatusInternalServerError, localapi.ErrorBody{Error: string(localapi.Unknown), Detail: fmt.Sprintf("Delta could not take the app's connection for the session (%v); the session was opened on %s and is closed", err, t.Peer), Peer: t.Peer, Road: road})
		}
		return
	}
	var x *transfer.Transfer
	if cr.cfg.Transfers != nil {
		x = cr.cfg.Transfers.Start(localapi.TransferSession, t.Peer, t.App, t.PathQuery, road)
		defer x.Done()
	}
	stop := context.AfterFunc(cr.cfg.Ctx, func() { near.Close(); far.Close() }) // Delta stopping ends it
	defer stop()
	err = session.Relay(near, nearR, far, farR, x)
	cr.cfg.Log.Info("session closed", "peer", t.Peer, "app", t.App, "path", t.PathQuery, "road", road, "err", err)
}

// openRun is a session's opening as peerclient.Do attempts it: on a
// connection of its own, written once; fail is what the app is told when
// no 101 came (firstErr: the first failure before anything was written),
// a the owner's answer, road the road it went on.
type openRun struct {
	cr       *Caller
	r        *http.Request
	t        Target
	ctx      context.Context
	upgrade  string
	started  time.Time
	a        *h1.Answer
	fail     *readFailure
	firstErr *readFailure
	road     string
}

// attempt is one try at opening the session (peerclient.Do's attempt).
func (o *openRun) attempt(try peerclient.Try) peerclient.Result {
	cr, r, t := o.cr, o.r, o.t
	cand := try.Cand
	rc, err := cr.cfg.Peers.Dial(o.ctx, cand)
	if err != nil && r.Context().Err() != nil {
		o.fail = &readFailure{gaveUp: true, o: localapi.Unavailable}
		cr.gaveUp("session", t, cand, o.started, "while connecting")
		return peerclient.GaveUp(cand)
	}
	if err != nil {
		o.fail = &readFailure{o: localapi.Unavailable, g: localapi.NothingSent, road: string(cand.Road),
			detail: proto.NotSent(fmt.Sprintf("%s did not answer (%s failed: %v)", t.Peer, peerclient.Describe(cand, "connect", h1.IsTimeout(err)), err), t.Peer)}
		if o.firstErr == nil {
			o.firstErr = o.fail
		}
		return peerclient.DialFailed(cand, err)
	}
	o.road = string(rc.Cand.Road)
	h := t.header(r.Header)
	session.Request(h, o.upgrade)
	t.Wait.Set(h)
	if app := r.Header.Get(localapi.HeaderApp); app != "" {
		h.Set(localapi.HeaderApp, app)
	}
	req, err := peerclient.AppRequest(o.ctx, try, r.Method, t.App, t.PathQuery, h, http.NoBody)
	if err != nil {
		rc.Close()
		o.fail = &readFailure{o: localapi.BadRequest, g: localapi.NothingSent, detail: proto.NotSent(fmt.Sprintf("the path %q does not make a valid request (%v)", t.PathQuery, err), "")}
		return peerclient.Replied()
	}
	var opt h1.Options // the 101: as long as the app waits for it, or the timeout said
	if said := t.Wait.Said; said > 0 {
		opt.Wait = said + readGrace
	}
	o.a, err = h1.Once(o.ctx, rc, req, opt)
	var oe *h1.Error
	switch {
	case err != nil && errors.As(err, &oe) && !oe.Sent:
		o.fail = &readFailure{o: localapi.Unavailable, g: localapi.NothingSent, road: o.road,
			detail: proto.NotSent(fmt.Sprintf("%s did not take the session's opening (%v)", t.Peer, err), t.Peer)}
		if o.firstErr == nil {
			o.firstErr = o.fail
		}
		return peerclient.FailedOn(rc.Cand, err)
	case err != nil:
		o.fail = &readFailure{o: localapi.Unknown, road: o.road, detail: fmt.Sprintf(
			"the session's opening left for %s and no answer came (%v); a session is never opened twice: open a new one", rc.Cand, err)}
		gone := r.Context().Err() != nil
		if gone {
			o.fail.gaveUp = true
			cr.gaveUp("session", t, rc.Cand, o.started, "waiting for its opening's answer")
		}
		return peerclient.LeftUnanswered(rc.Cand, peerclient.Judge(peerclient.BeforeHead, gone, err), err)
	}
	reply := peerclient.Classify(o.a.Response)
	if reply.Err == proto.PeerAnswered {
		o.fail = nil
		return peerclient.Replied()
	}
	f := mapOwnerReadReply(t.Peer, o.road, reply)
	o.fail, o.a = &f, nil
	if reply.Err == proto.PeerUnauthorized {
		return peerclient.RefusedAtDoor(rc.Cand, errors.New(f.detail))
	}
	return peerclient.Replied()
}
