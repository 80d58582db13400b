// Package localserver is Delta's local API (DESIGN §3) as a room of its
// own, as Tailscale's ipn/localapi is tailscaled's: a table of handlers
// (routes keyed by localapi's path constants, which the kit and the
// command line use too) over a narrow Backend, behind the guard every
// request passes (loopback Host, the token, clean paths, methods Delta
// carries). The requests an app sends to a peer are carried from here
// (Carry): a call, a session or a read, each by the caller.
package localserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/api/roadfacts"
	"github.com/delta-roads/delta/gateway/carry/caller"
	"github.com/delta-roads/delta/gateway/face/desk"
	"github.com/delta-roads/delta/gateway/face/forward"
	"github.com/delta-roads/delta/gateway/face/statuspage"
	"github.com/delta-roads/delta/gateway/net/doors"
	"github.com/delta-roads/delta/gateway/net/gcpace"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// routes is the local API's table (DESIGN §3), behind its guard.
func (g *Handler) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range []struct {
		pattern string
		h       http.HandlerFunc
	}{
		{localapi.PeersPath + "/{peer}/{app}", g.handlePeerRequest},
		{localapi.PeersPath + "/{peer}/{app}/{path...}", g.handlePeerRequest},
		{"GET " + localapi.CallsPath, g.handleListCalls},
		{"GET " + localapi.CallsPath + "/{id}", g.handleGetCall},
		{"POST " + localapi.CallsPath + "/{id}/" + localapi.ActionAsk, g.handleAsk},
		{"POST " + localapi.CallsPath + "/{id}/" + localapi.ActionDismiss, g.handleDismiss},
		{"POST " + localapi.CallsPath + "/{id}/" + localapi.ActionSettle, g.handleSettle},
		{"POST " + localapi.CallsPath + "/{id}/" + localapi.ActionForget, g.handleForget},
		{"GET " + localapi.ReceiptsPath, g.handleReceipts},
		{"GET " + localapi.ReceiptsPath + "/{id}", g.handleGetReceipt},
		{"POST " + localapi.ReceiptsPath + "/{id}/" + localapi.ActionCheck, g.handleCheckReceipt},
		{"POST " + localapi.ReceiptsPath + "/{id}/" + localapi.ActionForget, g.handleForgetReceived},
		{"GET " + localapi.AppsPath, g.handleListApps},
		{"PUT " + localapi.AppsPath + "/{app}", g.handlePutApp},
		{"GET " + localapi.AppsPath + "/{app}", g.handleGetApp},
		{"DELETE " + localapi.AppsPath + "/{app}", g.handleDeleteApp},
		{"GET " + localapi.ForwardsPath, g.handleListForwards},
		{"PUT " + localapi.ForwardsPath + "/{peer}/{app}", g.handlePutForward},
		{"DELETE " + localapi.ForwardsPath + "/{peer}/{app}", g.handleDeleteForward},
		{"GET " + localapi.StatusPath, g.handleStatus},
		{"GET " + localapi.MetricsPath, g.handleMetrics},
		{"POST " + localapi.LoginLinkPath, g.handleLoginLink},
		{"POST " + localapi.PingPath + "/{peer}", g.handlePing},
		{"GET " + localapi.ListeningPath, g.handleListening},
		{"GET " + localapi.PeerAppsPath + "/{peer}", g.handlePeerApps},
		{"GET " + localapi.PairingPath, g.handlePairing},
		{"PUT " + localapi.PairsPath + "/{name}", g.handlePair},
		{"DELETE " + localapi.PairsPath + "/{name}", g.handleUnpair},
		{"POST " + localapi.PairRequestsPath + "/{id}/{action}", g.handlePairRequest},
		{"PUT " + localapi.NamePath, g.handleRename},
	} {
		mux.HandleFunc(rt.pattern, rt.h)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		localError(w, localapi.NotFound, fmt.Sprintf("%s %s is not part of Delta's local API", r.Method, r.URL.Path))
	})
	return cleanPaths(g.guardLocal(withOutcome(peersFirst(mux, g.handlePeerRequest))))
}

