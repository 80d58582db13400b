package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/journal"
	"github.com/delta-roads/delta/gateway/roads"
)

// The status page (DESIGN §3): reached through a one-time login link that
// sets an HttpOnly, SameSite=Strict cookie. The cookie is honoured only by
// the page and its own Ask and Dismiss actions, which also need Origin equal
// to Delta's own origin and the session's CSRF token. The API's bearer
// token is never accepted here, and the cookie never on /v1.

// Page constants.
const (
	LoginLinkLifetime = 60 * time.Second // DESIGN §8
	sessionLifetime   = 12 * time.Hour
	sessionCookie     = "delta_session"
	pagePrefix        = "/page/" // the page's own actions
)

//go:embed statuspage.html
var statusPageHTML string

var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"ago":      func(now, t time.Time) string { return Ago(now.Sub(t)) },
	"spark":    sparkline,
	"ms":       func(v float64) string { return FormatMillis(v) },
	"words":    func(s journal.CallState) string { return s.Words() },
	"stamp":    func(t time.Time) string { return t.Local().Format("15:04:05") },
	"fullTime": func(t time.Time) string { return t.Local().Format(time.RFC1123) },
	"history":  func(open bool, steps []journal.Event) historyBox { return historyBox{Open: open, Steps: steps} },
	"wrap": func(p pageData, c pageCall) callBox {
		return callBox{Page: p, Call: c.Call, History: c.History, CSRF: p.CSRF}
	},
}).Parse(statusPageHTML))

type pageAuth struct {
	mu       sync.Mutex
	codes    map[string]time.Time    // unused login codes → expiry
	sessions map[string]*pageSession // cookie value → session
}

type pageSession struct {
	csrf    string
	expires time.Time
	flash   string // shown once on the next page view
}

// LoginLink mints a one-time link to the status page, valid for
// LoginLinkLifetime (the menu's "Open status page", `delta open`).
func (g *Gateway) LoginLink() string {
	now := g.now()
	code := rand.Text()
	a := &g.page
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
	return g.LocalURL() + "/login?code=" + code
}

// isPagePath reports whether the status page (not the API) serves path.
func isPagePath(path string) bool {
	return path == "/" || path == "/login" || strings.HasPrefix(path, pagePrefix)
}

