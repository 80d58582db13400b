// Package owner is the owner's side of the peer API (DESIGN §4): behind a
// door that identifies the calling computer, it forwards reads to the
// local owner apps through a reverse proxy, and calls once each through the
// receipts, which decide durably before anything is forwarded; it answers
// what it knows of a call by request id.
package owner

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/journal"
	"github.com/delta-roads/delta/gateway/oneshot"
	"github.com/delta-roads/delta/gateway/proto"
	"github.com/delta-roads/delta/gateway/view"
)

// appConnectTimeout bounds a connect to a local owner app.
const appConnectTimeout = 2 * time.Second

// ExtraWait is how long the owner keeps waiting for a slow app after the
// caller's deadline has passed (DESIGN §8).
const ExtraWait = 10 * time.Minute

// Door identifies the caller of a peer API request.
type Door interface {
	// Identify returns who is calling, or an error: one wrapping
	// ErrDoorUnauthorized means "renew the ticket" (401), any other is 403.
	Identify(r *http.Request) (Caller, error)
}

// ErrDoorUnauthorized marks a door refusal that a new ticket may cure.
var ErrDoorUnauthorized = errors.New("no valid ticket")

// Caller is who sent a peer API request.
type Caller struct {
	Node string // stable node ID
	Name string // computer name
}

// Config configures the owner side.
type Config struct {
	// DB is the journal: apps, receipts, fences. Required.
	DB *journal.DB
	// Self names this computer in what it says. Required.
	Self func() view.Self
	// Log receives refusals and failures. Required.
	Log *slog.Logger
	// Ctx ends when Delta stops: a call waiting for its app is left
	// running (it becomes interrupted at the next start). Required.
	Ctx context.Context
	// Go runs background work that Delta's stop waits for. Required.
	Go func(func())
	// OnDoorRefusal and OnReplay, if not nil, count door refusals and
	// replayed answers.
	OnDoorRefusal, OnReplay func()
	// OnFenceRefusal, if not nil, counts questions refused over
	// FencesPerMinute.
	OnFenceRefusal func()
}

// Owner serves the peer API.
type Owner struct {
	cfg       Config
	proxyOnce sync.Once
	proxy     *httputil.ReverseProxy // to the local owner apps, for reads
	refusals  *proto.RefusalLog
	fences    *fenceCap
}

// New returns the owner side.
func New(cfg Config) *Owner {
	if cfg.OnDoorRefusal == nil {
		cfg.OnDoorRefusal = func() {}
	}
	if cfg.OnFenceRefusal == nil {
		cfg.OnFenceRefusal = func() {}
	}
	if cfg.OnReplay == nil {
		cfg.OnReplay = func() {}
	}
	return &Owner{cfg: cfg, refusals: proto.NewRefusalLog(cfg.Log, time.Now), fences: &fenceCap{seen: map[string]*fenceCount{}}}
}

type callerKey struct{}

