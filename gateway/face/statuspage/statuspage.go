// Package statuspage is Delta's status page (DESIGN §3): an http.Handler
// over a narrow Source (the snapshot, a call's history, Ask and Dismiss),
// reached through a one-time login link that sets an HttpOnly,
// SameSite=Strict cookie. The cookie is honoured only by the page and its
// own Ask and Dismiss actions, which also need Origin equal to Delta's own
// origin and the session's CSRF token. The API's bearer token is never
// accepted here, and the cookie never on /v1. Sessions and CSRF tokens live
// in the Page, in memory.
package statuspage

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/delta-roads/delta/assets"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// Page constants.
// SessionCookie is the name of the page's own cookie: a forward removes
// it from what it passes to an app (DESIGN §2b).
const SessionCookie = "delta_session"

const (
	LoginLinkLifetime = 60 * time.Second // DESIGN §8
	sessionLifetime   = 12 * time.Hour
	sessionCookie     = SessionCookie
	pagePrefix        = "/page/" // the page's own actions
)

//go:embed statuspage.html
var statusPageHTML string

// stamp is a time for people: in this computer's zone, with the date and
// the zone ("Tue 1 Dec 14:03:07 CET").
func stamp(t time.Time) string { return t.Local().Format("Mon 2 Jan 15:04:05 MST") }

// listening says whether an owner app registered at appURL listens now:
// a connection opened to it and closed at once, as a health check does
// ("listening", or "not listening: connection refused").
func listening(appURL string) string {
	u, err := url.Parse(appURL)
	if err != nil || u.Host == "" {
		return "not a URL Delta can reach"
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[bool]string{true: "443", false: "80"}[u.Scheme == "https"])
	}
	c, err := net.DialTimeout("tcp", host, 300*time.Millisecond)
	if err != nil {
		var se *os.SyscallError
		if errors.As(err, &se) {
			return "not listening: " + se.Err.Error()
		}
		return "not listening: " + err.Error()
	}
	c.Close()
	return "listening"
}

// funcs are the page template's functions.
var funcs = template.FuncMap{
	"listening":    listening,
	"ago":          func(now, t time.Time) string { return view.Ago(now.Sub(t)) },
	"spark":        sparkline,
	"ms":           func(v float64) string { return view.FormatMillis(v) },
	"bytes":        view.Bytes,
	"int64":        func(v float64) int64 { return int64(v) },
	"words":        func(s record.CallState) string { return view.Words(s) },
	"callwords":    func(c *record.Call) string { return view.CallWords(c.State, c.Attempts) },
	"stamp":        stamp,
	"fullTime":     func(t time.Time) string { return t.Local().Format(time.RFC1123) },
	"history":      func(open bool, steps []record.Event) historyBox { return historyBox{Open: open, Steps: steps} },
	"istext":       func(b []byte) bool { return view.IsText(b) },
	"str":          func(b []byte) string { return string(b) },
	"received":     view.ReceivedWords,
	"kept":         func(title string, r *record.Request) keptBox { return keptBox{Title: title, Request: r} },
	"settledwords": view.SettledWords,
	"receipt": func(p pageData, r view.Received) receiptBox {
		return receiptBox{Page: p, R: r, CSRF: p.CSRF, Open: p.Open == "receipt-"+r.RequestID}
	},
	"settleable":  func(s record.CallState) bool { return s.Unsettled() },
	"needsperson": func(s record.CallState) bool { return s == record.NeedsPerson },
	// Only a call Delta still asks about can be set aside.
	"dismissable": func(s record.CallState, dismissed bool) bool { return s == record.Unknown && !dismissed },
	"wrap": func(p pageData, c pageCall, action bool) callBox {
		return callBox{Page: p, Call: c.Call, History: c.History, CSRF: p.CSRF, Open: p.Open == "call-"+c.RequestID, Action: action}
	},
	"appname":    view.AppName,
	"ownerwords": view.OwnerWords,
	"notkept":    func() string { return view.NotKept },
	"clip":       func(s string, n int) string { return view.Clip(s, n) },
	"request":    view.Request,
	"keptsize":   view.KeptSize,
	"shown":      shownHeaders,
	"add":        func(a, b int) int { return a + b },
	// statecls is a call state's look: needs (red), asking (blue), settled.
	"statecls": func(s record.CallState, dismissed bool) string {
		switch {
		case s == record.NeedsPerson:
			return "needs"
		case s == record.Unknown && dismissed:
			return "set-aside"
		case s == record.Unknown:
			return "asking"
		case s == record.CarriedOut:
			return "settled"
		case s == record.NotCarriedOut:
			return "not-done" // settled, but nothing happened: not shown as good news
		}
		return ""
	},
}