// peersFirst routes a request to /v1/peers/PEER/APP[/…] to peers without
// the mux, as the mux would (proto.NamedTarget): its match allocates the
// wildcards' values, which peers does not read.
func peersFirst(mux *http.ServeMux, peers http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect && proto.NamedTarget(r.URL.EscapedPath(), localapi.PeersPath+"/", 2) {
			peers(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// cleanPaths refuses a path with empty, "." or ".." segments before
// anything routes it (proto.UncleanPath): Delta carries paths exactly as
// written or not at all, and never answers with a redirect of its own.
func cleanPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuseUnclean(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuseUnclean answers a request whose path Delta does not carry
// (proto.UncleanPath), and reports whether it did: the local API's and
// every forward's one refusal of it.
func refuseUnclean(w http.ResponseWriter, r *http.Request) bool {
	why := proto.UncleanPath(r.URL.Path)
	if why != "" {
		localRefusal(w, localapi.BadRequest, why+", which Delta does not carry (it could reach another app, another peer or Delta's own API, and the owner's Delta would answer it with a redirect of its own)")
	}
	return why != ""
}

// refuseMethod answers a request Delta refuses for its method or target
// (proto.Refused: CONNECT, TRACE, OPTIONS *), and reports whether it did:
// the local API's and every forward's one refusal of it.
func refuseMethod(w http.ResponseWriter, r *http.Request) bool {
	status, why := proto.Refused(r.Method, r.RequestURI)
	if why == "" {
		return false
	}
	if status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", "GET, HEAD, OPTIONS, PROPFIND, REPORT, SEARCH, QUERY (reads), and any other method of a call (POST, PUT, PATCH, DELETE, …)")
	}
	doors.RefuseAndClose(w)
	proto.WriteError(w, status, localapi.ErrorBody{Error: string(localapi.BadRequest), Detail: proto.NotSent(why, "")}.With(localapi.NothingSent))
	return true
}

// withOutcome gives every answer of Delta's own endpoints (status, calls,
// apps, ping, …) `X-Delta-Outcome: answered` unless it says otherwise: an
// error sets its own. Requests to peers set theirs as they go.
func withOutcome(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, localapi.PeersPath+"/") {
			w.Header().Set(localapi.HeaderOutcome, string(localapi.Answered))
		}
		next.ServeHTTP(w, r)
	})
}

// handleLoginLink mints a one-time link to the status page (`delta open`).
func (g *Handler) handleLoginLink(w http.ResponseWriter, r *http.Request) {
	proto.WriteJSON(w, http.StatusOK, map[string]any{"url": g.cfg.Backend.LoginLink(), "expires_in_s": statuspage.LoginLinkLifetime.Seconds()})
}

