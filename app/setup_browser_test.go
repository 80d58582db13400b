package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// TestSetupInBrowser: an app shared and opened from the setup page alone
// (issue 66), in headless Chromium, with two Deltas as processes paired
// by ID and no delta command after delta run (the page's login links are
// asked of the local API, as the menu asks them): on studio's page a program listening there is offered by the
// name the OS gives it, and Share shares it under the name typed; on
// laptop's page studio's app is listed, and Open makes a forward to it and
// asks the desktop to open it (xdg-open, here a stand-in that hands the
// address to this test's Chromium, as a desktop hands it to the
// browser), where the app's own page loads. With DELTA_SCREENSHOTS
// set to a folder (docs/screenshots.sh), each step's page is drawn there.
func TestSetupInBrowser(t *testing.T) {
	ctx := browser(t)
	laptop, studio := twoProcs(t)
	desktop := t.TempDir()
	opened := filepath.Join(desktop, "opened")
	if err := os.WriteFile(filepath.Join(desktop, "xdg-open"), []byte("#!/bin/sh\necho \"$1\" >> "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	laptop.env = append(laptop.env, "PATH="+desktop+":"+os.Getenv("PATH"))
	studio.start(t)
	laptop.start(t)
	visits := make(chan string, 16) // a browser's navigations to the app: Host and path
	notes := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case visits <- r.Host + r.URL.Path + " " + r.Header.Get("Sec-Fetch-Dest"):
		default:
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><title>Notes</title><h1>The notes app on studio</h1><p>"+r.Host+"</p>")
	}))
	defer notes.Close()
	shoot := shooter(t)
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	// studio: share the program listening at notes' address.
	row := `form.suggest:has(input[value="` + notes.URL + `"])`
	if err := chromedp.Do(tctx, chromedp.Navigate(setupLink(t, studio)), chromedp.WaitVisible(chromedp.CSS("#share"))); err != nil {
		t.Fatalf("studio's setup page: %v", err)
	}
	if err := chromedp.Do(tctx, chromedp.WaitVisible(chromedp.CSS(row))); err != nil {
		text, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("studio's setup page offers no %s: %v\n%s", notes.URL, err, text)
	}
	guess, _ := chromedp.Run(tctx, chromedp.Value(chromedp.CSS(row+` input[name="name"]`)))
	if guess == "" || guess == "app" {
		t.Errorf("the program at %s is offered as %q, not by its name", notes.URL, guess)
	}
	shoot(tctx, "setup-share.png")
	if err := chromedp.Do(tctx, chromedp.SetValue(chromedp.CSS(row+` input[name="name"]`), "notes"),
		chromedp.Click(chromedp.CSS(row+` button`)), chromedp.WaitVisible(chromedp.CSS(".flash"))); err != nil {
		t.Fatalf("share from the page: %v", err)
	}
	if flash, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(".flash"))); !strings.Contains(flash, "notes ("+notes.URL+") is shared") {
		t.Errorf("after Share: %q", flash)
	}
	if text, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("#app-notes"))); !strings.Contains(text, "listening") {
		t.Errorf("the shared app's row: %q", text)
	}
	shoot(tctx, "setup-shared.png")

	// laptop: studio's notes, opened with a click.
	open := `#peer-studio-notes button.primary`
	if err := chromedp.Do(tctx, chromedp.Navigate(setupLink(t, laptop)), chromedp.WaitVisible(chromedp.CSS(open))); err != nil {
		t.Fatalf("laptop's setup page lists no notes on studio: %v", err)
	}
	shoot(tctx, "setup-other-computers.png")
	if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS(open)), chromedp.WaitVisible(chromedp.CSS(".flash"))); err != nil {
		t.Fatal(err)
	}
	flash, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(".flash")))
	var where string
	gatewaytest.WaitFor(t, 10*time.Second, "the desktop asked to open studio's notes", func() bool {
		b, _ := os.ReadFile(opened)
		where = strings.TrimSpace(string(b))
		return where != ""
	})
	if !strings.HasPrefix(where, "http://notes.studio.") || !strings.HasSuffix(where, ".localhost:"+forwardPort(t, laptop, "notes")+"/") {
		t.Errorf("the desktop was asked to open %q, not the forward's own name", where)
	}
	if !strings.Contains(flash, "notes on studio opens in your browser, at "+where) {
		t.Errorf("after Open: %q", flash)
	}
	shoot(tctx, "setup-opened-flash.png")
	// The browser, given the address by the desktop.
	if err := chromedp.Do(tctx, chromedp.Navigate(where), chromedp.WaitVisible(chromedp.CSS("h1"))); err != nil {
		t.Fatal(err)
	}
	if h1, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("h1"))); h1 != "The notes app on studio" {
		t.Errorf("at %s: %q, want the notes app's own page", where, h1)
	}
	if got := <-visits; !strings.HasPrefix(got, strings.TrimPrefix(where, "http://")+" document") {
		t.Errorf("the app saw %q", got)
	}
	shoot(tctx, "setup-opened.png")
	// Back on laptop's page: the forward is listed with its address.
	if err := chromedp.Do(tctx, chromedp.Navigate(setupLink(t, laptop)), chromedp.WaitVisible(chromedp.CSS(`#peer-studio-notes button[data-copy]`))); err != nil {
		t.Errorf("after Open, laptop's page offers no Copy URL for the forward: %v", err)
	}
	if text, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("#peer-studio-notes"))); !strings.Contains(text, "http://127.0.0.1:"+forwardPort(t, laptop, "notes")+"/") {
		t.Errorf("studio's notes on laptop's page: %q, want its forward's address", text)
	}
	shoot(tctx, "setup-other-computers-open.png")
}

// setupLink is a one-time link to p's setup page, asked of its local
// API as the menu asks it (no delta command after delta run).
func setupLink(t *testing.T, p *proc) string {
	t.Helper()
	var v struct{ URL string }
	json.Unmarshal(p.c.Must(t, "POST", localapi.LoginLinkPath, nil).Body, &v)
	return view.PageAt(v.URL, "setup", "computer")
}

// forwardPort is the port of laptop's forward to app on studio, as its
// local API lists it.
func forwardPort(t *testing.T, laptop *proc, app string) string {
	t.Helper()
	var v struct{ Forwards []localapi.Forward }
	json.Unmarshal(laptop.c.Must(t, "GET", localapi.ForwardsPath, nil).Body, &v)
	for _, f := range v.Forwards {
		if f.Peer == "studio" && f.App == app {
			_, port, _ := net.SplitHostPort(f.Listen)
			return port
		}
	}
	t.Fatalf("laptop has no forward to studio/%s: %+v", app, v.Forwards)
	return ""
}

// shooter draws the page a browser shows into DELTA_SCREENSHOTS, under
// the name given, when that folder is set (docs/screenshots): else it
// does nothing.
func shooter(t *testing.T) func(ctx context.Context, name string) {
	shots := os.Getenv("DELTA_SCREENSHOTS")
	return func(ctx context.Context, name string) {
		if shots == "" {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(shots, name), png, 0o644)
	}
}