var statusPage = template.Must(template.New("status").Funcs(funcs).Parse(statusPageHTML))

// Source is what the page shows and does (served by the gateway).
type Source interface {
	// Snapshot reads what the page shows.
	Snapshot(ctx context.Context) (view.Snapshot, error)
	// History returns a call's events, oldest first.
	History(ctx context.Context, id string) ([]record.Event, error)
	// Ask asks the owner about an unsettled call now; Dismiss sets it
	// aside. Errors wrap record.ErrNotFound for a call that is not there.
	Ask(ctx context.Context, id string) (*record.Call, error)
	Dismiss(ctx context.Context, id, by string) (*record.Call, error)
	// Settle records a person's settlement (carried_out or
	// not_carried_out) with their note.
	Settle(ctx context.Context, id string, to record.CallState, note string) (*record.Call, error)
	// CheckReceipt records that a person here checked what the app did
	// with a call it received from caller (a name or node ID).
	CheckReceipt(ctx context.Context, id, caller, by, note string) (view.Received, error)
}

// Page is the status page. Its fields are set before it serves.
type Page struct {
	// Source is what it shows. Required.
	Source Source
	// Origin is Delta's own origin ("http://127.0.0.1:7420"): links are
	// made on it, and actions must come from it. Required.
	Origin func() string
	// Log receives refusals. If nil, nothing is logged.
	Log *slog.Logger
	// Now is the clock. If nil, time.Now.
	Now func() time.Time
	// API is the local API, of which the setup page is a client (its
	// lists and actions are the local API's, asked in process), and
	// Token the local token it is asked with. Without API the setup page
	// says it cannot ask.
	API   http.Handler
	Token string
	// OpenURL asks the desktop to open a URL in the person's browser
	// (the setup page's Open). If nil, the page shows the URL instead.
	OpenURL func(url string) error

	once     sync.Once
	handler  http.Handler
	mu       sync.Mutex
	codes    map[string]time.Time    // unused login codes → expiry
	sessions map[string]*pageSession // cookie value → session
}

func (p *Page) now() time.Time {
	if p.Now == nil {
		return time.Now()
	}
	return p.Now()
}

func (p *Page) log() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}

type pageSession struct {
	// key is the session's second secret, beside its cookie: the page is
	// served at /s/KEY/ and the cookie is sent only to that path (DESIGN
	// §3, docs/protocol.md). Browsers send a host's cookies to every
	// port of it (RFC 6265 §8.5): any process on another loopback port
	// could be sent a cookie scoped to "/", and read the page or act on
	// it. It is never sent to a path it does not know, and without the
	// key the cookie opens nothing.
	key     string
	csrf    string
	expires time.Time
	flash   string // shown once on the next page view
}

// LoginLink mints a one-time link to the status page, valid for
// LoginLinkLifetime (the menu's "Open status page", `delta open`).
func (p *Page) LoginLink() string {
	now := p.now()
	code := rand.Text()
	a := p
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.codes == nil {
		a.codes, a.sessions = map[string]time.Time{}, map[string]*pageSession{}
	}
	for c, exp := range a.codes {
		if now.After(exp) {
			delete(a.codes, c)
		}
	}
	a.codes[code] = now.Add(LoginLinkLifetime)
	return p.Origin() + "/login?code=" + code
}

// IsPagePath reports whether the status page (not the API) serves path.
func IsPagePath(path string) bool {
	return path == "/" || path == "/login" || strings.HasPrefix(path, pagePrefix) || strings.HasPrefix(path, sessionPrefix)
}

// sessionPrefix starts the path of a session's page: /s/KEY/.
const sessionPrefix = "/s/"