// guardLocal refuses foreign Host headers (DNS rebinding) and requests
// without the local token.
func (g *Handler) guardLocal(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if !proto.IsLoopbackHost(host) {
			localRefusal(w, localapi.BadRequest, fmt.Sprintf("Host %q is not a loopback name or address; Delta's local API answers only on loopback (DNS-rebinding guard)", r.Host))
			return
		}
		if statuspage.IsPagePath(r.URL.Path) {
			g.cfg.Page.ServeHTTP(w, r) // its own login: a cookie, never the token
			return
		}
		if r.URL.Path == localapi.ProofPath {
			g.handleProof(w, r) // before the token: it is how a client knows whom to send it to
			return
		}
		if why := g.CheckAuth(r.Header.Get("Authorization")); why != "" {
			doors.RefuseAndClose(w) // no wait for a body that may never come
			w.Header().Set("WWW-Authenticate", `Basic realm="Delta"`)
			localRefusal(w, localapi.Unauthorized, why)
			return
		}
		if refuseMethod(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// CheckAuth says why an Authorization header does not carry this
// Delta's local token, or "": "Bearer <token>", or Basic credentials with
// the token as the password and any user name (DESIGN §2b: what restic's
// rest:http://delta:TOKEN@127.0.0.1:7420/… and a browser's prompt send).
func (g *Handler) CheckAuth(auth string) string {
	return doors.CheckSecret(auth, g.cfg.Token, "the local token in "+g.cfg.StateDir+"/local-token")
}

func localError(w http.ResponseWriter, o localapi.Outcome, detail string) {
	proto.WriteError(w, o.Status(), localapi.ErrorBody{Error: string(o), Detail: detail})
}

// localRefusal is the local API's guard refusing a request before
// anything of it went anywhere: its body says so in fields too ("sent":
// false, "carried_out": false), as every answer about a request does.
func localRefusal(w http.ResponseWriter, o localapi.Outcome, cause string) {
	proto.WriteError(w, o.Status(), localapi.ErrorBody{Error: string(o), Detail: proto.NotSent(cause, "")}.With(localapi.NothingSent))
}

func (g *Handler) handlePeerRequest(w http.ResponseWriter, r *http.Request) {
	gcpace.Busy() // an app's read or call: the collector's busy pace
	t, o, detail := parseTarget(r)
	t.Host = r.Host
	t.Prefix = localapi.PeerPath(t.Peer, t.App)
	g.carry(w, r, t, o, detail)
}

// ServeForward carries a request a forward admitted (DESIGN §2b) exactly
// as one to /v1/peers/PEER/APP/…: its path and query unchanged, the Host
// its client used, its cookies (less Delta's page cookie) and, when the
// forward asks for no token, its own Authorization.
func (g *Handler) ServeForward(w http.ResponseWriter, r *http.Request, sp forward.Spec, a forward.Admitted) {
	if refuseUnclean(w, r) || refuseMethod(w, r) {
		return
	}
	t := caller.Target{Peer: sp.Peer, App: sp.App, Host: a.Host, Cookie: a.Cookie, Authorization: a.Authorization,
		PathQuery: r.URL.EscapedPath(), Wait: sp.Wait(), Door: "forward " + sp.Peer + "/" + sp.App}
	if r.URL.RawQuery != "" {
		t.PathQuery += "?" + r.URL.RawQuery
	}
	o, detail := parseOptions(r, &t)
	g.carry(w, r, t, o, detail)
}

// carry sends the request r for target t (parsed, or refused with o and
// detail) as a call, a session or a read.
func (g *Handler) carry(w http.ResponseWriter, r *http.Request, t caller.Target, o localapi.Outcome, detail string) {
	if r.ProtoMajor >= 2 {
		w = &h2Answers{ResponseWriter: w}
	}
	if proto.IsGRPC(r.Header) {
		ga := &grpcAnswers{ResponseWriter: w}
		defer ga.finish()
		w = ga
	}
	isCall, upgrade := proto.IsCall(r.Method), proto.OpensSession(r.Method, r.Header, r.ContentLength)
	if n := proto.Repeated(r.Header, localapi.HeaderRequestID, localapi.HeaderTimeout, localapi.HeaderRoute, localapi.HeaderApp); n != "" && o == "" {
		o, detail = localapi.BadRequest, proto.NotSent(fmt.Sprintf("the request holds %s more than once (Delta and the app could each read another)", n), "")
	}
	if !isCall && !proto.ReadMayCarryBody(r.Method) && r.ContentLength != 0 && o == "" {
		// A GET's or a HEAD's body would be dropped on the way: refused
		// instead.
		o, detail = localapi.BadRequest, proto.NotSent(fmt.Sprintf("a %s carries no body, and this one has one; a request that sends something is a call (POST, PUT, PATCH, …)", r.Method), "")
	}
	if o != "" {
		if isCall {
			g.cfg.Counters.Call(o)
		} else {
			g.cfg.Counters.Read(o)
		}
		doors.RefuseAndClose(w) // no body that may follow is read
		proto.WriteError(w, o.Status(), localapi.ErrorBody{Error: string(o), Detail: detail, Peer: t.Peer}.With(localapi.NothingSent))
		return
	}
	if isCall && !upgrade {
		g.cfg.Caller.Call(w, r, t) // the journal first: it checks the peer after
		return
	}
	if !g.cfg.Router.Known(t.Peer) {
		g.cfg.Counters.Read(localapi.NotFound)
		proto.WriteError(w, http.StatusNotFound, localapi.ErrorBody{Error: string(localapi.NotFound), Detail: proto.NotSent(roads.UnknownPeer(t.Peer, roads.PeerNames(g.cfg.Router)), ""), Peer: t.Peer}.With(localapi.NothingSent))
		return
	}
	if upgrade {
		g.cfg.Caller.Session(w, r, t)
		return
	}
	g.cfg.Caller.Read(w, r, t)
}

// parseTarget reads /v1/peers/{peer}/{app}/{path...}: the names as they
// spell (percent-escapes decoded, then checked), and the path after them
// exactly as the app wrote it.
func parseTarget(r *http.Request) (caller.Target, localapi.Outcome, string) {
	var t caller.Target
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), localapi.PeersPath+"/")
	if !ok {
		return t, localapi.BadRequest, proto.NotSent(fmt.Sprintf("the path %q is not /v1/peers/PEER/APP/PATH", r.URL.EscapedPath()), "")
	}
	var err error
	if t.Peer, rest, err = proto.SplitTarget(rest, "peer"); err != nil {
		return t, localapi.BadRequest, proto.NotSent(err.Error(), "")
	}
	if t.App, rest, err = proto.SplitTarget(rest[1:], "app"); err != nil {
		return t, localapi.BadRequest, proto.NotSent(err.Error(), "")
	}
	t.PathQuery = rest
	if r.URL.RawQuery != "" {
		t.PathQuery += "?" + r.URL.RawQuery
	}
	t.Wait.Else = proto.DefaultTimeout // the local API's, when neither the app nor its owner says one
	o, detail := parseOptions(r, &t)
	return t, o, detail
}

