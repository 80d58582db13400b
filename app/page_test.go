package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// browser starts headless Chromium (Debian's chromium) for the test, or
// skips it naming what to install.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (Debian package chromium; `make test` installs it when root): the status page cannot be tested in a browser")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		// Chromium looks names up for its own services even with the
		// flags above (the offline namespace guard counted 40 look-ups):
		// it may resolve nothing, and the page is on 127.0.0.1 (a
		// forward also by its own name, APP.PEER.LABEL.localhost, which
		// Chromium resolves to loopback by itself).
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost, EXCLUDE *.localhost"),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication,NetworkTimeServiceQuerying,CertificateTransparencyComponentUpdater"),
		chromedp.WindowSize(1100, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for Chromium to exit
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// bodyText navigates to u and returns the page's text.
func bodyText(t *testing.T, ctx context.Context, u string) string {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(u)); err != nil {
		t.Fatalf("load %s: %v", u, err)
	}
	text, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatalf("read %s: %v", u, err)
	}
	return text
}

// TestStatusPageInBrowser uses the status page in headless Chromium: the
// login link from `delta open` works once, the page without its cookie is
// refused, a cross-origin form POST is refused, the unsettled call is
// listed and its Ask button asks the owner.
func TestStatusPageInBrowser(t *testing.T) {
	ctx := browser(t)
	laptop, _, app := startPair(t)
	laptop.c.Must(t, "GET", "/v1/peers/studio/notes/answer/r", nil)
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/sleep-then-apply/p", []byte("x"),
		"X-Delta-Request-Id", "page-1", "X-Delta-App", "editor", "X-Delta-Timeout", "0.5")
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	base := laptop.c.URL

	if text := bodyText(t, ctx, base+"/"); !strings.Contains(text, "not logged in") {
		t.Errorf("the page opened without a login:\n%s", text)
	}

	var out, errb bytes.Buffer
	open := exec.Command(bin, "open", "--print", "--state-dir", laptop.dir)
	open.Stdout, open.Stderr = &out, &errb
	if err := open.Run(); err != nil {
		t.Fatalf("delta open: %v: %s", err, errb.String())
	}
	link := strings.TrimSpace(out.String())
	if !strings.HasPrefix(link, base+"/login?code=") {
		t.Fatalf("delta open printed %q", link)
	}
	text := bodyText(t, ctx, link)
	var err error
	for _, want := range []string{"Asking studio about 1 write", "editor → notes on studio", "POST /sleep-then-apply/p", "outcome unknown", "Ask now", "studio", "lan"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q:\n%s", want, text)
		}
	}
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	if strings.Contains(loc, "code=") || !strings.HasPrefix(loc, base+"/s/") {
		t.Errorf("the page's address holds the login code, or is not the session's own (/s/KEY/): %s", loc)
	}
	page := loc // the session's page: its cookie is sent there only
	if text := bodyText(t, ctx, base+"/"); !strings.Contains(text, "not logged in") {
		t.Errorf("the session's cookie opened the page at /:\n%s", text)
	}
	if text := bodyText(t, ctx, link); !strings.Contains(text, "used already") {
		t.Errorf("the login link worked twice:\n%s", text)
	}

	// Another origin that knows the session's page posts to its Ask: the
	// browser sends the cookie (same site), Delta refuses on Origin, and
	// nothing is asked.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%spage/calls/page-1/ask"><input name="csrf" value="guess"></form>
<script>document.forms[0].submit()</script>`, page)
	}))
	defer evil.Close()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(evil.URL), chromedp.WaitVisible(chromedp.Search(`//*[contains(text(), "Refused")]`))); err != nil {
		t.Fatalf("cross-origin post: %v", err)
	}
	text, _ = chromedp.Run(tctx, chromedp.Text(chromedp.CSS("body")))
	if !strings.Contains(text, "it came from "+evil.URL) {
		t.Errorf("cross-origin post: %s", text)
	}
	if !laptop.log.Contains(`status page: a cross-origin action was refused" origin=` + evil.URL) {
		t.Errorf("the log does not name the refused origin %s", evil.URL)
	}

	// Ask from the page: the owner's app is still working, so it says
	// "running" and the page shows it.
	bodyText(t, ctx, page)
	if err := chromedp.Do(tctx,
		chromedp.Click(chromedp.CSS(`#call-page-1 form[action$="/ask"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		t.Fatalf("click Ask now: %v", err)
	}
	text, _ = chromedp.Run(tctx, chromedp.Text(chromedp.CSS(".flash")))
	if !strings.Contains(text, "Asked studio about call page-1: outcome unknown") {
		t.Errorf("after Ask: %q", text)
	}
	if text, err = chromedp.Run(tctx, chromedp.Text(chromedp.CSS("body"))); err != nil {
		t.Fatal(err)
	}
	// The call is one line; a click on it opens it, and the page stops
	// refreshing itself while it is open.
	if strings.Contains(text, "request id page-1") {
		t.Errorf("the closed card shows its details:\n%s", text)
	}
	if err := chromedp.Do(tctx,
		chromedp.Click(chromedp.CSS(`#call-page-1 a.toggle`)),
		chromedp.WaitVisible(chromedp.CSS(`#call-page-1 .body`))); err != nil {
		t.Fatalf("click the call's line: %v", err)
	}
	if text, err = chromedp.Run(tctx, chromedp.Text(chromedp.CSS("#call-page-1"))); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"studio last said: the app is working on it", "request id page-1", "Dismiss", "It happened", "I checked on studio"} {
		if !strings.Contains(text, want) {
			t.Errorf("the open card lacks %q:\n%s", want, text)
		}
	}
	if text, _ = chromedp.Run(tctx, chromedp.Text(chromedp.CSS("header"))); !strings.Contains(text, "not refreshing while a call is open") {
		t.Errorf("the header while a card is open: %s", text)
	}
	// The owner's app finishes; once settled the call leaves the list.
	app.Release("/sleep-then-apply/p")
	if c := laptop.c.GetCall(t, "page-1", 30); c.State != "carried_out" {
		t.Fatalf("call is %s, want carried_out", c.State)
	}
	if text := bodyText(t, ctx, page); !strings.Contains(text, "No write waits on an owner") || !strings.Contains(text, "carried out") {
		t.Errorf("after settling:\n%s", text)
	}
}

