package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestSyncthingIdleInBrowser: Syncthing's web GUI (Debian's syncthing), on
// studio, opened in Chromium on laptop through a forward made by delta
// forward, then left alone for 90 s as a person leaves a tab. The page
// long-polls /rest/events (its head at once, its body when an event
// comes, or after its timeout); through Delta before issue 62 it showed
// "Connection Error" after about 35 s. No error may show while it idles;
// a screenshot of the page after the 90 s is written for the log.
func TestSyncthingIdleInBrowser(t *testing.T) {
	t.Parallel() // its 90 s of idling runs beside the other long tests
	need(t, "syncthing")
	ctx := browser(t)
	laptop, studio := twoProcs(t)
	studio.start(t)
	laptop.start(t)

	// Syncthing on studio's loopback, talking to nobody: no discovery,
	// relays, NAT, usage reports, crash reports or upgrades.
	home := t.TempDir()
	if out, err := exec.Command("syncthing", "generate", "--home="+home, "--no-default-folder", "--skip-port-probing").CombinedOutput(); err != nil {
		t.Fatalf("syncthing generate: %v\n%s", err, out)
	}
	gui, listen := freeAddr(t), freeAddr(t)
	cfgPath := filepath.Join(home, "config.xml")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b)
	for old, repl := range map[string]string{
		"<address>127.0.0.1:8384</address>":                   "<address>" + gui + "</address>",
		"<listenAddress>default</listenAddress>":              "<listenAddress>tcp://" + listen + "</listenAddress>",
		"<globalAnnounceEnabled>true</globalAnnounceEnabled>": "<globalAnnounceEnabled>false</globalAnnounceEnabled>",
		"<localAnnounceEnabled>true</localAnnounceEnabled>":   "<localAnnounceEnabled>false</localAnnounceEnabled>",
		"<relaysEnabled>true</relaysEnabled>":                 "<relaysEnabled>false</relaysEnabled>",
		"<startBrowser>true</startBrowser>":                   "<startBrowser>false</startBrowser>",
		"<natEnabled>true</natEnabled>":                       "<natEnabled>false</natEnabled>",
		"<urAccepted>0</urAccepted>":                          "<urAccepted>-1</urAccepted>",
		"<autoUpgradeIntervalH>12</autoUpgradeIntervalH>":     "<autoUpgradeIntervalH>0</autoUpgradeIntervalH>",
		"<crashReportingEnabled>true</crashReportingEnabled>": "<crashReportingEnabled>false</crashReportingEnabled>",
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("syncthing's generated config has no %s", old)
		}
		cfg = strings.ReplaceAll(cfg, old, repl)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// One process: even with --no-restart, syncthing serve starts a
	// monitor that runs Syncthing itself as a child in a process group of
	// its own, which outlived the monitor's SIGKILL and every test run.
	// STMONITORED is how the monitor tells that child it is the one.
	serveEnv(t, gui, []string{"STNOUPGRADE=1", "STMONITORED=1"}, "syncthing", "serve", "--no-browser", "--no-restart", "--home="+home)
	studio.register(t, "syncthing", "http://"+gui)
	u := forwardURL(t, laptop, "syncthing")

	tctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.Search(`//*[contains(text(), "This Device")]`))); err != nil {
		t.Fatalf("Syncthing's page through the forward: %v", err)
	}
	// Idle, as a person leaves a tab; looked at every 5 s (a pace), so
	// that an error shown at any time is seen.
	const idle = 90 * time.Second
	look := time.NewTicker(5 * time.Second)
	defer look.Stop()
	var text string
	began := time.Now()
	for end := began.Add(idle); time.Now().Before(end); <-look.C {
		if text, err = chromedp.Run(tctx, chromedp.Evaluate[string](`document.body.innerText`)); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text, "Connection Error") || strings.Contains(text, "Syncthing seems to be experiencing a problem") {
			break
		}
	}
	png, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(os.TempDir(), "delta-test-artifacts", "syncthing-idle-90s.png")
	os.MkdirAll(filepath.Dir(shot), 0o755)
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("SYNCTHING the page through the forward after %v idle: screenshot %s", time.Since(began).Round(time.Second), shot)
	if strings.Contains(text, "Connection Error") || strings.Contains(text, "Syncthing seems to be experiencing a problem") {
		t.Fatalf("Syncthing's page showed an error while it idled through the forward:\n%s", text)
	}
	if !strings.Contains(text, "This Device") {
		t.Errorf("after %v idle the page no longer shows Syncthing's device list:\n%s", idle, text)
	}
	laptop.noDrops(t)
}