// parseOptions reads what an app may say of a request in Delta's headers
// (X-Delta-Timeout, X-Delta-Route) into t, and checks t's path. A
// timeout said replaces the one t has (a forward's own).
func parseOptions(r *http.Request, t *caller.Target) (localapi.Outcome, string) {
	var err error
	if v := r.Header.Get(localapi.HeaderTimeout); v != "" {
		if t.Wait.Said, err = proto.ParseTimeout(v); err != nil {
			return localapi.BadRequest, proto.NotSent(err.Error(), "")
		}
	} else if d := grpcTimeout(r.Header); d > 0 && proto.IsGRPC(r.Header) {
		t.Wait.Said = d // gRPC's deadline is the call's wait (docs/protocol.md §1c)
	}
	if v := r.Header.Get(localapi.HeaderRoute); v != "" {
		if t.Pin, err = roads.Parse(v); err != nil {
			return localapi.BadRequest, proto.NotSent(fmt.Sprintf("X-Delta-Route %q is not one of %s", v, roadfacts.Names()), "")
		}
	}
	if strings.ContainsRune(t.PathQuery, 0) {
		return localapi.BadRequest, proto.NotSent("the path holds a NUL character", "")
	}
	return "", ""
}

// viewCall is a journal's call as GET /v1/calls/{id} shows it (DESIGN
// §4), its times in UTC.
func viewCall(c *record.Call) localapi.Call {
	v := localapi.Call{RequestID: c.RequestID, Peer: c.Peer, App: c.App, CallerApp: c.CallerApp,
		Method: c.Method, Path: c.Path, GRPC: c.GRPC, Digest: c.Digest, State: string(c.State), Outcome: c.Outcome,
		Dismissed: c.Dismissed, DismissedBy: c.DismissedBy, SettledBy: c.SettledBy, SettleNote: c.SettleNote, Detail: c.Detail,
		CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC(), NextAskAt: c.NextAskAt.UTC(),
		OwnerState: c.OwnerState, Asks: c.Asks, Attempts: []localapi.Attempt{}}
	for _, a := range c.Attempts {
		v.Attempts = append(v.Attempts, localapi.Attempt{N: a.N, Road: a.Road, Address: a.Address,
			StartedAt: a.StartedAt.UTC(), FirstByte: a.FirstByte, Error: a.Error, Reply: a.Reply})
	}
	v.Request = sentRequest(c.Request)
	if c.Answer != nil {
		// Body never nil: JSON "" (as ever), not null, for an empty one.
		v.Answer = &localapi.Answer{Status: c.Answer.Status, Header: c.Answer.Headers,
			Body: append([]byte{}, c.Answer.Body...), Omitted: c.Answer.Omitted}
	}
	return v
}

func (g *Handler) handleListCalls(w http.ResponseWriter, r *http.Request) {
	f := journal.CallFilter{}
	switch s := record.CallState(r.URL.Query().Get("state")); {
	case s == "":
	case s == "unsettled":
		f.Unsettled = true
	case s == "dismissed":
		f.Dismissed = true
	case slices.Contains(record.CallStates, s):
		f.State = s
	default:
		localError(w, localapi.BadRequest, fmt.Sprintf("state %q is not unsettled, dismissed or a call state (%s)", s, list(record.CallStates)))
		return
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 5000 {
			localError(w, localapi.BadRequest, fmt.Sprintf("limit %q is not a number from 1 to 5000", v))
			return
		}
		f.Limit = n
	}
	calls, err := g.cfg.DB.Calls().List(r.Context(), f)
	if err != nil {
		localError(w, localapi.Unavailable, "could not read the journal: "+err.Error())
		return
	}
	out := []localapi.Call{}
	for _, c := range calls {
		out = append(out, viewCall(c))
	}
	proto.WriteJSON(w, http.StatusOK, map[string]any{"calls": out})
}