func (g *Gateway) pageHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", g.handleLogin)
	mux.HandleFunc("GET /{$}", g.withSession(g.handlePage))
	mux.HandleFunc("POST "+pagePrefix+"calls/{id}/{action}", g.withSession(g.handlePageAction))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		pageError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s is not part of Delta's status page.", r.Method, r.URL.Path))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
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
<body><h1>Delta</h1><p>%s</p></body></html>`, template.HTMLEscapeString(msg))
}

func (g *Gateway) handleLogin(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("code")
	now := g.now()
	a := &g.page
	a.mu.Lock()
	exp, ok := a.codes[code]
	delete(a.codes, code) // one use, whatever happens
	var sid string
	if ok && !now.After(exp) {
		sid = rand.Text()
		a.sessions[sid] = &pageSession{csrf: rand.Text(), expires: now.Add(sessionLifetime)}
	}
	a.mu.Unlock()
	switch {
	case code == "":
		pageError(w, http.StatusForbidden, "This address has no login code. Open the status page from Delta's menu or with `delta open`.")
		return
	case !ok:
		g.log.Warn("status page: a login link was refused: it was used already or never issued")
		pageError(w, http.StatusForbidden, "This login link was used already or was not issued by this Delta (links work once). Open a new one from Delta's menu or with `delta open`.")
		return
	case sid == "":
		pageError(w, http.StatusForbidden, fmt.Sprintf("This login link is older than %.0f s and has expired. Open a new one from Delta's menu or with `delta open`.", LoginLinkLifetime.Seconds()))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: sid, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(sessionLifetime.Seconds())})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

type sessionKey struct{}

// withSession refuses requests without a live session cookie.
func (g *Gateway) withSession(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(sessionCookie)
		if err != nil {
			pageError(w, http.StatusUnauthorized, "You are not logged in to this Delta's status page (no session cookie). Open it from Delta's menu or with `delta open`: the link logs you in.")
			return
		}
		a := &g.page
		a.mu.Lock()
		s := a.sessions[c.Value]
		if s != nil && g.now().After(s.expires) {
			delete(a.sessions, c.Value)
			s = nil
		}
		a.mu.Unlock()
		if s == nil {
			pageError(w, http.StatusUnauthorized, "Your session on this Delta's status page has expired or Delta restarted since. Open the page again from Delta's menu or with `delta open`.")
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
	}
}

func (g *Gateway) handlePageAction(w http.ResponseWriter, r *http.Request) {
	s := r.Context().Value(sessionKey{}).(*pageSession)
	if o := r.Header.Get("Origin"); o != g.LocalURL() {
		why := "it has no Origin header"
		if o != "" {
			why = fmt.Sprintf("it came from %s, not from %s", o, g.LocalURL())
		}
		g.log.Warn("status page: a cross-origin action was refused", "origin", o, "path", r.URL.Path)
		pageError(w, http.StatusForbidden, "Refused: "+why+". Delta's status page accepts actions only from its own page; nothing was done.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		pageError(w, http.StatusBadRequest, "The form could not be read: "+err.Error()+"; nothing was done.")
		return
	}
	if !checkToken(r.PostForm.Get("csrf"), s.csrf) {
		pageError(w, http.StatusForbidden, "Refused: the form's CSRF token does not match this session (reload the page and try again); nothing was done.")
		return
	}
	id := r.PathValue("id")
	var c *journal.Call
	var err error
	switch r.PathValue("action") {
	case "ask":
		c, err = g.Ask(r.Context(), id)
	case "dismiss":
		c, err = g.Dismiss(r.Context(), id)
	default:
		pageError(w, http.StatusNotFound, fmt.Sprintf("%q is not an action of the status page (ask, dismiss).", r.PathValue("action")))
		return
	}
	var flash string
	switch {
	case errors.Is(err, journal.ErrNotFound):
		flash = fmt.Sprintf("There is no call %s on this computer.", id)
	case err != nil:
		flash = err.Error()
	case r.PathValue("action") == "dismiss":
		flash = fmt.Sprintf("Call %s is set aside; Delta keeps asking its owner and will tell you when it settles.", id)
	default:
		flash = fmt.Sprintf("Asked %s about call %s: %s.", c.Peer, id, c.State.Words())
		if c.Detail != "" {
			flash = fmt.Sprintf("Asked %s about call %s: %s (%s).", c.Peer, id, c.State.Words(), c.Detail)
		}
	}
	g.page.mu.Lock()
	s.flash = flash
	g.page.mu.Unlock()
	http.Redirect(w, r, "/#call-"+url.PathEscape(id), http.StatusSeeOther)
}

type pageCall struct {
	*journal.Call
	History []journal.Event
}

// callBox is what the page's "call" template draws.
type callBox struct {
	Page    pageData
	Call    *journal.Call
	History []journal.Event
	CSRF    string
}

// historyBox is what the page's "history" template draws: a call's steps,
// shown open or folded.
type historyBox struct {
	Open  bool
	Steps []journal.Event
}

type pageData struct {
	Now       time.Time
	Snap      Snapshot
	Headline  string
	Level     string // ok | degraded | unsettled
	CSRF      string
	Flash     string
	Unsettled []pageCall
	Dismissed []pageCall
	Recent    []pageCall
}

func (g *Gateway) handlePage(w http.ResponseWriter, r *http.Request) {
	s := r.Context().Value(sessionKey{}).(*pageSession)
	snap, err := g.Snapshot(r.Context())
	if err != nil {
		pageError(w, http.StatusServiceUnavailable, "Delta could not read its journal: "+err.Error())
		return
	}
	d := pageData{Now: g.now(), Snap: snap, CSRF: s.csrf}
	d.Level, d.Headline = Overall(snap)
	g.page.mu.Lock()
	d.Flash, s.flash = s.flash, ""
	g.page.mu.Unlock()
	withHistory := func(cs []*journal.Call) []pageCall {
		var out []pageCall
		for _, c := range cs {
			h, _ := g.db.History(r.Context(), c.RequestID)
			out = append(out, pageCall{Call: c, History: h})
		}
		return out
	}
	d.Unsettled, d.Dismissed, d.Recent = withHistory(snap.Unsettled), withHistory(snap.Dismissed), withHistory(snap.Recent)
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, d); err != nil {
		pageError(w, http.StatusInternalServerError, "Delta could not draw its status page: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

// Overall sums a snapshot up for the icon, the menu's first line and the
// page's headline: level is "unsettled" when a write waits to be settled,
// "degraded" when a peer has no road up, else "ok".
func Overall(s Snapshot) (level, headline string) {
	if n := len(s.Unsettled); n > 0 {
		return "unsettled", fmt.Sprintf("%d unsettled write%s", n, plural(n))
	}
	var down []string
	for _, p := range s.Peers {
		if !PeerReachable(p) {
			down = append(down, p.Name)
		}
	}
	switch {
	case s.Tailnet != nil && s.Tailnet.NeedsLogin:
		return "degraded", "Not logged in to the tailnet"
	case len(down) == 1:
		return "degraded", down[0] + " is unreachable"
	case len(down) > 1:
		return "degraded", fmt.Sprintf("%d peers are unreachable", len(down))
	case len(s.Peers) == 0:
		return "ok", "Delta is running; no peers yet"
	}
	return "ok", fmt.Sprintf("All well: %d peer%s reachable", len(s.Peers), plural(len(s.Peers)))
}

// PeerReachable reports whether any road to p is not known to be down.
func PeerReachable(p roads.PeerStatus) bool {
	for _, r := range p.Roads {
		if r.State != "down" {
			return true
		}
	}
	return false
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Ago says how long d is, the way the menu does: "12 s", "4 min", "3 h",
// "2 days".
func Ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// FormatMillis formats a round-trip time: "0.4 ms", "12 ms".
func FormatMillis(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
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
		w, h, w, h, len(v), FormatMillis(hi), strings.TrimSpace(pts.String())))
}
