// Package owner is the owner's side of the peer API (DESIGN §4): behind a
// door that identifies the calling computer, it forwards reads to the
// local owner apps through a reverse proxy, and calls once each through the
// receipts, which decide durably before anything is forwarded; it answers
// what it knows of a call by request id.
package owner

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/relay"
	"github.com/delta-roads/delta/gateway/carry/transfer"
	"github.com/delta-roads/delta/gateway/net/doors"
	"github.com/delta-roads/delta/gateway/net/gcpace"
	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/net/rawsock"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
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
	Identify(r *http.Request) (Visitor, error)
}

// ErrDoorUnauthorized marks a door refusal that a new ticket may cure.
var ErrDoorUnauthorized = errors.New("no valid ticket")

// Visitor is who sent a peer API request.
type Visitor struct {
	Node string // stable node ID
	Name string // computer name
	// ReadOnly: the caller presented a read ticket, which admits reads of
	// an app and pings only.
	ReadOnly bool
}

// readTicketAdmits says why a read ticket does not admit r, or "": it
// admits a read of an app (a safe method, proto.IsRead; nothing that asks
// for an upgrade, whether or not it would open a session) and a ping,
// nothing that could carry anything out or write anything (a call, a
// session, a question about a call, which may write a fence).
func readTicketAdmits(r *http.Request) string {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == proto.PathPing:
		return ""
	case strings.HasPrefix(r.URL.Path, proto.PathApps) && proto.IsRead(r.Method) && !proto.IsUpgrade(r.Header):
		return ""
	}
	return fmt.Sprintf("%s %s is not a read, and a read ticket admits reads only (it is what an app holds to read around its own Delta while that is down; calls, sessions and questions about calls go through Delta)", r.Method, r.URL.Path)
}

// Config configures the owner side.
type Config struct {
	// DB is the journal: apps, receipts, fences. Required.
	DB *journal.DB
	// Self names this computer in what it says. Required.
	Self func() localapi.Self
	// Log receives refusals and failures. Required.
	Log *slog.Logger
	// Now is the clock of the refusals' summary. If nil, time.Now.
	Now func() time.Time
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
	// SpoolDir is where call bodies too big for memory are written as
	// they arrive, before they are forwarded. Required.
	SpoolDir string
	// MaxCallBytes is the largest call body taken. Required.
	MaxCallBytes int64
	// FreeBytes, if not nil, tells how much room is left in SpoolDir's
	// file system (a call whose body does not fit is refused, 507). If
	// nil, the file system is asked.
	FreeBytes func(dir string) (int64, error)
	// Transfers, if not nil, keeps the sessions open here (counted in
	// status).
	Transfers *transfer.Set
}