// base is the path of s's page.
func (s *pageSession) base() string { return sessionPrefix + s.key + "/" }

// ServeHTTP serves the page, its login and its actions (paths for which
// IsPagePath is true).
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.once.Do(func() { p.handler = p.newHandler() })
	p.handler.ServeHTTP(w, r)
}

func (p *Page) newHandler() http.Handler {
	p.mu.Lock()
	if p.codes == nil {
		p.codes, p.sessions = map[string]time.Time{}, map[string]*pageSession{}
	}
	p.mu.Unlock()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", p.handleLogin)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		pageError(w, http.StatusUnauthorized, "You are not logged in to this Delta's status page (no session cookie for this address). Open it from Delta's menu or with `delta open`: the link logs you in.")
	})
	mux.HandleFunc("GET "+sessionPrefix+"{key}/{$}", p.withSession(p.handlePage))
	mux.HandleFunc("POST "+sessionPrefix+"{key}"+pagePrefix+"calls/{id}/{action}", p.withSession(p.handlePageAction))
	mux.HandleFunc("POST "+sessionPrefix+"{key}"+pagePrefix+"receipts/{caller}/{id}/check", p.withSession(p.handleCheckReceipt))
	mux.HandleFunc("GET "+sessionPrefix+"{key}/setup", p.withSession(p.handleSetup))
	mux.HandleFunc("POST "+sessionPrefix+"{key}"+pagePrefix+"apps/{action}", p.withSession(p.handleSetupAction))
	mux.HandleFunc("POST "+sessionPrefix+"{key}"+pagePrefix+"apps/{name}/{action}", p.withSession(p.handleSetupAction))
	mux.HandleFunc("POST "+sessionPrefix+"{key}"+pagePrefix+"peers/{peer}/{name}/{action}", p.withSession(p.handleSetupAction))
	mux.HandleFunc("POST "+sessionPrefix+"{key}"+pagePrefix+"{action}", p.withSession(p.handlePairAction))
	mux.HandleFunc("POST "+sessionPrefix+"{key}"+pagePrefix+"pair-requests/{id}/{action}", p.withSession(p.handlePairAction))
	mux.HandleFunc("POST "+sessionPrefix+"{key}"+pagePrefix+"pairs/{name}/{action}", p.withSession(p.handlePairAction))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		pageError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s is not part of Delta's status page.", r.Method, r.URL.Path))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src "+scriptHash+"; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		// same-origin, not no-referrer: with no-referrer Chromium sends
		// "Origin: null" on the page's own form posts, and they would be refused.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
}