// openLink runs `delta open --print` for a state folder, with extra flags.
func openLink(t *testing.T, dir string, flags ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, append([]string{"open", "--print", "--state-dir", dir}, flags...)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("delta open: %v: %s", err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

// TestSettleInBrowser: a call whose owner app reset after reading needs a
// person. On the caller's page the person sees what was sent, "It
// happened" does nothing until the box "I checked" is ticked, and then
// settles it with the note. On the owner's page, opened at the receipt,
// the received call is listed in plain words (app_unknown on hover), with
// what it carried and the caller's person's settlement, and the registered
// apps.
func TestSettleInBrowser(t *testing.T) {
	ctx := browser(t)
	laptop, studio, _ := startPair(t)
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/reset-after-read/rent", []byte("pay the rent"),
		"X-Delta-Request-Id", "page-person", "X-Delta-App", "editor", "Content-Type", "text/plain")
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	if c := laptop.c.GetCall(t, "page-person", 30); c.State != "needs_person" {
		t.Fatalf("call is %s, want needs_person", c.State)
	}
	text := bodyText(t, ctx, openLink(t, laptop.dir, "--call", "page-person"))
	for _, want := range []string{"What was sent", "pay the rent", "I checked on studio", "It happened", "It did not happen", "delta open --receipt page-person"} {
		if !strings.Contains(text, want) {
			t.Errorf("the caller's page lacks %q:\n%s", want, text)
		}
	}
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	happened := `#settle-page-person button[value="carried_out"]`
	// Not ticked: the browser does not submit the form.
	if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS(happened))); err != nil {
		t.Fatal(err)
	}
	if c := laptop.c.GetCall(t, "page-person", 0); c.State != "needs_person" {
		t.Fatalf("settled without the box ticked: %s", c.State)
	}
	if err := chromedp.Do(tctx,
		chromedp.Click(chromedp.CSS(`#settle-page-person input[name="checked"]`)),
		chromedp.SendKeys(chromedp.CSS(`#settle-page-person input[name="note"]`), "the note is in the app"),
		chromedp.Click(chromedp.CSS(happened)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		t.Fatalf("settle from the page: %v", err)
	}
	if flash, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(".flash"))); !strings.Contains(flash, "settled by you: carried out") {
		t.Errorf("after settling: %q", flash)
	}
	var rec struct {
		State      string
		SettledBy  string `json:"settled_by"`
		SettleNote string `json:"settle_note"`
	}
	json.Unmarshal(laptop.c.Must(t, "GET", "/v1/calls/page-person", nil).Body, &rec)
	if rec.State != "carried_out" || rec.SettledBy != "a person" || rec.SettleNote != "the note is in the app" {
		t.Fatalf("the record after settling: %+v", rec)
	}

	// The owner's page, at the receipt, once laptop has told studio.
	gatewaytest.WaitFor(t, 20*time.Second, "studio to hear of laptop's settlement", func() bool {
		return strings.Contains(string(studio.c.Must(t, "GET", "/v1/receipts/page-person", nil).Body), `"caller_settled"`)
	})
	link := openLink(t, studio.dir, "--receipt", "page-person")
	if !strings.HasSuffix(link, "&open=receipt-page-person#receipt-page-person") {
		t.Fatalf("delta open --receipt printed %q", link)
	}
	text = bodyText(t, ctx, link)
	for _, want := range []string{"laptop’s editor → notes", "POST /reset-after-read/rent", "request id page-person", "settled on laptop",
		"the app took it and its connection broke before it answered", "A person on laptop settled it: it happened (carried out) (“the note is in the app”)",
		"What it carried", "pay the rent", "notes\thttp://127.0.0.1:"} {
		if !strings.Contains(text, want) {
			t.Errorf("the owner's page lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "check the app") || strings.Contains(text, "app_unknown") {
		t.Errorf("the owner's page asks a person to check what the caller's person settled, or shows the term:\n%s", text)
	}
	if loc, _ := chromedp.Run(tctx, chromedp.Location()); !strings.HasSuffix(loc, "#receipt-page-person") {
		t.Errorf("the owner's page is not at the receipt: %s", loc)
	}
}
