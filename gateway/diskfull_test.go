package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/gatewaytest/smalldisk"
	"github.com/delta-roads/delta/gateway/net/ticket"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// onDisk moves node n's state folder onto disk before it starts.
func onDisk(t *testing.T, n *node, disk *smalldisk.Disk) {
	t.Helper()
	dir := filepath.Join(disk.Dir, n.name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(n.dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	n.dir, n.cfg.StateDir = dir, dir
}

// behind reads /v1/status's journal.behind.
func behind(t *testing.T, n *node) *localapi.Behind {
	t.Helper()
	var s struct {
		Journal struct {
			Behind *localapi.Behind `json:"behind"`
		} `json:"journal"`
	}
	if err := json.Unmarshal(n.c.Must(t, "GET", "/v1/status", nil).Body, &s); err != nil {
		t.Fatal(err)
	}
	return s.Journal.Behind
}

// TestDiskFullCaller: the caller's disk fills while the owner's app works
// on a call. The app is told the answer, and so is every repeat, each with
// X-Delta-Journal: behind; /v1/status and the menu say the disk is full; a
// new call is not sent (it cannot be recorded first); once space frees the
// outcome is written and the record says answered.
func TestDiskFullCaller(t *testing.T) {
	disk := smalldisk.Mount(t, 8<<20)
	laptop, studio := pair(t, func(n *node) {
		if n.name == "laptop" {
			onDisk(t, n, disk)
		}
	})
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	done := make(chan *gatewaytest.Response, 1)
	go func() {
		r, err := laptop.c.Do("POST", "/v1/peers/studio/notes/hold/full", []byte("entry"), "X-Delta-Request-Id", "full-1")
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	app.WaitArrived(t, "full-1")
	disk.Fill()
	app.Release("/hold/full")
	r := <-done
	if r == nil || r.Outcome() != "answered" || string(r.Body) != "entry" || !strings.HasPrefix(r.Header.Get(localapi.HeaderJournal), "behind") {
		t.Fatalf("the call answered on a full disk: %+v, want answered with X-Delta-Journal: behind", r)
	}
	again := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/hold/full", []byte("entry"), "X-Delta-Request-Id", "full-1")
	if again.Outcome() != "answered" || string(again.Body) != "entry" || again.Header.Get("X-Delta-Replayed") != "true" || !strings.HasPrefix(again.Header.Get(localapi.HeaderJournal), "behind") {
		t.Fatalf("a repeat on a full disk: %d %q %q (journal %q), want the same answer, replayed, behind", again.Status, again.Outcome(), again.Body, again.Header.Get(localapi.HeaderJournal))
	}
	if c := laptop.c.GetCall(t, "full-1", 0); c.State != "answered" {
		t.Errorf("the call's record on a full disk: %s, want answered (held)", c.State)
	}
	if b := behind(t, laptop); b == nil || b.Held != 1 || !b.DiskFull {
		t.Fatalf("/v1/status on a full disk: behind %+v, want 1 held and the disk full", b)
	}
	if s, err := laptop.g.Snapshot(t.Context()); err != nil || !s.JournalDiskFull || !strings.Contains(s.JournalBehind, "disk is full") {
		t.Errorf("the menu's snapshot on a full disk: %q (full %v) %v", s.JournalBehind, s.JournalDiskFull, err)
	}
	before := app.Requests()
	if r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/new", []byte("x"), "X-Delta-Request-Id", "full-2"); r.Outcome() != "unavailable" || !strings.Contains(r.Err.Detail, "nothing was sent") {
		t.Errorf("a new call on a full disk: %d %q %s, want unavailable, nothing sent", r.Status, r.Outcome(), r.Err.Detail)
	}
	if app.Requests() != before {
		t.Errorf("a call that could not be recorded reached the owner app")
	}

	disk.Free()
	gatewaytest.WaitFor(t, 30*time.Second, "the held outcome written once space freed", func() bool { return behind(t, laptop) == nil })
	laptop.g.Close()
	laptop.start(t) // the record survives a restart: it was written
	if c := laptop.c.GetCall(t, "full-1", 0); c.State != "answered" || c.Answer == nil {
		t.Errorf("after space freed and a restart: %s, want answered with the answer", c.State)
	}
}

// TestDiskFullOwner: the owner's disk fills while its app works on a call.
// The app's answer is held in memory and sent with X-Delta-Journal:
// behind, a repeat at the owner's door is answered from it, a new call is
// refused before the app sees it (it cannot be recorded), and once space
// frees the receipt is written.
func TestDiskFullOwner(t *testing.T) {
	disk := smalldisk.Mount(t, 8<<20)
	laptop, studio := pair(t, func(n *node) {
		if n.name == "studio" {
			onDisk(t, n, disk)
		}
	})
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	tk := netKey.Mint(ticket.Claims{Node: "node-laptop", Name: "laptop", Expires: time.Now().Add(time.Minute)})
	send := func(path, id string) *http.Response {
		req, _ := http.NewRequest("POST", "http://"+laptop.otherAddr+"/delta/v1/apps/notes"+path, strings.NewReader("entry"))
		req.Header.Set("Authorization", proto.TicketAuth(tk))
		req.Header.Set(localapi.HeaderRequestID, id)
		req.Header.Set(proto.HeaderDigest, proto.Digest("POST", "notes", path, []byte("entry")))
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			t.Error(err)
			return nil
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	done := make(chan *http.Response, 1)
	go func() { done <- send("/hold/owner-full", "owner-full-1") }()
	app.WaitArrived(t, "owner-full-1")
	disk.Fill()
	app.Release("/hold/owner-full")
	resp := <-done
	if resp == nil || resp.StatusCode != 201 || !strings.HasPrefix(resp.Header.Get(localapi.HeaderJournal), "behind") {
		t.Fatalf("the owner's answer on a full disk: %+v, want 201 with X-Delta-Journal: behind", resp)
	}
	again := send("/hold/owner-full", "owner-full-1")
	if again == nil || again.StatusCode != 201 || again.Header.Get(localapi.HeaderReplayed) != "true" || !strings.HasPrefix(again.Header.Get(localapi.HeaderJournal), "behind") {
		t.Fatalf("a repeat at the owner's door on a full disk: %+v, want the held answer replayed", again)
	}
	before := app.Requests()
	if r := send("/answer/new", "owner-full-2"); r == nil || r.StatusCode != 503 {
		t.Errorf("a new call at an owner with a full disk: %+v, want 503 (not recorded, not forwarded)", r)
	}
	if app.Requests() != before {
		t.Errorf("a call the owner could not record reached its app")
	}
	if b := behind(t, studio); b == nil || !b.DiskFull {
		t.Fatalf("the owner's /v1/status on a full disk: %+v", b)
	}
	disk.Free()
	gatewaytest.WaitFor(t, 30*time.Second, "the owner's held receipt written", func() bool { return behind(t, studio) == nil })
	r, err := studio.g.Journal().Receipts().Get(t.Context(), "node-laptop", "owner-full-1")
	if err != nil || r.State != "answered" || r.Behind || r.Answer == nil {
		t.Fatalf("the receipt once space freed: %+v %v", r, err)
	}
}

// TestNoRoomForTheBody: an owner refuses a call's body it has no room
// for, 507, nothing carried out: at once when its length is announced,
// and while it arrives when it is not, before its journal could not
// write. The app sees neither, and nothing is left in the spool.
func TestNoRoomForTheBody(t *testing.T) {
	disk := smalldisk.Mount(t, 112<<20)
	laptop, studio := pair(t, func(n *node) {
		if n.name == "studio" {
			onDisk(t, n, disk)
		}
	})
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)

	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/big", make([]byte, 64<<20), "X-Delta-Request-Id", "room-1")
	if r.Status != 503 || r.Outcome() != "unavailable" || !strings.Contains(r.Err.Detail, "no room") || !strings.Contains(r.Err.Detail, "nothing was carried out") {
		t.Fatalf("a body too big for the owner's disk: %d %q %s", r.Status, r.Outcome(), r.Err.Detail)
	}

	// No length: it is refused as it arrives.
	req, _ := http.NewRequest("POST", laptop.c.URL+"/v1/peers/studio/notes/answer/big2", io.LimitReader(zeroes{}, 200<<20))
	req.Header.Set("Authorization", "Bearer "+laptop.c.Token)
	req.Header.Set("X-Delta-Request-Id", "room-2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "no room") || !strings.Contains(string(b), `"carried_out":false`) {
		t.Fatalf("a body of unknown length too big for the disk: %d %s", resp.StatusCode, b)
	}
	for _, id := range []string{"room-1", "room-2"} {
		if c := laptop.c.GetCall(t, id, 0); c.State != "unavailable" || app.RequestsFor(id) != 0 {
			t.Errorf("%s: recorded %s; the app saw it %d times", id, c.State, app.RequestsFor(id))
		}
	}
	if left, _ := os.ReadDir(filepath.Join(studio.dir, "spool")); len(left) != 0 {
		t.Errorf("the spool keeps %d files", len(left))
	}
	// Room enough: a call as big as fits goes through.
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/fits", make([]byte, 8<<20), "X-Delta-Request-Id", "room-3")
	if r.Status != 201 || len(r.Body) != 8<<20 {
		t.Errorf("a body that fits: %d, %d bytes back", r.Status, len(r.Body))
	}
}

type zeroes struct{}

func (zeroes) Read(p []byte) (int, error) { clear(p); return len(p), nil }
