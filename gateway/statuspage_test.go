package gateway_test

import (
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// pageDo sends method u to the status page with cookie (may be nil), the
// form (may be nil) and header pairs, without following redirects.
func pageDo(t *testing.T, method, u string, cookie *http.Cookie, form url.Values, hdr ...string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// The status page's guards, one by one: a login link works once; no cookie,
// the API token, a foreign Origin or a missing CSRF token are each refused
// with a page naming why; the page lists an unsettled call and its Ask
// settles it.
func TestStatusPageGuards(t *testing.T) {
	checkNoLeaks(t)
	// The reconciler waits an hour: only the page's Ask settles the call.
	laptop, studio := pair(t, func(n *node) { n.cfg.Backoff = []time.Duration{time.Hour} })
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/sleep-then-apply/p", []byte("x"),
		"X-Delta-Request-Id", "page-1", "X-Delta-App", "editor", "X-Delta-Timeout", "0.3")
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("setting up an unsettled call: %d %s", r.Status, r.Body)
	}
	base := laptop.g.LocalURL()

	if resp, body := pageDo(t, "GET", base+"/", nil, nil); resp.StatusCode != 401 || !strings.Contains(body, "no session cookie") {
		t.Errorf("page without a cookie: %d %s", resp.StatusCode, body)
	}
	if resp, body := pageDo(t, "GET", base+"/", nil, nil, "Authorization", "Bearer "+laptop.g.Token()); resp.StatusCode != 401 {
		t.Errorf("the API token opened the page: %d %s", resp.StatusCode, body)
	}

	link := laptop.g.LoginLink()
	resp, _ := pageDo(t, "GET", link, nil, nil)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !regexp.MustCompile(`^/s/[A-Z2-7]{26}/$`).MatchString(loc) {
		t.Fatalf("login link: %d, Location %q, want the session's page /s/KEY/", resp.StatusCode, loc)
	}
	page := base + loc
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "delta_session" {
			cookie = c
		}
	}
	// The cookie is sent only to the session's own page: a browser gives
	// a host's cookies to every port of it, and a process on another
	// loopback port is never asked for /s/KEY/.
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != loc {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict and Path %s", cookie, loc)
	}
	if resp, body := pageDo(t, "GET", link, nil, nil); resp.StatusCode != 403 || !strings.Contains(body, "used already") {
		t.Errorf("the login link worked twice: %d %s", resp.StatusCode, body)
	}
	if r := laptop.c.Must(t, "GET", "/v1/status", nil, "Authorization", "", "Cookie", "delta_session="+cookie.Value); r.Status != 401 {
		t.Errorf("the session cookie opened the API: %d", r.Status)
	}

	// The cookie alone, as a process on another port would replay it,
	// opens nothing: not the page at "/", not another session's path.
	for _, u := range []string{base + "/", base + "/s/AAAAAAAAAAAAAAAAAAAAAAAAAA/"} {
		if resp, body := pageDo(t, "GET", u, cookie, nil); resp.StatusCode != 401 || strings.Contains(body, "page-1") {
			t.Errorf("the cookie alone at %s: %d %s", u, resp.StatusCode, body)
		}
	}
	resp, body := pageDo(t, "GET", page, cookie, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "page-1") || !strings.Contains(body, "Asking studio about 1 write") {
		t.Fatalf("page: %d, lacks the unsettled call:\n%s", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if strings.Contains(body, "<script") || strings.Contains(body, "http://"+"fonts") {
		t.Errorf("the page loads scripts or fonts")
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("the page has no CSRF token in its forms")
	}
	csrf := url.Values{"csrf": {m[1]}}
	if resp, body := pageDo(t, "POST", base+"/page/calls/page-1/settle", cookie, url.Values{"csrf": {m[1]}, "state": {"not_carried_out"}, "checked": {"yes"}}, "Origin", base); resp.StatusCode < 400 {
		t.Errorf("the cookie and the CSRF token without the session's path settled: %d %s", resp.StatusCode, body)
	}
	ask := page + "page/calls/page-1/ask"
	for _, tc := range []struct {
		name   string
		cookie *http.Cookie
		form   url.Values
		origin string
		want   string
	}{
		{"no cookie", nil, csrf, base, "no session cookie"},
		{"another origin", cookie, csrf, "http://evil.example", "it came from http://evil.example"},
		{"no origin", cookie, csrf, "", "it has no Origin header"},
		{"no CSRF token", cookie, url.Values{}, base, "CSRF token does not match"},
	} {
		hdr := []string{}
		if tc.origin != "" {
			hdr = []string{"Origin", tc.origin}
		}
		resp, body := pageDo(t, "POST", ask, tc.cookie, tc.form, hdr...)
		if resp.StatusCode < 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, body)
		}
	}
	if n := app.Effects("/sleep-then-apply/p"); n != 0 {
		t.Fatalf("the owner applied before its release: %d", n)
	}
	if c := laptop.c.GetCall(t, "page-1", 0); c.State != "unknown" || c.OwnerState != "" {
		t.Fatalf("a refused action reached the call: %+v", c)
	}

	// Dismiss sets it aside: off the unsettled list, still listed and asked.
	if resp, _ := pageDo(t, "POST", page+"page/calls/page-1/dismiss", cookie, csrf, "Origin", base); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("dismiss from the page: %d", resp.StatusCode)
	}
	_, body = pageDo(t, "GET", page, cookie, nil)
	if !strings.Contains(body, `Delta is asking <span class="count">1</span>`) || !strings.Contains(body, "outcome unknown, set aside") || !strings.Contains(body, "Delta keeps asking its owner") ||
		!strings.Contains(body, "· 1 set aside, still asked about") {
		t.Errorf("page after Dismiss:\n%s", body)
	}
	_, body = pageDo(t, "GET", page+"?open=call-page-1", cookie, nil)
	if !strings.Contains(body, "Set aside from the status page") || strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("the call's open card after Dismiss:\n%s", body)
	}
	if c := laptop.c.Must(t, "GET", "/v1/calls/page-1", nil); !strings.Contains(string(c.Body), `"dismissed_by": "the status page"`) {
		t.Errorf("the record does not say who dismissed it: %s", c.Body)
	}
	// Times carry their date and zone.
	if !regexp.MustCompile(`\(\w{3} \d{1,2} \w{3} \d\d:\d\d:\d\d \w+\)`).MatchString(body) {
		t.Errorf("the call's time has no date and zone:\n%s", body)
	}

	app.Release("/sleep-then-apply/p")
	studio.waitReceiptDone(t, "node-laptop", "page-1")
	resp, _ = pageDo(t, "POST", ask, cookie, csrf, "Origin", base)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("ask from the page: %d", resp.StatusCode)
	}
	if c := laptop.c.GetCall(t, "page-1", 0); c.State != "carried_out" {
		t.Fatalf("after Ask on the page the call is %s, want carried_out", c.State)
	}
	_, body = pageDo(t, "GET", page, cookie, nil)
	if !strings.Contains(body, "Asked studio about call page-1: carried out") || !strings.Contains(body, `Delta is asking <span class="count">0</span>`) ||
		!strings.Contains(body, `Settled recently <span class="count">1</span>`) {
		t.Errorf("page after Ask lacks the result:\n%s", body)
	}
}