func (g *Handler) handleGetCall(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var wait time.Duration
	if v := r.URL.Query().Get("wait"); v != "" {
		var err error
		if wait, err = proto.ParseTimeout(v); err != nil {
			localError(w, localapi.BadRequest, "wait: "+strings.TrimPrefix(err.Error(), "X-Delta-Timeout "))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	for {
		changed := g.cfg.DB.Changed()
		c, err := g.cfg.DB.Calls().Get(r.Context(), id)
		if errors.Is(err, journal.ErrNotFound) {
			localError(w, localapi.NotFound, fmt.Sprintf("no call with request id %q on this computer", id))
			return
		}
		if err != nil {
			localError(w, localapi.Unavailable, "could not read the journal: "+err.Error())
			return
		}
		if c.State != record.Sending && c.State != record.Unknown || ctx.Err() != nil {
			v := viewCall(c)
			hist, err := g.cfg.DB.History(r.Context(), id)
			if err != nil {
				localError(w, localapi.Unavailable, "could not read the journal: "+err.Error())
				return
			}
			for _, e := range hist {
				v.History = append(v.History, localapi.Step{At: e.At.UTC(), From: string(e.From), State: string(e.State),
					OwnerState: e.OwnerState, Dismissed: e.Dismissed, Detail: e.Detail})
			}
			proto.WriteJSON(w, http.StatusOK, v)
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
		}
	}
}

func (g *Handler) handleAsk(w http.ResponseWriter, r *http.Request) {
	c, err := g.cfg.Backend.Ask(r.Context(), r.PathValue("id"))
	g.writeCallResult(w, r.PathValue("id"), c, err)
}

func (g *Handler) handleDismiss(w http.ResponseWriter, r *http.Request) {
	c, err := g.cfg.Backend.Dismiss(r.Context(), r.PathValue("id"), "the local API")
	g.writeCallResult(w, r.PathValue("id"), c, err)
}

// handleForget drops what a call sent from the journal (delta forget).
func (g *Handler) handleForget(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := g.cfg.DB.Calls().ForgetRequest(r.Context(), id); err != nil {
		g.writeCallResult(w, id, nil, err)
		return
	}
	g.cfg.Log.Info("a call's kept request was forgotten at a person's request", "request_id", id)
	c, err := g.cfg.DB.Calls().Get(r.Context(), id)
	g.writeCallResult(w, id, c, err)
}

func (g *Handler) handleSettle(w http.ResponseWriter, r *http.Request) {
	var body struct {
		State string `json:"state"`
		Note  string `json:"note"`
	}
	err := proto.DecodeObject(r.Body, 16<<10, &body)
	if err == nil && body.State != "carried_out" && body.State != "not_carried_out" {
		err = fmt.Errorf("state %q is neither carried_out nor not_carried_out", body.State)
	}
	if err != nil {
		localError(w, localapi.BadRequest, `the body is not {"state": "carried_out" | "not_carried_out", "note": "…"}: `+err.Error())
		return
	}
	if len(body.Note) > 1000 {
		localError(w, localapi.BadRequest, "the note is over 1,000 bytes")
		return
	}
	c, err := g.cfg.Backend.Settle(r.Context(), r.PathValue("id"), record.CallState(body.State), body.Note)
	if errors.Is(err, journal.ErrNotSettleable) {
		localError(w, localapi.Conflict, err.Error())
		return
	}
	g.writeCallResult(w, r.PathValue("id"), c, err)
}

// handleReceipts lists what this computer's apps received in the last 7
// days (the owner's receipts), those to check first.
func (g *Handler) handleReceipts(w http.ResponseWriter, r *http.Request) {
	st := proto.ReceiptState(r.URL.Query().Get("state"))
	if st != "" && !slices.Contains(proto.StoredReceiptStates, st) {
		localError(w, localapi.BadRequest, fmt.Sprintf("state %q is not a receipt state (%s)", st, list(proto.StoredReceiptStates)))
		return
	}
	recs, err := g.cfg.DB.Receipts().Recent(r.Context(), g.cfg.Now().Add(-journal.ReceiptShown), st, 5000)
	if err != nil {
		localError(w, localapi.Unavailable, "could not read the journal: "+err.Error())
		return
	}
	if err := g.cfg.DB.Receipts().WithRequests(r.Context(), recs); err != nil {
		localError(w, localapi.Unavailable, "could not read the journal: "+err.Error())
		return
	}
	out := []localapi.Receipt{}
	for _, rc := range recs {
		out = append(out, receiptJSON(rc))
	}
	proto.WriteJSON(w, http.StatusOK, map[string]any{"receipts": out})
}

// sentRequest is a kept request (a call's, or a received call's) as the
// local API shows it; nil for none.
func sentRequest(rq *record.Request) *localapi.SentRequest {
	if rq == nil {
		return nil
	}
	return &localapi.SentRequest{Header: rq.Headers, Body: append([]byte{}, rq.Body...), Size: rq.Size, Truncated: rq.Truncated, Forgotten: rq.Forgotten}
}

// receiptJSON is a receipt as the local API shows it.
func receiptJSON(rc *journal.Receipt) localapi.Receipt {
	v := localapi.Receipt{RequestID: rc.RequestID, Caller: rc.CallerName, CallerNode: rc.Caller, CallerApp: rc.CallerApp, App: rc.App, Method: rc.Method,
		Path: rc.Path, State: string(rc.State), ReceivedAt: rc.ReceivedAt.UTC(), UpdatedAt: rc.UpdatedAt.UTC(), Digest: rc.Digest, ToCheck: rc.ToCheck()}
	v.Request = sentRequest(rc.Request)
	if !rc.CheckedAt.IsZero() {
		v.Checked = &localapi.ReceiptCheck{By: rc.CheckedBy, At: rc.CheckedAt.UTC(), Note: rc.CheckNote}
	}
	if rc.CallerSettled != "" {
		v.CallerSettled = &localapi.CallerSettlement{State: rc.CallerSettled, At: rc.CallerSettledAt.UTC(), Note: rc.CallerSettleNote}
	}
	return v
}

// handleGetReceipt shows the receipts under one request id (one, unless
// two callers used the same id), with what their calls carried.
func (g *Handler) handleGetReceipt(w http.ResponseWriter, r *http.Request) {
	recs, ok := g.findReceipts(w, r)
	if !ok {
		return
	}
	out := []localapi.Receipt{}
	for _, rc := range recs {
		out = append(out, receiptJSON(rc))
	}
	proto.WriteJSON(w, http.StatusOK, map[string]any{"receipts": out})
}

// findReceipts looks up the receipts under the path's id, answering 404
// when there are none.
func (g *Handler) findReceipts(w http.ResponseWriter, r *http.Request) ([]*journal.Receipt, bool) {
	id := r.PathValue("id")
	recs, err := g.cfg.DB.Receipts().Find(r.Context(), id)
	if err != nil {
		localError(w, localapi.Unavailable, "could not read the journal: "+err.Error())
		return nil, false
	}
	if len(recs) == 0 {
		localError(w, localapi.NotFound, fmt.Sprintf("this computer received no call %s (delta receipts lists those of the last 7 days)", id))
		return nil, false
	}
	return recs, true
}

// handleCheckReceipt records that a person here checked a receipt (POST
// /v1/receipts/{id}/check, {"note": "…", "caller": "…"}): it is no longer
// one to check. caller names the calling computer when two used the id.
func (g *Handler) handleCheckReceipt(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Note   string `json:"note"`
		Caller string `json:"caller"`
	}
	err := proto.DecodeObject(r.Body, 16<<10, &body)
	if err == nil && len(body.Note) > proto.MaxSettleNote {
		err = fmt.Errorf("the note is over %d bytes", proto.MaxSettleNote)
	}
	if err != nil {
		localError(w, localapi.BadRequest, `the body is not {"note": "…", "caller": "…"} (both may be left out): `+err.Error())
		return
	}
	rc, err := g.cfg.Backend.CheckReceiptRecord(r.Context(), r.PathValue("id"), body.Caller, "the local API", body.Note)
	switch {
	case errors.Is(err, journal.ErrNotFound):
		localError(w, localapi.NotFound, err.Error())
	case errors.Is(err, journal.ErrNotCheckable), errors.Is(err, journal.ErrCheckedAlready), errors.Is(err, desk.ErrAmbiguous):
		localError(w, localapi.Conflict, err.Error())
	case err != nil:
		localError(w, localapi.Unavailable, "could not write the journal: "+err.Error())
	default:
		proto.WriteJSON(w, http.StatusOK, receiptJSON(rc))
	}
}

// handleForgetReceived drops what a received call carried (delta
// forget-receipt; {"caller": "…"} names the calling computer when two used
// the id): its headers and body; the receipt and the body's size stay.
func (g *Handler) handleForgetReceived(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Caller string `json:"caller"`
	}
	if r.ContentLength != 0 {
		if err := proto.DecodeObject(r.Body, 16<<10, &body); err != nil {
			localError(w, localapi.BadRequest, `the body is not {"caller": "…"} (it may be left out): `+err.Error())
			return
		}
	}
	recs, ok := g.findReceipts(w, r)
	if !ok {
		return
	}
	node := ""
	if body.Caller != "" {
		for _, rc := range recs {
			if rc.CallerName == body.Caller || rc.Caller == body.Caller {
				node = rc.Caller
			}
		}
		if node == "" {
			localError(w, localapi.NotFound, fmt.Sprintf("%s sent no call %s that this computer received", body.Caller, r.PathValue("id")))
			return
		}
	}
	if err := g.cfg.DB.Receipts().ForgetReceived(r.Context(), node, r.PathValue("id")); err != nil {
		if errors.Is(err, journal.ErrNotFound) {
			localError(w, localapi.NotFound, fmt.Sprintf("nothing is kept of what received call %s carried", r.PathValue("id")))
			return
		}
		localError(w, localapi.Unavailable, "could not write the journal: "+err.Error())
		return
	}
	g.cfg.Log.Info("what a received call carried was forgotten at a person's request", "request_id", r.PathValue("id"))
	g.handleGetReceipt(w, r)
}