// Handler is the peer API behind door, which runs before anything else;
// routes adds a listener's own handlers (see CallerFrom).
func (o *Owner) Handler(door Door, routes func(*http.ServeMux)) http.Handler {
	mux := http.NewServeMux()
	if routes != nil {
		routes(mux)
	}
	mux.HandleFunc("GET /delta/v1/ping", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/delta/v1/apps/{app}", o.handleOwnerRequest)
	mux.HandleFunc("/delta/v1/apps/{app}/{path...}", o.handleOwnerRequest)
	mux.HandleFunc("GET /delta/v1/calls/{id}", o.handleOwnerLookup)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		peerError(w, http.StatusNotFound, proto.PeerBadRequest, fmt.Sprintf("%s %s is not part of Delta's peer API", r.Method, r.URL.Path))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := door.Identify(r)
		if err != nil {
			o.cfg.OnDoorRefusal()
			name := o.cfg.Self().Name
			o.refusals.Refused(r.RemoteAddr, err)
			// Closed at once: the server neither waits for a body the
			// caller announced (and may never send) nor keeps the
			// connection.
			proto.RefuseAndClose(w)
			if errors.Is(err, ErrDoorUnauthorized) {
				peerError(w, http.StatusUnauthorized, proto.PeerUnauthorized, fmt.Sprintf("%s refused the request at its door: %v", name, err))
			} else {
				peerError(w, http.StatusForbidden, proto.PeerForbidden, fmt.Sprintf("%s refused the request at its door: %v", name, err))
			}
			return
		}
		if n := proto.Repeated(r.Header, "Authorization", proto.HeaderRequestID, proto.HeaderTimeout, proto.HeaderApp, proto.HeaderDigest); n != "" {
			proto.RefuseAndClose(w)
			peerError(w, http.StatusBadRequest, proto.PeerBadRequest, proto.NotCarriedOut(fmt.Sprintf("the request holds %s more than once (Delta and the app could each read another)", n)))
			return
		}
		if why := proto.UncleanPath(r.URL.Path); why != "" {
			proto.RefuseAndClose(w)
			peerError(w, http.StatusBadRequest, proto.PeerBadRequest, why+", which Delta does not carry to an app; nothing was carried out")
			return
		}
		mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

func callerOf(r *http.Request) Caller { return r.Context().Value(callerKey{}).(Caller) }

// CallerFrom returns the caller the door admitted, for handlers added with
// PeerListener.Routes.
func CallerFrom(r *http.Request) Caller { return callerOf(r) }

func peerError(w http.ResponseWriter, status int, e proto.PeerError, detail string) {
	proto.WriteError(w, status, proto.ErrorBody{Error: string(e), Detail: detail})
}

// ownerTarget is a parsed /delta/v1/apps/{app}/{path...} request.
type ownerTarget struct {
	app       *journal.App
	pathQuery string
	timeout   time.Duration
	caller    Caller
	callerApp string
}

func (o *Owner) handleOwnerRequest(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("app")
	if err := proto.CheckName("app", name); err != nil {
		peerError(w, http.StatusBadRequest, proto.PeerBadRequest, proto.NotCarriedOut(err.Error()))
		return
	}
	timeout, err := proto.ParseTimeout(r.Header.Get(proto.HeaderTimeout))
	if err != nil {
		peerError(w, http.StatusBadRequest, proto.PeerBadRequest, proto.NotCarriedOut(err.Error()))
		return
	}
	app, err := o.cfg.DB.App(r.Context(), name)
	if errors.Is(err, journal.ErrNotFound) {
		peerError(w, http.StatusNotFound, proto.PeerAppNotFound, proto.NotCarriedOut(fmt.Sprintf("no app %q is registered on %s", name, o.cfg.Self().Name)))
		return
	}
	if err != nil {
		peerError(w, http.StatusServiceUnavailable, proto.PeerAppDown, proto.NotCarriedOut(fmt.Sprintf("%s could not read its app registry (%v)", o.cfg.Self().Name, err)))
		return
	}
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/delta/v1/apps/"+name)
	if rest == "" {
		rest = "/"
	}
	t := ownerTarget{app: app, pathQuery: rest, timeout: timeout, caller: callerOf(r), callerApp: r.Header.Get(proto.HeaderApp)}
	if r.URL.RawQuery != "" {
		t.pathQuery += "?" + r.URL.RawQuery
	}
	switch {
	case proto.IsRead(r.Method):
		o.ownerRead(w, r, t)
	case proto.IsCall(r.Method):
		o.ownerCall(w, r, t)
	default:
		peerError(w, http.StatusMethodNotAllowed, proto.PeerBadRequest, proto.NotCarriedOut(fmt.Sprintf("method %s is neither a read nor a call", r.Method)))
	}
}

// appHeaders are the headers the owner app gets with every forwarded
// request.
func (o *Owner) appHeaders(h http.Header, t ownerTarget, remaining time.Duration) {
	h.Set(proto.HeaderCaller, t.caller.Name)
	if t.callerApp != "" {
		h.Set(proto.HeaderApp, t.callerApp)
	}
	h.Set(proto.HeaderSecret, t.app.Secret)
	h.Set(proto.HeaderTimeout, proto.FormatTimeout(remaining))
}

type ownerReadKey struct{}

// ownerRead forwards a read to the local app through a reverse proxy with
// pooled connections.
func (o *Owner) ownerRead(w http.ResponseWriter, r *http.Request, t ownerTarget) {
	ctx, cancel := context.WithTimeout(r.Context(), t.timeout)
	defer cancel()
	o.appProxy().ServeHTTP(w, r.WithContext(context.WithValue(ctx, ownerReadKey{}, t)))
}

// dialError marks a failure to connect to the app: nothing reached it.
type dialError struct{ error }

func (e dialError) Unwrap() error { return e.error }

func (o *Owner) appProxy() *httputil.ReverseProxy {
	o.proxyOnce.Do(func() {
		d := net.Dialer{Timeout: appConnectTimeout}
		o.proxy = &httputil.ReverseProxy{
			Transport: &http.Transport{
				DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := d.DialContext(ctx, network, addr)
					if err != nil {
						return nil, dialError{err}
					}
					return c, nil
				},
				MaxIdleConnsPerHost: 64,
				IdleConnTimeout:     90 * time.Second,
				DisableCompression:  true,
			},
			Rewrite: func(pr *httputil.ProxyRequest) {
				t := pr.In.Context().Value(ownerReadKey{}).(ownerTarget)
				u, _ := url.Parse(t.app.URL + t.pathQuery)
				pr.Out.URL, pr.Out.Host = u, u.Host
				proto.StripHop(pr.Out.Header)
				remaining := t.timeout
				if dl, ok := pr.In.Context().Deadline(); ok {
					remaining = time.Until(dl)
				}
				o.appHeaders(pr.Out.Header, t, remaining)
			},
			ModifyResponse: func(resp *http.Response) error {
				proto.StripDelta(resp.Header)
				resp.Header.Set(proto.HeaderOutcome, string(proto.PeerAnswered))
				return nil
			},
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				t := r.Context().Value(ownerReadKey{}).(ownerTarget)
				var de dialError
				switch {
				case errors.As(err, &de):
					peerError(w, http.StatusServiceUnavailable, proto.PeerAppDown, fmt.Sprintf("app %s on %s is not listening (%v)", t.app.Name, o.cfg.Self().Name, de.error))
				case oneshot.IsTimeout(err):
					peerError(w, http.StatusGatewayTimeout, proto.PeerTimeout, fmt.Sprintf("app %s on %s did not answer within %s", t.app.Name, o.cfg.Self().Name, t.timeout))
				default:
					peerError(w, http.StatusBadGateway, proto.PeerAppDown, fmt.Sprintf("app %s on %s broke off its answer (%v)", t.app.Name, o.cfg.Self().Name, err))
				}
			},
			BufferPool: proto.CopyBuffers,
		}
	})
	return o.proxy
}

