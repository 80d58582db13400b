package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// relayInto listens on addr (a loopback HOST:PORT of ns) in this test's
// own namespace too, and carries each connection into ns: Chromium, which
// runs here, reaches a Delta's page or forward inside the lab at the same
// address (and so the same Origin) as a browser on that computer would.
func relayInto(t *testing.T, ns, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("relay %s into %s: %v", addr, ns, err)
	}
	dial := nsDialer(ns)
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close() // a browser's kept connection ends with the test
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer func() {
					c.Close()
					mu.Lock()
					delete(open, c)
					mu.Unlock()
				}()
				s, err := dial(context.Background(), "tcp", addr)
				if err != nil {
					return
				}
				defer s.Close()
				done := make(chan struct{})
				go func() { io.Copy(s, c); s.(*net.TCPConn).CloseWrite(); close(done) }()
				io.Copy(c, s)
				c.Close()
				<-done
			})
		}
	})
}

// pairedState is what p's pairing says of peer, "" when it is not paired.
func pairedState(t *testing.T, p *proc, peer string) string {
	var v localapi.Pairing
	json.Unmarshal(p.c.Must(t, "GET", localapi.PairingPath, nil).Body, &v)
	for _, pp := range v.Peers {
		if pp.Name == peer {
			return pp.State
		}
	}
	return ""
}