// writeCallResult answers an Ask or a Dismiss.
func (g *Handler) writeCallResult(w http.ResponseWriter, id string, c *record.Call, err error) {
	switch {
	case errors.Is(err, journal.ErrNotFound):
		localError(w, localapi.NotFound, fmt.Sprintf("no call with request id %q on this computer", id))
	case errors.Is(err, desk.ErrNotUnsettled):
		localError(w, localapi.Conflict, err.Error())
	case err != nil:
		localError(w, localapi.Unavailable, "could not use the journal: "+err.Error())
	default:
		proto.WriteJSON(w, http.StatusOK, viewCall(c))
	}
}

func (g *Handler) handleListApps(w http.ResponseWriter, r *http.Request) {
	apps, err := g.cfg.DB.Apps().List(r.Context())
	if err != nil {
		localError(w, localapi.Unavailable, "could not read the journal: "+err.Error())
		return
	}
	out := []localapi.App{}
	for _, a := range apps {
		out = append(out, localapi.App{App: a.Name, URL: a.URL, Timeout: proto.FormatLimit(a.Timeout), H2C: a.H2C, UpdatedAt: a.UpdatedAt.UTC()})
	}
	proto.WriteJSON(w, http.StatusOK, map[string]any{"apps": out})
}

func (g *Handler) handlePutApp(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("app")
	if err := proto.CheckName("app", name); err != nil {
		localError(w, localapi.BadRequest, err.Error())
		return
	}
	var body localapi.AppRequest
	if err := proto.DecodeObject(r.Body, 64<<10, &body); err != nil {
		localError(w, localapi.BadRequest, `the body is not {"url": "http://127.0.0.1:PORT"} (and, if it likes, "timeout": SECONDS or "none"): `+err.Error())
		return
	}
	timeout, err := proto.ParseLimit(body.Timeout)
	if err != nil {
		localError(w, localapi.BadRequest, "the app's "+err.Error())
		return
	}
	u, err := checkAppURL(body.URL)
	if err == nil {
		err = g.notOwnDoor(u)
	}
	if err != nil {
		localError(w, localapi.BadRequest, err.Error())
		return
	}
	apps, err := g.cfg.DB.Apps().List(r.Context())
	if err != nil {
		localError(w, localapi.Unavailable, "could not read the journal: "+err.Error())
		return
	}
	for _, a := range apps {
		if a.Name != name && strings.EqualFold(a.Name, name) {
			localError(w, localapi.BadRequest, fmt.Sprintf("app name %q differs only in case from the registered app %q; a person could not tell them apart (remove %q first)", name, a.Name, a.Name))
			return
		}
	}
	a, err := g.cfg.DB.Apps().Put(r.Context(), name, u, timeout, body.H2C)
	if err != nil {
		localError(w, localapi.Unavailable, "could not write the journal: "+err.Error())
		return
	}
	g.cfg.Log.Info("app registered", "app", name, "url", a.URL, "timeout", proto.FormatLimit(a.Timeout), "h2c", a.H2C)
	proto.WriteJSON(w, http.StatusOK, localapi.App{App: a.Name, URL: a.URL, Timeout: proto.FormatLimit(a.Timeout), H2C: a.H2C, Secret: a.Secret, UpdatedAt: a.UpdatedAt.UTC()})
}