func pageError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Delta</title>
<style>body{font:15px -apple-system,system-ui,sans-serif;margin:3em auto;max-width:40em;color:#222}</style></head>
<body><h1>Delta</h1><p>%s</p></body></html>`, codeSpans(template.HTMLEscapeString(msg)))
}

var backticked = regexp.MustCompile("`([^`]+)`")

// codeSpans shows a message's `command` as code, not with its backticks
// (the words are the command line's too, where backticks mark a command).
func codeSpans(escaped string) string {
	return backticked.ReplaceAllString(escaped, "<code>$1</code>")
}

func (p *Page) handleLogin(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("code")
	now := p.now()
	a := p
	a.mu.Lock()
	exp, ok := a.codes[code]
	delete(a.codes, code) // one use, whatever happens
	var sid string
	var s *pageSession
	if ok && !now.After(exp) {
		sid = rand.Text()
		s = &pageSession{key: rand.Text(), csrf: rand.Text(), expires: now.Add(sessionLifetime)}
		a.sessions[sid] = s
	}
	a.mu.Unlock()
	switch {
	case code == "":
		pageError(w, http.StatusForbidden, "This address has no login code. Open the status page from Delta's menu or with `delta open`.")
		return
	case !ok:
		p.log().Warn("status page: a login link was refused: it was used already or never issued")
		pageError(w, http.StatusForbidden, "This login link was used already or was not issued by this Delta (links work once). Open a new one from Delta's menu or with `delta open`.")
		return
	case sid == "":
		pageError(w, http.StatusForbidden, fmt.Sprintf("This login link is older than %.0f s and has expired. Open a new one from Delta's menu or with `delta open`.", LoginLinkLifetime.Seconds()))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: sid, Path: s.base(), HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(sessionLifetime.Seconds())})
	to := s.base()
	if open := r.URL.Query().Get("open"); setupSection.MatchString(open) {
		to += "setup" // the setup page, at its section (the link's fragment)
	} else if openCard.MatchString(open) {
		to += "?open=" + url.QueryEscape(open)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// openCard is what ?open= may name: a call's or a receipt's card; or
// setupSection the setup page (its section is the link's fragment).
var (
	openCard     = regexp.MustCompile(`^(call|receipt)-[\x21-\x7e]{1,200}$`)
	setupSection = regexp.MustCompile(`^setup$`)
)

type sessionKey struct{}

// withSession refuses requests without a live session: its cookie, and
// its key in the path (/s/KEY/), both.
func (p *Page) withSession(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(sessionCookie)
		if err != nil {
			pageError(w, http.StatusUnauthorized, "You are not logged in to this Delta's status page (no session cookie). Open it from Delta's menu or with `delta open`: the link logs you in.")
			return
		}
		a := p
		a.mu.Lock()
		s := a.sessions[c.Value]
		if s != nil && p.now().After(s.expires) {
			delete(a.sessions, c.Value)
			s = nil
		}
		a.mu.Unlock()
		if s != nil && subtle.ConstantTimeCompare([]byte(r.PathValue("key")), []byte(s.key)) != 1 {
			p.log().Warn("status page: a session cookie came with another session's key, or none", "path", r.URL.Path)
			pageError(w, http.StatusUnauthorized, "This address is not your session's page (a session's cookie opens only its own address). Open the page from Delta's menu or with `delta open`.")
			return
		}
		if s == nil {
			pageError(w, http.StatusUnauthorized, "Your session on this Delta's status page has expired or Delta restarted since. Open the page again from Delta's menu or with `delta open`.")
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
	}
}

// actionForm reads an action's form, after checking that it came from
// the page itself (Origin) in this session (CSRF); on refusal it has
// answered and returns nil.
func (p *Page) actionForm(w http.ResponseWriter, r *http.Request) *pageSession {
	s := r.Context().Value(sessionKey{}).(*pageSession)
	if o := r.Header.Get("Origin"); o != p.Origin() {
		why := "it has no Origin header"
		if o != "" {
			why = fmt.Sprintf("it came from %s, not from %s", o, p.Origin())
		}
		p.log().Warn("status page: a cross-origin action was refused", "origin", o, "path", r.URL.Path)
		pageError(w, http.StatusForbidden, "Refused: "+why+". Delta's status page accepts actions only from its own page; nothing was done.")
		return nil
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		pageError(w, http.StatusBadRequest, "The form could not be read: "+err.Error()+"; nothing was done.")
		return nil
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
		pageError(w, http.StatusForbidden, "Refused: the form's CSRF token does not match this session (reload the page and try again); nothing was done.")
		return nil
	}
	return s
}

// handleCheckReceipt records that a person here checked what an app did
// with a call it received.
func (p *Page) handleCheckReceipt(w http.ResponseWriter, r *http.Request) {
	s := p.actionForm(w, r)
	if s == nil {
		return
	}
	id, caller := r.PathValue("id"), r.PathValue("caller")
	if r.PostForm.Get("checked") != "yes" {
		pageError(w, http.StatusBadRequest, "Marking a received call checked needs the box \"I checked\" ticked: go back, look in the app, tick it and try again; nothing was done.")
		return
	}
	rc, err := p.Source.CheckReceipt(r.Context(), id, caller, "the status page", strings.TrimSpace(r.PostForm.Get("note")))
	flash := fmt.Sprintf("Call %s from %s is marked checked by you; Delta no longer lists it among the calls a person must look at.", id, rc.CallerName)
	if err != nil {
		flash = err.Error()
	}
	p.mu.Lock()
	s.flash = flash
	p.mu.Unlock()
	http.Redirect(w, r, s.base()+"#receipt-"+url.PathEscape(id), http.StatusSeeOther)
}

func (p *Page) handlePageAction(w http.ResponseWriter, r *http.Request) {
	s := p.actionForm(w, r)
	if s == nil {
		return
	}
	id := r.PathValue("id")
	var c *record.Call
	var err error
	switch r.PathValue("action") {
	case "ask":
		c, err = p.Source.Ask(r.Context(), id)
	case "dismiss":
		c, err = p.Source.Dismiss(r.Context(), id, "the status page")
	case "settle":
		to := record.CallState(r.PostForm.Get("state"))
		if to != record.CarriedOut && to != record.NotCarriedOut {
			pageError(w, http.StatusBadRequest, "The form names no settlement (It happened, or It did not happen); nothing was done.")
			return
		}
		if r.PostForm.Get("checked") != "yes" {
			pageError(w, http.StatusBadRequest, "Settling needs the box \"I checked\" ticked: go back, check on the other computer, tick it and choose again; nothing was done.")
			return
		}
		c, err = p.Source.Settle(r.Context(), id, to, strings.TrimSpace(r.PostForm.Get("note")))
	default:
		pageError(w, http.StatusNotFound, fmt.Sprintf("%q is not an action of the status page (ask, dismiss, settle).", r.PathValue("action")))
		return
	}
	var flash string
	switch {
	case errors.Is(err, record.ErrNotFound):
		flash = fmt.Sprintf("There is no call %s on this computer.", id)
	case err != nil:
		flash = err.Error()
	case r.PathValue("action") == "dismiss":
		flash = fmt.Sprintf("Call %s is set aside; Delta keeps asking its owner and will tell you when it settles.", id)
	case r.PathValue("action") == "settle":
		flash = fmt.Sprintf("Call %s is settled by you: %s. Delta no longer asks %s about it.", id, view.Words(c.State), c.Peer)
	default:
		flash = fmt.Sprintf("Asked %s about call %s: %s.", c.Peer, id, view.Words(c.State))
		if c.Detail != "" {
			flash = fmt.Sprintf("Asked %s about call %s: %s (%s).", c.Peer, id, view.Words(c.State), c.Detail)
		}
	}
	p.mu.Lock()
	s.flash = flash
	p.mu.Unlock()
	http.Redirect(w, r, s.base()+"#call-"+url.PathEscape(id), http.StatusSeeOther)
}

type pageCall struct {
	*record.Call
	History []record.Event
}

// callBox is what the page's "call" template draws: one line, open when
// the address says so; Action: with its one action beside the line.
type callBox struct {
	Page    pageData
	Call    *record.Call
	History []record.Event
	CSRF    string
	Open    bool
	Action  bool
}

// shownHeaders are a kept request's headers as a person is shown them:
// Delta's own (X-Delta-*) are left out, the request id is shown apart.
func shownHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if !strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Delta-") {
			out[k] = v
		}
	}
	return out
}

// receiptBox is what the page's "receipt" template draws: a received call
// to check, with its form.
type receiptBox struct {
	Page pageData
	R    view.Received
	CSRF string
	Open bool
}

// keptBox is what the page's "kept" template draws: what a call carried,
// under a title.
type keptBox struct {
	Title   string
	Request *record.Request
}

// historyBox is what the page's "history" template draws: a call's steps,
// shown open or folded.
type historyBox struct {
	Open  bool
	Steps []record.Event
}

type pageData struct {
	// Base is the session's page path (/s/KEY/), which every link and
	// form of the page starts with.
	Base     string
	Now      time.Time
	Snap     view.Snapshot
	Headline string
	Level    view.Level
	CSRF     string
	Flash    string
	// Open is the card shown open ("call-ID", "receipt-ID"), from the
	// address (?open=): the page does not refresh itself while one is,
	// so that a person reading it or typing a note is not interrupted.
	Open string
	// The calls by what a person must do (view.Group), those settled
	// recently, and the newest of all.
	NeedsYou []pageCall
	Asking   []pageCall // set aside ones too, marked
	Settled  []pageCall
	Recent   []pageCall
	// ToCheck are the received calls to check; Received the others.
	ToCheck  []view.Received
	Received []view.Received
	// Mark is the state's mark as a data: URL, for the favicon and the
	// header.
	Mark template.URL
}

// newPageData arranges a snapshot for the page.
func newPageData(snap view.Snapshot, now time.Time, base, csrf, open string) pageData {
	d := pageData{Base: base, Now: now, Snap: snap, CSRF: csrf, Open: open}
	d.Level, d.Headline = view.Overall(snap)
	g := view.Group(snap)
	calls := func(cs ...[]*record.Call) []pageCall {
		var out []pageCall
		for _, list := range cs {
			for _, c := range list {
				out = append(out, pageCall{Call: c})
			}
		}
		return out
	}
	// Recent writes: those not listed above already.
	shown := map[string]bool{}
	for _, c := range snap.Settled {
		shown[c.RequestID] = true
	}
	var recent []*record.Call
	for _, c := range snap.Recent {
		if !c.State.Unsettled() && !shown[c.RequestID] {
			recent = append(recent, c)
		}
	}
	d.NeedsYou, d.Asking, d.Settled, d.Recent = calls(g.NeedsYou), calls(g.Asking, g.SetAside), calls(snap.Settled), calls(recent)
	for _, r := range snap.Received {
		if r.ToCheck {
			d.ToCheck = append(d.ToCheck, r)
		} else {
			d.Received = append(d.Received, r)
		}
	}
	if _, icon, err := assets.TrayIcon(string(d.Level)); err == nil {
		d.Mark = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(icon))
	}
	return d
}