// ownerCall is the owner's side of a call: the receipt decides, durably,
// before the app is asked once; the app's answer is stored before it is
// sent back.
func (o *Owner) ownerCall(w http.ResponseWriter, r *http.Request, t ownerTarget) {
	rid := r.Header.Get(proto.HeaderRequestID)
	if err := proto.CheckRequestID(rid); err != nil {
		peerError(w, http.StatusBadRequest, proto.PeerBadRequest, proto.NotCarriedOut(err.Error()))
		return
	}
	if r.ContentLength > proto.MaxCallBody {
		peerError(w, http.StatusRequestEntityTooLarge, proto.PeerTooLarge, proto.NotCarriedOut(fmt.Sprintf("the body is %d bytes, over the limit of %d", r.ContentLength, proto.MaxCallBody)))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, proto.MaxCallBody+1))
	if err != nil {
		peerError(w, http.StatusBadRequest, proto.PeerBadRequest, proto.NotCarriedOut("could not read the call's body ("+err.Error()+")"))
		return
	}
	if len(body) > proto.MaxCallBody {
		peerError(w, http.StatusRequestEntityTooLarge, proto.PeerTooLarge, proto.NotCarriedOut(fmt.Sprintf("the body is over the limit of %d bytes", proto.MaxCallBody)))
		return
	}
	digest := proto.Digest(r.Method, t.app.Name, t.pathQuery, body)
	if sent := r.Header.Get(proto.HeaderDigest); sent != "" && sent != digest {
		peerError(w, http.StatusBadRequest, proto.PeerBadRequest, proto.NotCarriedOut(fmt.Sprintf("the call's digest is %s here but %s at the caller (the request changed on the way)", digest, sent)))
		return
	}
	rec := &journal.Receipt{Caller: t.caller.Node, RequestID: rid, Digest: digest, CallerName: t.caller.Name,
		App: t.app.Name, Method: r.Method, Path: t.pathQuery}
	dec, old, err := o.cfg.DB.Receive(r.Context(), rec)
	if err != nil {
		peerError(w, http.StatusServiceUnavailable, proto.PeerAppDown, proto.NotCarriedOut(fmt.Sprintf("%s could not record the call (%v)", o.cfg.Self().Name, err)))
		return
	}
	switch dec {
	case journal.Reused:
		peerError(w, http.StatusUnprocessableEntity, proto.PeerReused, proto.NotCarriedOut(fmt.Sprintf("request id %s from %s was used for another request (%s %s at %s)", rid, t.caller.Name, old.Method, old.Path, old.ReceivedAt.Format(time.RFC3339))))
		return
	case journal.Replay:
		o.cfg.OnReplay()
		if old.Behind {
			o.markBehind(w)
		}
		writeOwnerAnswer(w, old.Answer, nil, true)
		return
	case journal.Busy:
		e, what := busyError(old)
		peerError(w, http.StatusConflict, e, fmt.Sprintf("call %s from %s %s; it is not forwarded again", rid, t.caller.Name, what))
		return
	}

	deadline := time.Now().Add(t.timeout)
	req, err := http.NewRequest(r.Method, t.app.URL+t.pathQuery, bytes.NewReader(body))
	if err != nil { // cannot happen: the URL was checked at registration
		o.cfg.DB.FinishReceipt(context.Background(), t.caller.Node, rid, journal.ReceiptNotDone, nil)
		peerError(w, http.StatusBadRequest, proto.PeerBadRequest, proto.NotCarriedOut("the call does not make a request to the app ("+err.Error()+")"))
		return
	}
	req.Header = proto.ForwardHeaders(r.Header)
	req.Header.Set(proto.HeaderRequestID, rid)
	o.appHeaders(req.Header, t, t.timeout)

	type result struct {
		state journal.ReceiptState
		ans   *journal.Answer
		body  []byte
		err   error
		held  bool // the outcome is held in memory, not yet written
	}
	done := make(chan result, 1)
	o.cfg.Go(func() {
		// Keep waiting past the caller's deadline so that the app's answer
		// is recorded; give up only after ExtraWait (or at Close).
		ctx, cancel := context.WithDeadline(o.cfg.Ctx, deadline.Add(ExtraWait))
		defer cancel()
		d := net.Dialer{Timeout: appConnectTimeout}
		addr := req.URL.Host
		res, err := oneshot.Do(ctx, func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }, req, proto.MaxAnswerBody)
		var out result
		var oe *oneshot.Error
		switch {
		case err == nil:
			h := res.Header.Clone()
			proto.StripHop(h)
			h.Del("Content-Length")
			out = result{state: journal.ReceiptAnswered, ans: journal.NewAnswer(res.StatusCode, h, res.Bytes, proto.MaxStoredAnswer), body: res.Bytes}
		case o.cfg.Ctx.Err() != nil:
			// Delta is stopping: the receipt stays running and becomes
			// interrupted at the next start.
			done <- result{err: err}
			return
		case errors.As(err, &oe) && !oe.Sent:
			out = result{state: journal.ReceiptNotDone, err: err}
		default:
			out = result{state: journal.AppUnknown, err: err}
		}
		_, held, ferr := o.cfg.DB.FinishReceiptOrHold(context.Background(), t.caller.Node, rid, out.state, out.ans)
		if ferr != nil {
			o.cfg.Log.Error("could not record a receipt's outcome", "request_id", rid, "caller", t.caller.Name, "err", ferr)
		}
		if out.held = held; held {
			o.cfg.Log.Error("the journal could not write a receipt's outcome; it is held in memory and written when the journal takes writes again", "request_id", rid, "caller", t.caller.Name, "state", out.state, "err", o.cfg.DB.Behind().Err)
		}
		done <- out
	})

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case res := <-done:
		if res.held {
			o.markBehind(w)
		}
		switch res.state {
		case journal.ReceiptAnswered:
			writeOwnerAnswer(w, res.ans, res.body, false)
		case journal.ReceiptNotDone:
			peerError(w, http.StatusServiceUnavailable, proto.PeerAppDown, proto.NotCarriedOut(fmt.Sprintf("app %s on %s is not listening (%v)", t.app.Name, o.cfg.Self().Name, res.err)))
		case journal.AppUnknown:
			peerError(w, http.StatusBadGateway, proto.PeerUnknown, fmt.Sprintf("app %s on %s got the call and its connection broke before a complete answer (%v); it may or may not have acted", t.app.Name, o.cfg.Self().Name, res.err))
		default:
			peerError(w, http.StatusServiceUnavailable, proto.PeerUnknown, fmt.Sprintf("%s is stopping and app %s has not answered; the call is recorded as interrupted", o.cfg.Self().Name, t.app.Name))
		}
	case <-timer.C:
		peerError(w, http.StatusBadGateway, proto.PeerUnknown, fmt.Sprintf("app %s on %s has not answered within %s; %s keeps waiting for it (up to %s more) and records its answer",
			t.app.Name, o.cfg.Self().Name, t.timeout, o.cfg.Self().Name, ExtraWait))
	case <-r.Context().Done():
		// The caller hung up; the app's answer is still recorded.
	}
}