// checkAppURL accepts only http URLs on a loopback address with a port
// (1-65535) and no path, query or credentials, and returns it as Delta
// keeps it: http://HOST:PORT.
func checkAppURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("app url %q is not a URL: %w", s, err)
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("app url %q must start with http:// (the app listens on loopback)", s)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || (u.Path != "" && u.Path != "/") || u.Opaque != "" {
		return "", fmt.Errorf("app url %q must be only http://HOST:PORT, without path, query or credentials", s)
	}
	if u.Port() == "" {
		return "", fmt.Errorf("app url %q has no port", s)
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("app url %q has port %s, not one of 1-65535", s, u.Port())
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("app url %q is not on a loopback address (127.0.0.0/8 or ::1); Delta forwards only to apps on this computer", s)
	}
	return "http://" + u.Host, nil
}

// notOwnDoor refuses an app URL that is one of Delta's own doors (its
// local API or a peer listener, on loopback or every address): a peer's
// call forwarded there would come back into Delta.
func (g *Handler) notOwnDoor(appURL string) error {
	u, _ := url.Parse(appURL) // checked by checkAppURL
	ip := net.ParseIP(u.Hostname())
	addrs := append(g.cfg.OwnDoors(), g.forwards.Addrs()...)
	for _, a := range addrs {
		ta, ok := a.(*net.TCPAddr)
		if !ok || strconv.Itoa(ta.Port) != u.Port() {
			continue
		}
		if ta.IP.IsUnspecified() || ta.IP.Equal(ip) {
			return fmt.Errorf("app url %q is one of Delta's own doors (%s: its local API, a peer listener or a forward), not an app", appURL, ta)
		}
	}
	return nil
}