func (p *Page) handlePage(w http.ResponseWriter, r *http.Request) {
	s := r.Context().Value(sessionKey{}).(*pageSession)
	snap, err := p.Source.Snapshot(r.Context())
	if err != nil {
		pageError(w, http.StatusServiceUnavailable, "Delta could not read its journal: "+err.Error())
		return
	}
	d := newPageData(snap, p.now(), s.base(), s.csrf, r.URL.Query().Get("open"))
	p.mu.Lock()
	d.Flash, s.flash = s.flash, ""
	p.mu.Unlock()
	// Only the open card shows its history. A call swept meanwhile has
	// none: it is drawn without.
	for _, group := range [][]pageCall{d.NeedsYou, d.Asking, d.Settled, d.Recent} {
		for i := range group {
			if d.Open == "call-"+group[i].RequestID {
				group[i].History, _ = p.Source.History(r.Context(), group[i].RequestID)
			}
		}
	}
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, d); err != nil {
		pageError(w, http.StatusInternalServerError, "Delta could not draw its status page: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(visible(buf.Bytes()))
}

// visible makes what apps and peers wrote safe to show on the page: the
// template escapes HTML, and this makes every bidirectional formatting
// character and every control character other than whitespace visible
// (view.Safe's marks). The page's own text holds none, so the whole page
// can be passed through.
func visible(page []byte) []byte {
	s := string(page)
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for i, r := range s {
		if r == '\n' || r == '\r' || r == '\t' || r != utf8.RuneError && !view.UnsafeRune(r) {
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(html.EscapeString(view.Safe(string(r))))
		_, size := utf8.DecodeRuneInString(s[i:])
		last = i + size
	}
	if last == 0 {
		return page
	}
	b.WriteString(s[last:])
	return []byte(b.String())
}

// sparkline draws recent RTTs as a small inline SVG (no script, no fetch).
func sparkline(v []float64) template.HTML {
	const w, h = 120.0, 24.0
	if len(v) == 0 {
		return ""
	}
	hi := 0.0
	for _, x := range v {
		hi = max(hi, x)
	}
	if hi == 0 {
		hi = 1
	}
	var pts strings.Builder
	step := w / float64(max(len(v)-1, 1))
	for i, x := range v {
		fmt.Fprintf(&pts, "%.1f,%.1f ", float64(i)*step, h-1-(x/hi)*(h-2))
	}
	return template.HTML(fmt.Sprintf(`<svg class="spark" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="last %d round trips, highest %s"><polyline fill="none" stroke="currentColor" stroke-width="1.5" points="%s"/></svg>`,
		w, h, w, h, len(v), view.FormatMillis(hi), strings.TrimSpace(pts.String())))
}