// markBehind says on an answer that its outcome is held in memory, not yet
// in this computer's journal.
func (o *Owner) markBehind(w http.ResponseWriter) {
	w.Header().Set(proto.HeaderJournal, "behind; "+o.cfg.Self().Name+" holds this outcome in memory because its journal could not write it, and writes it when it can")
}

// busyError names a receipt's state as the 409 error (DESIGN §4).
func busyError(old *journal.Receipt) (proto.PeerError, string) {
	switch old.State {
	case journal.Running:
		return proto.PeerInProgress, "is being carried out now"
	case journal.Fenced:
		return proto.PeerFenced, proto.NotCarriedOut("was asked about before it arrived and was recorded as never arrived, so it is refused")
	case journal.ReceiptAnswered:
		return proto.PeerAnswerExpired, "was answered, but the answer is no longer kept"
	case journal.ReceiptNotDone:
		return proto.PeerNotDone, "was not carried out (the app was not listening)"
	}
	return proto.PeerError(old.State), fmt.Sprintf("is %s", old.State)
}

// writeOwnerAnswer sends the app's answer (or the stored one) to the
// caller's Delta.
func writeOwnerAnswer(w http.ResponseWriter, ans *journal.Answer, body []byte, replayed bool) {
	h := w.Header()
	for k, vs := range ans.Headers {
		h[k] = vs
	}
	h.Set(proto.HeaderOutcome, string(proto.PeerAnswered))
	if replayed {
		h.Set(proto.HeaderReplayed, "true")
	}
	if body == nil {
		body = ans.Body
		if ans.Omitted {
			h.Set(proto.HeaderAnswerOmitted, "the answer's body was over 1 MiB and is not kept for replay")
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(ans.Status)
	w.Write(body)
}

func (o *Owner) handleOwnerLookup(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := proto.CheckRequestID(id); err != nil {
		peerError(w, http.StatusBadRequest, proto.PeerBadRequest, err.Error())
		return
	}
	var created time.Time
	if v := r.URL.Query().Get("created_at"); v != "" {
		var err error
		if created, err = time.Parse(time.RFC3339Nano, v); err != nil {
			peerError(w, http.StatusBadRequest, proto.PeerBadRequest, fmt.Sprintf("created_at %q is not an RFC 3339 time", v))
			return
		}
	}
	node := callerOf(r).Node
	rec, err := o.cfg.DB.Lookup(r.Context(), node, id, created, func() bool { return o.fences.allow(node, time.Now()) })
	if errors.Is(err, journal.ErrTooManyFences) {
		o.cfg.OnFenceRefusal()
		w.Header().Set("Retry-After", "60")
		peerError(w, http.StatusTooManyRequests, proto.PeerTooManyFences, fmt.Sprintf("%s was asked about more than %d calls it never saw from %s within a minute; ask again later (nothing was written)", o.cfg.Self().Name, FencesPerMinute, callerOf(r).Name))
		return
	}
	if err != nil {
		peerError(w, http.StatusServiceUnavailable, proto.PeerAppDown, fmt.Sprintf("%s could not read its receipts (%v)", o.cfg.Self().Name, err))
		return
	}
	v := proto.CallStateJSON{State: string(rec.State), Digest: rec.Digest, AnswerExpired: rec.AnswerExpired}
	if !rec.ReceivedAt.IsZero() {
		v.ReceivedAt = proto.RFC3339(rec.ReceivedAt)
	}
	if a := rec.Answer; a != nil {
		v.Answer = &proto.AnswerJSON{Status: a.Status, Headers: a.Headers, BodyBase64: base64.StdEncoding.EncodeToString(a.Body), Omitted: a.Omitted}
	}
	w.Header().Set(proto.HeaderOutcome, "call_state")
	proto.WriteJSON(w, http.StatusOK, v)
}