// Owner serves the peer API.
type Owner struct {
	cfg           Config
	transportOnce sync.Once
	transport     *h1.Transport // to the local owner apps, for reads
	h2Once        sync.Once
	h2            *http.Transport // to those that speak HTTP/2 (--h2c), for reads
	refusals      *doors.RefusalLog
	fences        *fenceCap
	sessions      *sessions // open here, closed when their interface goes
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
	if cfg.FreeBytes == nil {
		cfg.FreeBytes = freeBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Owner{cfg: cfg, refusals: doors.NewRefusalLog(cfg.Log, cfg.Now), fences: &fenceCap{},
		sessions: &sessions{open: map[net.Conn]string{}}}
}

type visitorKey struct{}

// Handler is the peer API behind door, which runs before anything else;
// routes adds a listener's own handlers (see VisitorFrom).
func (o *Owner) Handler(door Door, routes func(*http.ServeMux)) http.Handler {
	mux := http.NewServeMux()
	if routes != nil {
		routes(mux)
	}
	mux.HandleFunc("GET "+proto.PathPing, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc(proto.PathApps+"{app}", o.handleOwnerRequest)
	mux.HandleFunc(proto.PathApps+"{app}/{path...}", o.handleOwnerRequest)
	mux.HandleFunc("GET "+proto.PathCalls+"{id}", o.handleOwnerLookup)
	mux.HandleFunc("GET "+proto.PathAppList, o.handleAppList)
	mux.HandleFunc("POST "+proto.PathCalls+"{id}/settled", o.handleCallerSettled)
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
			doors.RefuseAndClose(w)
			// A refusal at the door: nothing ran (carried_out: false); its
			// words are about the door, and the caller says what it means.
			status, e := http.StatusForbidden, proto.PeerForbidden
			if errors.Is(err, ErrDoorUnauthorized) {
				status, e = http.StatusUnauthorized, proto.PeerUnauthorized
			}
			proto.WriteError(w, status, localapi.ErrorBody{Error: string(e), Detail: fmt.Sprintf("%s refused the request at its door: %v", name, err)}.With(localapi.NotCarried))
			return
		}
		if why := readTicketAdmits(r); c.ReadOnly && why != "" {
			o.cfg.OnDoorRefusal()
			doors.RefuseAndClose(w)
			proto.WriteError(w, http.StatusForbidden, localapi.ErrorBody{Error: string(proto.PeerForbidden),
				Detail: fmt.Sprintf("%s refused the request at its door: %s", o.cfg.Self().Name, why)}.With(localapi.NotCarried))
			return
		}
		if status, why := proto.Refused(r.Method, r.RequestURI); why != "" {
			doors.RefuseAndClose(w)
			refuse(w, status, proto.PeerBadRequest, why)
			return
		}
		if n := proto.Repeated(r.Header, "Authorization", localapi.HeaderRequestID, localapi.HeaderTimeout, localapi.HeaderApp, proto.HeaderDigest); n != "" {
			doors.RefuseAndClose(w)
			refuse(w, http.StatusBadRequest, proto.PeerBadRequest, fmt.Sprintf("the request holds %s more than once (Delta and the app could each read another)", n))
			return
		}
		if why := proto.UncleanPath(r.URL.Path); why != "" {
			doors.RefuseAndClose(w)
			refuse(w, http.StatusBadRequest, proto.PeerBadRequest, why+", which Delta does not carry to an app")
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), visitorKey{}, c))
		// An app's request is routed as the mux would route it
		// (proto.NamedTarget), without the mux's allocations.
		if r.Method != http.MethodConnect && proto.NamedTarget(r.URL.EscapedPath(), proto.PathApps, 1) {
			o.handleOwnerRequest(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func visitorOf(r *http.Request) Visitor { return r.Context().Value(visitorKey{}).(Visitor) }

// VisitorFrom returns the caller the door admitted, for handlers added with
// PeerListener.Routes.
func VisitorFrom(r *http.Request) Visitor { return visitorOf(r) }

// peerError writes one of the owner's own replies that promises nothing:
// the call may have been carried out, or it is not a call.
// handleAppList answers which apps are registered here, by name only: a
// caller's Delta asks when a person opens a forward, to tell them at once
// that the app it names is not here (it said nothing until the first
// request got a 404). Names are what delta forward PEER/APP takes; their
// URLs and secrets stay here.
func (o *Owner) handleAppList(w http.ResponseWriter, r *http.Request) {
	apps, err := o.cfg.DB.Apps().List(r.Context())
	if err != nil {
		peerError(w, http.StatusServiceUnavailable, proto.PeerOwnerFailed, fmt.Sprintf("%s could not read its apps: %v", o.cfg.Self().Name, err))
		return
	}
	v := proto.AppListJSON{Apps: []string{}}
	for _, a := range apps {
		v.Apps = append(v.Apps, a.Name)
	}
	slices.Sort(v.Apps)
	proto.WriteJSON(w, http.StatusOK, v)
}

func peerError(w http.ResponseWriter, status int, e proto.PeerError, detail string) {
	proto.WriteError(w, status, localapi.ErrorBody{Error: string(e), Detail: detail})
}

// refuse writes one of the owner's own replies that proves nothing was
// carried out: the cause, in NotCarriedOut's words, and carried_out: false.
func refuse(w http.ResponseWriter, status int, e proto.PeerError, cause string) {
	proto.WriteError(w, status, localapi.ErrorBody{Error: string(e), Detail: proto.NotCarriedOut(cause)}.With(localapi.NotCarried))
}

// ownerTarget is a parsed /delta/v1/apps/{app}/{path...} request.
type ownerTarget struct {
	app       *journal.App
	pathQuery string
	// timeout is how long the app may take before its answer's head
	// (proto.Wait.For): 0 is no limit.
	timeout   time.Duration
	visitor   Visitor
	callerApp string
	// host and prefix are the Host and the path prefix the calling app's
	// client used, as its Delta said (proto.HeaderHost, HeaderPrefix); ""
	// when it said none, or nothing a Host can be.
	host, prefix string
	// auth is the calling app's own Authorization, as its Delta passed it
	// on (proto.HeaderAuthorization); "" for none.
	auth string
}

func (o *Owner) handleOwnerRequest(w http.ResponseWriter, r *http.Request) {
	gcpace.Busy() // a read or call for an app here: the collector's busy pace
	name, rest, err := proto.SplitTarget(strings.TrimPrefix(r.URL.EscapedPath(), proto.PathApps), "app")
	if err != nil {
		refuse(w, http.StatusBadRequest, proto.PeerBadRequest, err.Error())
		return
	}
	wait, err := proto.ParseWait(r.Header)
	if err != nil {
		refuse(w, http.StatusBadRequest, proto.PeerBadRequest, err.Error())
		return
	}
	app, err := o.cfg.DB.Apps().Get(r.Context(), name)
	if errors.Is(err, journal.ErrNotFound) {
		refuse(w, http.StatusNotFound, proto.PeerAppNotFound, fmt.Sprintf("no app %q is registered on %s", name, o.cfg.Self().Name))
		return
	}
	if err != nil {
		refuse(w, http.StatusServiceUnavailable, proto.PeerOwnerFailed, fmt.Sprintf("%s could not read its app registry (%v)", o.cfg.Self().Name, err))
		return
	}
	t := ownerTarget{app: app, pathQuery: rest, timeout: wait.For(app.Timeout), visitor: visitorOf(r), callerApp: r.Header.Get(localapi.HeaderApp)}
	if h := r.Header.Get(proto.HeaderHost); h != "" && httpguts.ValidHostHeader(h) {
		t.host = h
	}
	if p := r.Header.Get(proto.HeaderPrefix); validPrefix(p) {
		t.prefix = p
	}
	t.auth = r.Header.Get(proto.HeaderAuthorization)
	if r.URL.RawQuery != "" {
		t.pathQuery += "?" + r.URL.RawQuery
	}
	if !proto.IsCall(r.Method) && !proto.ReadMayCarryBody(r.Method) && r.ContentLength != 0 {
		// As the caller's Delta refuses it from an app: a GET's or a
		// HEAD's body has no meaning, and is never passed to an app, a
		// direct read's ticket included (issue 34 U5).
		doors.RefuseAndClose(w)
		refuse(w, http.StatusBadRequest, proto.PeerBadRequest, fmt.Sprintf("a %s carries no body, and this one has one", r.Method))
		return
	}
	switch {
	case proto.OpensSession(r.Method, r.Header, r.ContentLength):
		o.ownerSession(w, r, t)
	case proto.IsRead(r.Method):
		o.ownerRead(w, r, t)
	default:
		o.ownerCall(w, r, t)
	}
}

// appHeaders are the headers the owner app gets with every forwarded
// request, set on req: who sent it, the secret, the time left, and where
// the calling app's client sent it (DESIGN §2b): the Host it used, and
// Delta's own X-Forwarded-Host, X-Forwarded-Proto, X-Forwarded-Prefix and
// Forwarded (a client's own were removed on the way, proto.ForwardHeaders).
// The caller is named in Forwarded's for= as an obfuscated identifier
// (RFC 7239 §6.3), never as an address: the request did not come from
// this computer's loopback, whatever the app trusts that with.
func (o *Owner) appHeaders(req *http.Request, t ownerTarget, remaining time.Duration) {
	h := req.Header
	h.Set(localapi.HeaderCaller, t.visitor.Name)
	if t.callerApp != "" {
		h.Set(localapi.HeaderApp, t.callerApp)
	}
	h.Set(localapi.HeaderSecret, t.app.Secret)
	if remaining > 0 { // none: no limit
		h.Set(localapi.HeaderTimeout, proto.FormatTimeout(remaining))
	}
	if t.auth != "" {
		h.Set("Authorization", t.auth)
	}
	if t.host == "" {
		return
	}
	req.Host = t.host
	h.Set("X-Forwarded-Host", t.host)
	h.Set("X-Forwarded-Proto", "http")
	if t.prefix != "" {
		h.Set("X-Forwarded-Prefix", t.prefix)
	}
	fwd := fmt.Sprintf("host=%q;proto=http", t.host)
	if obfuscated(t.visitor.Name) {
		fwd = "for=_" + t.visitor.Name + ";" + fwd
	}
	h.Set("Forwarded", fwd)
}

// obfuscated reports whether name may follow "_" as an obfuscated node in
// Forwarded (RFC 7239 §6.3: ALPHA, DIGIT, ".", "_", "-").
func obfuscated(name string) bool {
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return name != ""
}

// validPrefix reports whether p is a path prefix the owner app may be
// told (/v1/peers/PEER/APP, escaped): from "/", of unreserved characters
// and escapes. The caller's Delta sets it (an app's X-Delta-* never
// passes); this keeps a header line out of it all the same. A loop, not a
// regexp: it runs on every request.
func validPrefix(p string) bool {
	if len(p) < 2 || p[0] != '/' {
		return false
	}
	for i := 1; i < len(p); i++ {
		switch c := p[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '/' || c == '.' || c == '_' || c == '~' || c == '%' || c == '-':
		default:
			return false
		}
	}
	return true
}

// appDialer connects to a local owner app.
var appDialer = net.Dialer{Timeout: appConnectTimeout}

// dialApp connects to a local owner app at addr, as a rawsock.Conn: raw
// reads and writes once the pool of reads turns them on (rawsock.On).
func dialApp(ctx context.Context, addr string) (net.Conn, error) {
	c, err := appDialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return rawsock.Wrap(c), nil
}

// markBehind says on an answer that its outcome is held in memory, not yet
// in this computer's journal.
func (o *Owner) markBehind(w http.ResponseWriter) {
	w.Header().Set(localapi.HeaderJournal, "behind; "+o.cfg.Self().Name+" holds this outcome in memory because its journal could not write it, and writes it when it can")
}

// busyError names a receipt's state as the 409 error (DESIGN §4), with
// what the owner can promise of it.
func busyError(old *journal.Receipt) (proto.PeerError, string, localapi.Guarantee) {
	switch old.State {
	case proto.ReceiptRunning:
		return proto.PeerInProgress, "is being carried out now", localapi.NoGuarantee
	case proto.ReceiptFenced:
		return proto.PeerFenced, proto.NotCarriedOut("was asked about before it arrived and was recorded as never arrived, so it is refused"), localapi.NotCarried
	case proto.ReceiptAnswered:
		return proto.PeerAnswerExpired, "was answered, but the answer is no longer kept", localapi.NoGuarantee
	case proto.ReceiptNotCarriedOut:
		return proto.PeerNotDone, proto.NotCarriedOut("was not carried out (the app was not listening, or its body did not arrive whole)"), localapi.NotCarried
	}
	return proto.PeerError(old.State), fmt.Sprintf("is %s", old.State), localapi.NoGuarantee
}

// writeOwnerAnswer sends the app's answer (or the stored one) to the
// caller's Delta, with the call's digest when it is not "" (a streamed
// body's, which its caller did not sum).
func writeOwnerAnswer(w http.ResponseWriter, ans *record.Answer, body []byte, replayed bool, digest string) {
	omitted, again := "", ""
	if body == nil {
		body = ans.Body
		if ans.Omitted {
			omitted = "the answer's body was over 1 MiB and is not kept for replay"
		}
	}
	if replayed {
		again = "true"
	}
	relay.Recorded(w, ans.Status, ans.Headers, body, localapi.HeaderOutcome, string(proto.PeerAnswered), localapi.HeaderReplayed, again, localapi.HeaderAnswerOmitted, omitted, proto.HeaderDigest, digest)
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
	node := visitorOf(r).Node
	name := visitorOf(r).Name // the cap's key: not the node id, which a static ticket only claims
	rec, err := o.cfg.DB.Receipts().Lookup(r.Context(), node, id, created, func() bool { return o.fences.allow(name, time.Now()) })
	if errors.Is(err, journal.ErrTooManyFences) {
		o.cfg.OnFenceRefusal()
		w.Header().Set("Retry-After", "60")
		peerError(w, http.StatusTooManyRequests, proto.PeerTooManyFences, fmt.Sprintf("%s was asked about more than %d calls it never saw from %s (or %d from all its callers) within a minute; ask again later (nothing was written)",
			o.cfg.Self().Name, FencesPerMinute, visitorOf(r).Name, FencesPerMinuteInAll))
		return
	}
	if err != nil {
		peerError(w, http.StatusServiceUnavailable, proto.PeerAppDown, fmt.Sprintf("%s could not read its receipts (%v)", o.cfg.Self().Name, err))
		return
	}
	v := proto.CallStateJSON{State: rec.State, Digest: rec.Digest, AnswerExpired: rec.AnswerExpired}
	if !rec.ReceivedAt.IsZero() {
		v.ReceivedAt = proto.RFC3339(rec.ReceivedAt)
	}
	if a := rec.Answer; a != nil {
		v.Answer = &proto.AnswerJSON{Status: a.Status, Headers: a.Headers, BodyBase64: base64.StdEncoding.EncodeToString(a.Body), Omitted: a.Omitted}
	}
	w.Header().Set(localapi.HeaderOutcome, "call_state")
	proto.WriteJSON(w, http.StatusOK, v)
}

// handleCallerSettled records that a person at the caller settled one of
// its calls (POST /delta/v1/calls/{id}/settled): the receipt stops being
// one to check here, and says who settled it and how. A receipt this
// computer does not keep is answered recorded: false.
func (o *Owner) handleCallerSettled(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := proto.CheckRequestID(id); err != nil {
		peerError(w, http.StatusBadRequest, proto.PeerBadRequest, err.Error())
		return
	}
	var v proto.SettledJSON
	err := proto.DecodeObject(r.Body, 16<<10, &v)
	switch {
	case err != nil:
	case v.State != "carried_out" && v.State != "not_carried_out":
		err = fmt.Errorf("state %q is neither carried_out nor not_carried_out", v.State)
	case len(v.Note) > proto.MaxSettleNote:
		err = fmt.Errorf("the note is over %d bytes", proto.MaxSettleNote)
	}
	if err != nil {
		peerError(w, http.StatusBadRequest, proto.PeerBadRequest, `the body is not {"state": "carried_out" | "not_carried_out", "by": "…", "note": "…", "at": "…"}: `+err.Error())
		return
	}
	vis := visitorOf(r)
	at, _ := time.Parse(time.RFC3339Nano, v.At) // none or unreadable: when it is told
	rec, err := o.cfg.DB.Receipts().CallerSettled(r.Context(), vis.Node, id, v.State, v.Note, at)
	switch {
	case errors.Is(err, journal.ErrNotFound):
		w.Header().Set(localapi.HeaderOutcome, "settlement")
		proto.WritePeerJSON(w, http.StatusOK, proto.SettledReplyJSON{})
		return
	case err != nil:
		peerError(w, http.StatusServiceUnavailable, proto.PeerAppDown, fmt.Sprintf("%s could not record the settlement (%v)", o.cfg.Self().Name, err))
		return
	}
	if rec.CallerSettled != v.State {
		o.cfg.Log.Warn("the caller told another settlement of a call it settled already; the first is kept", "request_id", id, "caller", vis.Name,
			"kept", rec.CallerSettled, "told", v.State)
	}
	log := o.cfg.Log.Info
	if rec.State == proto.ReceiptAnswered && v.State == "not_carried_out" || rec.State == proto.ReceiptNotCarriedOut && v.State == "carried_out" {
		log = o.cfg.Log.Warn // both are kept and shown; a person should know
	}
	log("a person at the caller settled a call this computer received", "request_id", id, "caller", vis.Name, "app", rec.App,
		"state", v.State, "note", v.Note, "receipt_state", rec.State)
	w.Header().Set(localapi.HeaderOutcome, "settlement")
	proto.WritePeerJSON(w, http.StatusOK, proto.SettledReplyJSON{Recorded: true, State: rec.State})
}