// TestPageShowsWhatAppsWroteSafely: a calling app's name with a
// right-to-left override and control characters, and a path with one, are
// shown neutralised on the page; the name is bounded.
func TestPageShowsWhatAppsWroteSafely(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, func(n *node) { n.cfg.Backoff = []time.Duration{time.Hour} })
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	name := "invoice\u202Efdp.exe" + strings.Repeat("x", 5000) // HTTP itself keeps control characters out of headers
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/sleep-then-apply/%E2%80%AEgpj.exe", []byte("x"),
		"X-Delta-Request-Id", "rtl-1", "X-Delta-App", name, "X-Delta-Timeout", "0.3")
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("setting up an unsettled call: %d %s", r.Status, r.Body)
	}
	resp, _ := pageDo(t, "GET", laptop.g.LoginLink(), nil, nil)
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "delta_session" {
			cookie = c
		}
	}
	_, body := pageDo(t, "GET", laptop.g.LocalURL()+resp.Header.Get("Location"), cookie, nil)
	if !strings.Contains(body, "rtl-1") || strings.ContainsRune(body, '\u202E') || !strings.Contains(html.UnescapeString(body), "invoice⟨U+202E⟩fdp.exe") {
		t.Errorf("the page shows the app's name as it was sent, or not at all:\n%s", grepLines(body, "gpj"))
	}
	if strings.Contains(body, strings.Repeat("x", 100)) {
		t.Errorf("the page shows the app's name unbounded")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