func (g *Handler) handleGetApp(w http.ResponseWriter, r *http.Request) {
	a, err := g.cfg.DB.Apps().Get(r.Context(), r.PathValue("app"))
	if errors.Is(err, journal.ErrNotFound) {
		localError(w, localapi.NotFound, fmt.Sprintf("no app %q is registered on this computer", r.PathValue("app")))
		return
	}
	if err != nil {
		localError(w, localapi.Unavailable, "could not read the journal: "+err.Error())
		return
	}
	proto.WriteJSON(w, http.StatusOK, localapi.App{App: a.Name, URL: a.URL, Timeout: proto.FormatLimit(a.Timeout), H2C: a.H2C, Secret: a.Secret, UpdatedAt: a.UpdatedAt.UTC()})
}

func (g *Handler) handleDeleteApp(w http.ResponseWriter, r *http.Request) {
	err := g.cfg.DB.Apps().Delete(r.Context(), r.PathValue("app"))
	if errors.Is(err, journal.ErrNotFound) {
		localError(w, localapi.NotFound, fmt.Sprintf("no app %q is registered on this computer", r.PathValue("app")))
		return
	}
	if err != nil {
		localError(w, localapi.Unavailable, "could not write the journal: "+err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleListForwards lists this computer's forwards (delta forward
// --list).
func (g *Handler) handleListForwards(w http.ResponseWriter, r *http.Request) {
	proto.WriteJSON(w, http.StatusOK, map[string]any{"forwards": g.forwards.List()})
}

// handlePutForward opens (or changes) the forward to a peer's app:
// {"listen": "127.0.0.1:0", "token": false, "timeout": "45"}, each
// optional.
func (g *Handler) handlePutForward(w http.ResponseWriter, r *http.Request) {
	peer, app := r.PathValue("peer"), r.PathValue("app")
	var body localapi.ForwardRequest
	if r.ContentLength != 0 {
		if err := proto.DecodeObject(r.Body, 16<<10, &body); err != nil {
			localError(w, localapi.BadRequest, `the body is not {"listen": "127.0.0.1:PORT", "token": false, "timeout": SECONDS} (each may be left out): `+err.Error())
			return
		}
	}
	if err := proto.CheckName("peer", peer); err != nil {
		localError(w, localapi.BadRequest, err.Error())
		return
	}
	if !g.cfg.Router.Known(peer) {
		localError(w, localapi.NotFound, roads.UnknownPeer(peer, roads.PeerNames(g.cfg.Router)))
		return
	}
	f, err := g.forwards.Add(peer, app, body)
	switch {
	case errors.Is(err, forward.ErrInvalid):
		localError(w, localapi.BadRequest, err.Error())
	case err != nil:
		localError(w, localapi.Unavailable, err.Error())
	default:
		f.Warning = g.appMissing(r.Context(), peer, app)
		proto.WriteJSON(w, http.StatusOK, f)
	}
}

// appMissing asks peer, for a few seconds, whether it has app: the words
// for a person when it does not, else "" (it has, or the peer could not
// be asked now: a forward may be opened before its peer is reachable).
func (g *Handler) appMissing(ctx context.Context, peer, app string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	apps, err := g.cfg.PeerApps(ctx, peer)
	if err != nil || slices.Contains(apps, app) {
		return ""
	}
	has := "it has none registered"
	if len(apps) > 0 {
		has = "its apps: " + strings.Join(apps, ", ")
	}
	return fmt.Sprintf("%s has no app %q (%s): the forward is open, and answers 404 until %s registers it (there: delta apps add %s URL)", peer, app, has, peer, app)
}

// handleDeleteForward closes and forgets a forward.
func (g *Handler) handleDeleteForward(w http.ResponseWriter, r *http.Request) {
	err := g.forwards.Remove(r.PathValue("peer"), r.PathValue("app"))
	switch {
	case errors.Is(err, forward.ErrNotFound):
		localError(w, localapi.NotFound, err.Error())
	case err != nil:
		localError(w, localapi.Unavailable, err.Error())
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

var nonceRe = regexp.MustCompile(`^[0-9a-f]{32,128}$`)

func (g *Handler) handleProof(w http.ResponseWriter, r *http.Request) {
	nonce := r.URL.Query().Get("nonce")
	if r.Method != http.MethodGet || !nonceRe.MatchString(nonce) {
		localError(w, localapi.BadRequest, "a proof is GET "+localapi.ProofPath+"?nonce=<32 to 128 hex digits>")
		return
	}
	w.Header().Set(localapi.HeaderOutcome, string(localapi.Answered))
	proto.WriteJSON(w, http.StatusOK, map[string]string{"proof": localapi.Proof(g.cfg.Token, nonce)})
}

// list joins states for an error: "sending, answered, …".
func list[S ~string](states []S) string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}
