package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/godbus/dbus/v5"

	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// TestScreenshots draws the pictures in docs/screenshots: the tray's menu
// opened on a write that needs a person in xfce4-panel, a notification
// from xfce4-notifyd, and the status pages in Chromium (the caller's, shut
// and with a card open, and the owner's at the call it received). It runs only from
// docs/screenshots.sh, which starts Xvfb, a session bus, the panel and the
// notification daemon and sets DELTA_SCREENSHOTS to the output folder.
func TestScreenshots(t *testing.T) {
	out := os.Getenv("DELTA_SCREENSHOTS")
	if out == "" {
		t.Skip("DELTA_SCREENSHOTS is not set: run docs/screenshots.sh to draw the screenshots")
	}
	laptop, studio := twoProcs(t)
	// laptop knows studio by a thunderbolt cable that is unplugged (a dead
	// address) and by the lan.
	cfg := map[string]any{"name": "laptop", "node_id": "node-laptop", "peer_listen": laptop.peerAddr,
		"network_key": "00112233445566778899aabbccddeeff",
		"peers": []any{map[string]any{"name": "studio", "roads": map[string]string{
			"thunderbolt": gatewaytest.DeadAddr(t), "lan": studio.peerAddr}}}}
	b, _ := json.Marshal(cfg)
	os.WriteFile(filepath.Join(laptop.dir, "config.json"), b, 0o600)
	laptop.tray = true
	studio.start(t)
	laptop.start(t)

	// A notes app on studio whose appends are slow today, and whose pins
	// break off after reading the request (nobody can tell whether they
	// happened).
	release := make(chan struct{})
	notes := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/pin") {
			io.Copy(io.Discard, r.Body)
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		if r.Method == "POST" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		fmt.Fprintln(w, `{"ok": true}`)
	}))
	defer notes.Close()
	defer close(release)
	studio.register(t, "notes", notes.URL)
	for range 24 {
		laptop.c.Must(t, "GET", "/v1/peers/studio/notes/notes/42", nil, "Cache-Control", "no-cache")
	}
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/notes/42/append", []byte(`{"line": "buy milk"}`),
		"X-Delta-Request-Id", "7f9c2ba4-e88f-4e2b-9a1c-3d5b0c1e8a21", "X-Delta-App", "editor", "X-Delta-Timeout", "1")
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/notes/42/pin", []byte(`{"pinned": true}`),
		"X-Delta-Request-Id", "3b1e0f57-2c4d-4a8e-b6f1-9d0c7e5a2b44", "X-Delta-App", "editor", "Content-Type", "application/json")
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	if c := laptop.c.GetCall(t, "3b1e0f57-2c4d-4a8e-b6f1-9d0c7e5a2b44", 10); c.State != "needs_person" {
		t.Fatalf("the pin is %s, want needs_person", c.State)
	}

	// The notification pops up at the top right.
	time.Sleep(1500 * time.Millisecond) // the notifier's coalescing window and the popup's fade-in: a picture, not a test
	root := grab(t)
	save(t, filepath.Join(out, "notification.png"), crop(root, image.Rect(root.Bounds().Dx()-520, 0, root.Bounds().Dx(), 200)))

	// Put the notification away before the menu is drawn.
	if bus, err := dbus.SessionBus(); err == nil {
		for id := uint32(1); id <= 5; id++ {
			bus.Object("org.freedesktop.Notifications", "/org/freedesktop/Notifications").Call("org.freedesktop.Notifications.CloseNotification", 0, id)
		}
	}
	time.Sleep(500 * time.Millisecond)
	root = grab(t)

	// Click the red icon in the panel and walk the menu with the keyboard:
	// studio and its roads, then Needs you (1) and the call.
	x, y := findColour(t, root, 0xd7, 0x2c, 0x2c)
	xdotool(t, "mousemove", fmt.Sprint(x), fmt.Sprint(y), "click", "1")
	time.Sleep(500 * time.Millisecond)
	xdotool(t, "key", "Down")
	time.Sleep(300 * time.Millisecond)
	xdotool(t, "key", "Right")
	time.Sleep(500 * time.Millisecond)
	root = grab(t)
	save(t, filepath.Join(out, "menu-peer.png"), crop(root, image.Rect(root.Bounds().Dx()-1000, 0, root.Bounds().Dx(), 300)))
	xdotool(t, "key", "Left", "Down")
	time.Sleep(300 * time.Millisecond)
	xdotool(t, "key", "Right")
	time.Sleep(500 * time.Millisecond)
	root = grab(t)
	save(t, filepath.Join(out, "menu.png"), crop(root, image.Rect(root.Bounds().Dx()-1180, 0, root.Bounds().Dx(), 360)))
	xdotool(t, "key", "Escape", "Escape", "Escape")

	// The status pages: laptop's, as it opens, and with the write that
	// needs a person open; studio's, at the call it received and must
	// check.
	ctx := browser(t)
	page := func(dir, name string, flags ...string) {
		var link bytes.Buffer
		open := exec.Command(bin, append([]string{"open", "--print", "--state-dir", dir}, flags...)...)
		open.Stdout = &link
		if err := open.Run(); err != nil {
			t.Fatal(err)
		}
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(tctx, chromedp.Navigate(strings.TrimSpace(link.String())), chromedp.WaitVisible(chromedp.CSS(".card"))); err != nil {
			t.Fatal(err)
		}
		shot, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(out, name), shot, 0o644)
	}
	page(laptop.dir, "status-page.png")
	page(laptop.dir, "status-page-open.png", "--call", "3b1e0f57-2c4d-4a8e-b6f1-9d0c7e5a2b44")
	page(studio.dir, "status-page-received.png", "--receipt", "3b1e0f57-2c4d-4a8e-b6f1-9d0c7e5a2b44")
}

func xdotool(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("xdotool", args...).CombinedOutput(); err != nil {
		t.Fatalf("xdotool %v: %v %s", args, err, out)
	}
}

// grab takes a picture of the whole X screen with ImageMagick's import.
func grab(t *testing.T) image.Image {
	t.Helper()
	f := filepath.Join(t.TempDir(), "root.png")
	if out, err := exec.Command("import", "-window", "root", f).CombinedOutput(); err != nil {
		t.Fatalf("import: %v %s", err, out)
	}
	r, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	img, err := png.Decode(r)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// findColour returns the centre of the pixels of one colour: the tray icon.
func findColour(t *testing.T, img image.Image, r, g, b uint8) (int, int) {
	t.Helper()
	var sx, sy, n int
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
		for x := bnd.Min.X; x < bnd.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, r) && near(pg, g) && near(pb, b) {
				sx, sy, n = sx+x, sy+y, n+1
			}
		}
	}
	if n == 0 {
		t.Fatal("the tray icon is not on the screen")
	}
	return sx / n, sy / n
}

func near(v uint32, c uint8) bool { d := int(v>>8) - int(c); return d > -12 && d < 12 }

func crop(img image.Image, r image.Rectangle) image.Image {
	r = r.Intersect(img.Bounds())
	return img.(interface {
		SubImage(image.Rectangle) image.Image
	}).SubImage(r)
}

func save(t *testing.T, path string, img image.Image) {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