// TestLabPairInBrowser (issue 66): the whole of setting up two computers
// from their pages, in Chromium. laptop and studio are Deltas started with
// --static from empty state folders, inside the static lab's namespaces
// (each its own network stack, joined by a cable and a switch); no delta
// command runs after delta run, and the only local API requests the test
// makes itself are the login links (which the menu asks for) and checks.
//
//  0. Each is named from its page (Rename).
//  1. studio hears laptop nearby (local discovery, broadcast in the lab)
//     and its person pairs it; laptop's page shows the request, and its
//     person accepts: both are paired.
//  2. Both unpair, and pair again by pasting studio's ID and address on
//     laptop's page; studio's person accepts.
//  3. studio shares an app; laptop's page opens it, and the app's own page
//     loads in the browser through the forward.
func TestLabPairInBrowser(t *testing.T) {
	ctx := browser(t)
	l := newStaticLab(t)
	root := t.TempDir()
	desktop := t.TempDir()
	opened := filepath.Join(desktop, "opened")
	if err := os.WriteFile(filepath.Join(desktop, "xdg-open"), []byte("#!/bin/sh\necho \"$1\" >> "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	laptop := &proc{name: "laptop", dir: filepath.Join(root, "laptop")}
	studio := &proc{name: "studio", dir: filepath.Join(root, "studio")}
	for host, p := range map[string]*proc{"a": laptop, "b": studio} {
		p.args = []string{"--static", "--peer-listen", "0.0.0.0:7421"}
		p.wrap = []string{"ip", "netns", "exec", l.ns(host)}
		p.dial = nsDialer(l.ns(host))
		p.env = []string{"DELTA_DISCOVERY=on", "PATH=" + desktop + ":" + os.Getenv("PATH")} // announced inside the lab only
	}
	studio.start(t)
	laptop.start(t) // its first announcement reaches studio, listening already
	for host, p := range map[string]*proc{"a": laptop, "b": studio} {
		relayInto(t, l.ns(host), strings.TrimPrefix(p.c.URL, "http://"))
		if b, _ := os.ReadFile(filepath.Join(p.dir, "config.json")); !strings.Contains(string(b), `"static"`) {
			t.Fatalf("%s's config after delta run --static: %s", p.name, b)
		}
	}
	shoot := shooter(t)
	began := time.Now()
	tctx, cancel := context.WithTimeout(ctx, 150*time.Second)
	defer cancel()
	page := func(p *proc, what string) {
		t.Helper()
		if err := chromedp.Do(tctx, chromedp.Navigate(setupLink(t, p)), chromedp.WaitVisible(chromedp.CSS("#pair"))); err != nil {
			t.Fatalf("%s's setup page (%s): %v", p.name, what, err)
		}
	}
	flash := func(want string) {
		t.Helper()
		if err := chromedp.Do(tctx, chromedp.WaitVisible(chromedp.CSS(".flash"))); err != nil {
			t.Fatal(err)
		}
		if got, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(".flash"))); !strings.Contains(got, want) {
			t.Fatalf("the page says %q, want %q", got, want)
		}
	}
	// waitSee reloads p's setup page until sel shows (discovery's
	// announcements and a request arrive while the page is open).
	waitSee := func(p *proc, sel, what string) {
		t.Helper()
		gatewaytest.WaitFor(t, 70*time.Second, what, func() bool {
			page(p, what)
			n, _ := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
			return n > 0
		})
	}
	answerRequest := func(p *proc, name, shot string) {
		t.Helper()
		waitSee(p, "tr.request", p.name+"'s page to show the request to pair")
		if text, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("tr.request"))); !strings.Contains(text, name+" asks to pair") {
			t.Errorf("the request on %s's page: %q, want %s's (renamed) name", p.name, text, name)
		}
		shoot(tctx, shot)
		if err := chromedp.Do(tctx, chromedp.SetValue(chromedp.CSS(`tr.request input[name="name"]`), name),
			chromedp.Click(chromedp.CSS(`tr.request button.primary`))); err != nil {
			t.Fatal(err)
		}
		flash(name + " and this computer are paired.")
	}

	// 0. Each computer named from its page (both are the host's name).
	for _, p := range []*proc{laptop, studio} {
		page(p, "to rename")
		if err := chromedp.Do(tctx, chromedp.SetValue(chromedp.CSS(`#rename-form input[name="name"]`), p.name),
			chromedp.Click(chromedp.CSS(`#rename-form button`))); err != nil {
			t.Fatal(err)
		}
		flash("This computer is " + p.name + " now.")
	}

	// 1. studio pairs laptop, heard nearby; laptop's person accepts.
	var st localapi.Status
	json.Unmarshal(laptop.c.Must(t, "GET", localapi.StatusPath, nil).Body, &st)
	laptopID := st.Self.ID
	row := `tr.nearby:has(code)`
	waitSee(studio, row, "studio's page to hear laptop nearby")
	if text, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(row))); !strings.Contains(text, laptopID) {
		t.Fatalf("studio's nearby row does not show laptop's ID %s: %q", laptopID, text)
	}
	t.Logf("%s: studio hears laptop nearby", time.Since(began))
	shoot(tctx, "setup-pair-nearby.png")
	if err := chromedp.Do(tctx, chromedp.SetValue(chromedp.CSS(row+` input[name="name"]`), "laptop"), chromedp.Click(chromedp.CSS(row+` button`))); err != nil {
		t.Fatal(err)
	}
	flash("laptop is paired here, and asked")
	if s := pairedState(t, laptop, "studio"); s != "" {
		t.Fatalf("laptop paired studio before a person there said yes: %q", s)
	}
	answerRequest(laptop, "studio", "setup-pair-request.png")
	gatewaytest.WaitFor(t, 30*time.Second, "both to say paired", func() bool {
		return pairedState(t, laptop, "studio") == localapi.PairPaired && pairedState(t, studio, "laptop") == localapi.PairPaired
	})

	t.Logf("%s: paired from nearby", time.Since(began))

	// 2. Unpaired on both pages; paired again by pasting studio's ID.
	for _, p := range [][2]*proc{{laptop, studio}, {studio, laptop}} {
		page(p[0], "to unpair")
		if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS(`#paired-`+p[1].name+` form[action$="/unpair"] button`))); err != nil {
			t.Fatal(err)
		}
		flash(p[1].name + " is unpaired")
	}
	page(studio, "studio's ID")
	studioID, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("#self-id")))
	page(laptop, "pair by ID")
	if err := chromedp.Do(tctx, chromedp.SetValue(chromedp.CSS(`#pair-form input[name="name"]`), "studio"),
		chromedp.SetValue(chromedp.CSS(`#pair-form input[name="id"]`), strings.TrimSpace(studioID)),
		chromedp.SetValue(chromedp.CSS(`#pair-form input[name="address"]`), "10.88.1.2:7421")); err != nil {
		t.Fatal(err)
	}
	shoot(tctx, "setup-pair-by-id.png")
	if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS(`#pair-form button`))); err != nil {
		t.Fatal(err)
	}
	flash("studio is paired here, and asked")
	answerRequest(studio, "laptop", "setup-pair-request-studio.png")
	gatewaytest.WaitFor(t, 30*time.Second, "both to say paired again", func() bool {
		return pairedState(t, laptop, "studio") == localapi.PairPaired && pairedState(t, studio, "laptop") == localapi.PairPaired
	})
	t.Logf("%s: paired by ID", time.Since(began))
	page(laptop, "paired")
	shoot(tctx, "setup-paired.png")

	// 3. studio shares its app; laptop opens it in the browser.
	ln := listenIn(t, l.ns("b"))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><title>Notes</title><h1>The notes app on studio</h1>")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	page(studio, "to share")
	if err := chromedp.Do(tctx, chromedp.SetValue(chromedp.CSS(`#share-form input[name="name"]`), "notes"),
		chromedp.SetValue(chromedp.CSS(`#share-form input[name="url"]`), "http://"+ln.Addr().String()),
		chromedp.Click(chromedp.CSS(`#share-form button`))); err != nil {
		t.Fatal(err)
	}
	flash("notes (http://" + ln.Addr().String() + ") is shared")
	open := `#peer-studio-notes button.primary`
	waitSee(laptop, open, "laptop's page to list studio's notes")
	if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS(open))); err != nil {
		t.Fatal(err)
	}
	flash("notes on studio opens in your browser")
	var where string
	gatewaytest.WaitFor(t, 10*time.Second, "the desktop asked to open studio's notes", func() bool {
		b, _ := os.ReadFile(opened)
		where = strings.TrimSpace(string(b))
		return where != ""
	})
	fwd := "127.0.0.1:" + forwardPort(t, laptop, "notes")
	relayInto(t, l.ns("a"), fwd)
	if err := chromedp.Do(tctx, chromedp.Navigate(where), chromedp.WaitVisible(chromedp.CSS("h1"))); err != nil {
		t.Fatalf("the browser at %s: %v", where, err)
	}
	h1, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("h1")))
	if h1 != "The notes app on studio" {
		t.Fatalf("the browser at %s shows %q", where, h1)
	}
	shoot(tctx, "setup-pair-opened.png")
	t.Logf("%s: opened in the browser", time.Since(began))
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
