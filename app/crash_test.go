package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// bin is the delta binary, built once for these tests.
var bin string

func TestMain(m *testing.M) {
	// No Delta a test starts announces itself on the machine's networks
	// (static mode's local discovery): children inherit this. Discovery's
	// own tests (package static) turn it on, on loopback or in a lab.
	os.Setenv("DELTA_DISCOVERY", "off")
	dir, err := os.MkdirTemp("", "delta-bin")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "delta")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		panic("building delta: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is one Delta running as its own process.
type proc struct {
	name     string
	dir      string
	peerAddr string
	cmd      *exec.Cmd
	log      *gatewaytest.LogBuffer
	c        *gatewaytest.Client
	args     []string // extra flags
	env      []string // extra environment
	tray     bool     // run with the tray (no --headless)
	wrap     []string // runs the binary under this command (ip netns exec NS)
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	// id is its ID (twoProcs pairs by ID): its node as its peers know it.
	id string
	// defaultListen leaves --listen out: the local API's default port.
	defaultListen bool
}

// freeAddr is a free address on 127.0.0.1 for a Delta to listen on.
//
// The port is below the kernel's ephemeral range (Linux 32768-60999, macOS
// 49152-65535): a port taken from that range and let go could be handed
// to the next listener on port 0 (a Delta's local API) before the process
// it was meant for binds it, which failed TestForget once ("bind: address
// already in use"). Below it, only another test choosing the same port
// at random could take it.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 200 {
		port := 20000 + mathrand.IntN(12000)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken: another one
		}
		ln.Close()
		return ln.Addr().String()
	}
	t.Fatal("no free port between 20000 and 32000 on 127.0.0.1 in 200 tries")
	return ""
}

// twoProcs configures "laptop" and "studio", each knowing the other.
func twoProcs(t *testing.T) (laptop, studio *proc) {
	t.Helper()
	root := t.TempDir()
	laptop = &proc{name: "laptop", dir: filepath.Join(root, "laptop"), peerAddr: freeAddr(t)}
	studio = &proc{name: "studio", dir: filepath.Join(root, "studio"), peerAddr: freeAddr(t)}
	// Paired by ID, as delta init and delta pair pair them: each folder's
	// identity made first, each config naming the other's ID; every road
	// is TLS 1.3 pinned to the IDs.
	ids := makeIDs(t, laptop, studio)
	for _, p := range [][2]*proc{{laptop, studio}, {studio, laptop}} {
		self, other := p[0], p[1]
		cfg := map[string]any{"name": self.name, "peer_listen": self.peerAddr,
			"peers": []any{map[string]any{"name": other.name, "id": ids[other], "roads": map[string]string{"lan": other.peerAddr}}}}
		b, _ := json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(self.dir, "config.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return laptop, studio
}

// unpairedProcs are laptop and studio in static mode with no peer yet,
// each waiting to be paired, their discovery off.
func unpairedProcs(t *testing.T) (laptop, studio *proc) {
	t.Helper()
	root := t.TempDir()
	laptop = &proc{name: "laptop", dir: filepath.Join(root, "laptop"), peerAddr: freeAddr(t)}
	studio = &proc{name: "studio", dir: filepath.Join(root, "studio"), peerAddr: freeAddr(t)}
	for _, p := range []*proc{laptop, studio} {
		if err := os.MkdirAll(p.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]any{"mode": "static", "name": p.name, "peer_listen": p.peerAddr, "discovery": "off"})
		if err := os.WriteFile(filepath.Join(p.dir, "config.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return laptop, studio
}

// start runs the process and waits until its local API is up.
func (p *proc) start(t *testing.T) {
	t.Helper()
	p.log = &gatewaytest.LogBuffer{}
	argv := append(append([]string{}, p.wrap...), bin, "--state-dir", p.dir)
	if !p.defaultListen {
		argv = append(argv, "--listen", "127.0.0.1:0")
	}
	if !p.tray {
		argv = append(argv, "--headless")
	}
	argv = append(argv, p.args...)
	p.cmd = exec.Command(argv[0], argv[1:]...)
	// The test's own environment, less what a child must not inherit: the
	// person who runs the tests may have set TS_NO_LOGS_NO_SUPPORT, which
	// would hide what TestStaysOnMachine's opted-in Delta must show. Each
	// child gets it only as set here.
	p.cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TS_NO_LOGS_NO_SUPPORT=") }), p.env...)
	if os.Geteuid() != 0 {
		// Without root there is no offline namespace guard (make unit):
		// make sure no Delta a test starts uploads tsnet's log.
		p.cmd.Env = append(p.cmd.Env, "TS_NO_LOGS_NO_SUPPORT=true")
	}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd, logBuf := p.cmd, p.log
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("%s's log (pid %d):\n%s", p.name, cmd.Process.Pid, logBuf)
		}
	})
	var lj struct {
		URL string `json:"url"`
		PID int    `json:"pid"`
	}
	gatewaytest.WaitFor(t, 30*time.Second, p.name+"'s local.json", func() bool {
		b, err := os.ReadFile(filepath.Join(p.dir, "local.json"))
		return err == nil && json.Unmarshal(b, &lj) == nil && lj.PID == cmd.Process.Pid
	})
	tok, err := os.ReadFile(filepath.Join(p.dir, "local-token"))
	if err != nil {
		t.Fatal(err)
	}
	p.c = &gatewaytest.Client{URL: lj.URL, Token: strings.TrimSpace(string(tok)), Dial: p.dial}
}

// startPair starts studio and then laptop, each knowing the other, with an
// owner app registered as "notes" on studio.
func startPair(t *testing.T) (laptop, studio *proc, app *gatewaytest.OwnerApp) {
	t.Helper()
	laptop, studio = twoProcs(t)
	studio.start(t)
	laptop.start(t)
	app = gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	return laptop, studio, app
}

// callAsync sends a call from p's local API in the background; the answer,
// or Status -1 with the error as Body, arrives on the channel.
func (p *proc) callAsync(path, id, timeout string) <-chan *gatewaytest.Response {
	got := make(chan *gatewaytest.Response, 1)
	go func() {
		r, err := p.c.Do("POST", path, []byte("write me"), "X-Delta-Request-Id", id, "X-Delta-Timeout", timeout)
		if err != nil {
			r = &gatewaytest.Response{Status: -1, Body: []byte(err.Error())}
		}
		got <- r
	}()
	return got
}

// kill ends the process with SIGKILL, as a crash would.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
}

func (p *proc) register(t *testing.T, app, url string) {
	t.Helper()
	if r := p.c.Must(t, "PUT", "/v1/apps/"+app, []byte(`{"url":"`+url+`"}`)); r.Status != 200 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
}

// TestCallerCrash: the caller's Delta is killed while a call is in flight;
// after a restart the call is unknown (it may have left), never resent, and
// settles to what the owner did.
func TestCallerCrash(t *testing.T) {
	laptop, _, app := startPair(t)

	const id = "crash-caller-1"
	gone := make(chan error, 1)
	go func() {
		_, err := laptop.c.Do("POST", "/v1/peers/studio/notes/hold/c1", []byte("write me"), "X-Delta-Request-Id", id, "X-Delta-Timeout", "60")
		gone <- err
	}()
	<-app.Arrived()
	laptop.kill(t)
	if err := <-gone; err == nil {
		t.Fatalf("the app got an answer from a killed Delta")
	}

	laptop.start(t)
	call := laptop.c.GetCall(t, id, 0)
	if call.State != "unknown" || (call.OwnerState != "" && call.OwnerState != "running") {
		t.Fatalf("after the restart the call is %s (owner: %q, %s), want unknown", call.State, call.OwnerState, call.Detail)
	}
	// The attempt was recorded before its first byte, so the crash did not
	// lose it.
	if len(call.Attempts) != 1 || call.Attempts[0].Road != "lan" || !call.Attempts[0].FirstByte ||
		!strings.Contains(call.Attempts[0].Error, "Delta stopped during this attempt") {
		t.Errorf("after the restart the attempts are %+v; want one on lan, first byte written, stopped during it", call.Attempts)
	}
	app.Release("/hold/c1")
	call = laptop.c.GetCall(t, id, 60)
	if call.State != "carried_out" || call.Answer == nil || call.Answer.Status != 201 {
		t.Fatalf("the call settled %s (%s), want carried_out with the answer", call.State, call.Detail)
	}
	if app.Effects("/hold/c1") != 1 || app.RequestsFor(id) != 1 {
		t.Errorf("owner applied %d effects over %d requests, want 1 and 1", app.Effects("/hold/c1"), app.RequestsFor(id))
	}
	// A repeat gets the recorded answer and does not reach the owner.
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/hold/c1", []byte("write me"), "X-Delta-Request-Id", id)
	if r.Outcome() != "answered" || r.Header.Get("X-Delta-Replayed") != "true" || app.RequestsFor(id) != 1 {
		t.Errorf("repeat after settling: %q replayed=%q, owner saw %d", r.Outcome(), r.Header.Get("X-Delta-Replayed"), app.RequestsFor(id))
	}
}

// TestOwnerCrash: the owner's Delta is killed while its app works; after a
// restart its receipt is interrupted and the caller's call needs a person.
func TestOwnerCrash(t *testing.T) {
	laptop, studio, app := startPair(t)

	const id = "crash-owner-1"
	result := laptop.callAsync("/v1/peers/studio/notes/hold/o1", id, "60")
	<-app.Arrived()
	studio.kill(t)
	r := <-result
	if r == nil || r.Outcome() != "outcome_unknown" || r.Status != 502 {
		t.Fatalf("the calling app was told %v, want outcome_unknown", r)
	}
	if !strings.Contains(r.Err.Detail, "no complete answer came") {
		t.Errorf("detail %q", r.Err.Detail)
	}

	studio.start(t)
	call := laptop.c.GetCall(t, id, 60)
	if call.State != "needs_person" || call.OwnerState != "interrupted" {
		t.Fatalf("the call is %s (owner says %q: %s), want needs_person after interrupted", call.State, call.OwnerState, call.Detail)
	}
	db, err := journal.Open(filepath.Join(studio.dir, "delta.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec, err := db.Receipts().Get(context.Background(), laptop.id, id)
	if err != nil || rec.State != proto.ReceiptInterrupted {
		t.Errorf("studio's receipt: %+v %v, want interrupted", rec, err)
	}
	if app.RequestsFor(id) != 1 {
		t.Errorf("the owner app saw %d requests, want 1", app.RequestsFor(id))
	}
}

// TestOwnerCrashWhileTheBodyArrives: the owner's Delta is killed while a
// streamed call's body is still arriving, before its app could have it.
// After a restart its receipt says the call was not carried out (it was
// never handed to the app), and the caller's unknown call settles so,
// not as one a person must check.
func TestOwnerCrashWhileTheBodyArrives(t *testing.T) {
	laptop, studio, app := startPair(t)
	const id = "crash-spooling-1"
	pr, pw := io.Pipe()
	req := laptop.localReq(t, "PUT", "/v1/peers/studio/notes/answer/big", pr)
	req.Header.Set("X-Delta-Request-Id", id)
	req.ContentLength = 8 << 20
	got := make(chan *http.Response, 1)
	go func() {
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			got <- nil
			return
		}
		resp.Body.Close()
		got <- resp
	}()
	pw.Write(bytes.Repeat([]byte("x"), 2<<20)) // a quarter of it, then the owner dies
	gatewaytest.WaitFor(t, 30*time.Second, "studio's receipt of the call, running", func() bool {
		r, err := studio.c.Do("GET", "/v1/receipts/"+id, nil)
		return err == nil && r.Status == 200 && strings.Contains(string(r.Body), `"state": "running"`)
	})
	studio.kill(t)
	pw.CloseWithError(errors.New("the app gives up"))
	if r := <-got; r != nil && r.Header.Get("X-Delta-Outcome") != "outcome_unknown" {
		t.Fatalf("the calling app was told %d %s, want outcome_unknown", r.StatusCode, r.Header.Get("X-Delta-Outcome"))
	}
	studio.start(t)
	if call := laptop.c.GetCall(t, id, 60); call.State != "not_carried_out" || call.OwnerState != "not_carried_out" {
		t.Fatalf("the call is %s (owner says %q: %s), want not_carried_out", call.State, call.OwnerState, call.Detail)
	}
	if app.RequestsFor(id) != 0 {
		t.Errorf("the owner app saw %d requests, want none", app.RequestsFor(id))
	}
}

// TestOneDeltaPerStateFolder: a second Delta on the same state folder is
// refused, naming the first.
func TestOneDeltaPerStateFolder(t *testing.T) {
	laptop, _ := twoProcs(t)
	laptop.start(t)
	// A second one for the same user (launchd's and a login item's, say)
	// exits 0, so launchd does not start it again and again, and brings
	// the running one forward: its status page (printed when headless).
	out, err := exec.Command(bin, "--state-dir", laptop.dir, "--listen", "127.0.0.1:0", "--headless").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Delta is already running on the state folder") ||
		!strings.Contains(string(out), "pid ") || !strings.Contains(string(out), "/login?code=") {
		t.Fatalf("second Delta: %v\n%s", err, out)
	}
	for name, want := range map[string]os.FileMode{"local-token": 0o600, ".": 0o700} {
		fi, err := os.Stat(filepath.Join(laptop.dir, name))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v (%v)", name, fi.Mode().Perm(), want, err)
		}
	}
	// SIGTERM stops it cleanly: local.json is removed, exit status 0.
	laptop.cmd.Process.Signal(syscall.SIGTERM)
	if err := laptop.cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v", err)
	}
	if _, err := os.Stat(filepath.Join(laptop.dir, "local.json")); !os.IsNotExist(err) {
		t.Errorf("local.json left behind after a clean stop")
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--listen", "0.0.0.0:7420"},
		{"--lan-port", "0"},
		{"extra"},
	} {
		out, err := exec.Command(bin, append([]string{"--state-dir", t.TempDir()}, args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "delta:") {
			t.Errorf("%v: %v %s", args, err, out)
		}
	}
}

// TestOwnerJournalLost: the owner's Delta is killed while its app works,
// then its journal is lost the way a copy of delta.db alone loses it
// (emptied, or its WAL removed). Restarted, it must not tell the caller
// the call never arrived: the caller settles needs_person, and the log
// and status say the journal's continuity broke.
func TestOwnerJournalLost(t *testing.T) {
	for _, lose := range []string{"emptied", "wal removed"} {
		t.Run(lose, func(t *testing.T) {
			laptop, studio, app := startPair(t)
			id := "lost-journal-" + strings.ReplaceAll(lose, " ", "-")
			result := laptop.callAsync("/v1/peers/studio/notes/hold/"+id, id, "60")
			<-app.Arrived()
			studio.kill(t)
			if r := <-result; r == nil || r.Outcome() != "outcome_unknown" {
				t.Fatalf("the calling app was told %v, want outcome_unknown", r)
			}
			app.Release("/hold/" + id) // the app acted
			loseJournal(studio.dir, lose)
			studio.start(t)
			call := laptop.c.GetCall(t, id, 60)
			if call.State == "not_carried_out" {
				t.Fatalf("a lost journal turned a call its app carried out into not_carried_out: %s", call.Detail)
			}
			if call.State != "needs_person" || call.OwnerState != "expired" {
				t.Fatalf("the call is %s (owner %q: %s), want needs_person after expired", call.State, call.OwnerState, call.Detail)
			}
			if !studio.log.Contains("JOURNAL CONTINUITY BROKEN") {
				t.Errorf("studio's log does not say its journal's continuity broke")
			}
			st := studio.c.Must(t, "GET", "/v1/status", nil)
			if !strings.Contains(string(st.Body), `"broken": "`) {
				t.Errorf("studio's status does not say it: %s", st.Body)
			}
		})
	}
}

// TestCallerJournalLost: the caller's journal is lost after a call was
// carried out (emptied, or its WAL removed after a kill). The restarted
// caller says its continuity broke; the app that sends the same call with
// the same id again is answered with the owner's stored answer, and the
// owner app is not asked twice.
func TestCallerJournalLost(t *testing.T) {
	for _, lose := range []string{"emptied", "wal removed"} {
		t.Run(lose, func(t *testing.T) {
			laptop, _, app := startPair(t)
			id := "lost-caller-" + strings.ReplaceAll(lose, " ", "-")
			if r := <-laptop.callAsync("/v1/peers/studio/notes/answer/"+id, id, "10"); r.Outcome() != "answered" {
				t.Fatalf("the call: %d %q %s", r.Status, r.Outcome(), r.Body)
			}
			laptop.kill(t)
			loseJournal(laptop.dir, lose)
			laptop.start(t)
			if !laptop.log.Contains("JOURNAL CONTINUITY BROKEN") {
				t.Errorf("the caller's log does not say its journal's continuity broke:\n%s", laptop.log)
			}
			r := <-laptop.callAsync("/v1/peers/studio/notes/answer/"+id, id, "10")
			if r.Outcome() != "answered" || r.Header.Get("X-Delta-Replayed") != "true" {
				t.Fatalf("the same call again after the caller lost its journal: %d %q (replayed %q) %s, want the owner's stored answer",
					r.Status, r.Outcome(), r.Header.Get("X-Delta-Replayed"), r.Body)
			}
			if n := app.Effects("/answer/" + id); n != 1 {
				t.Fatalf("the owner app acted %d times, want once", n)
			}
		})
	}
}

// loseJournal does to a stopped Delta's journal what a copy, a sync or a
// backup of delta.db alone gives: "emptied" removes it with its WAL,
// "wal removed" only the WAL (the commits since the last checkpoint).
func loseJournal(dir, how string) {
	db := filepath.Join(dir, "delta.db")
	files := []string{db + "-wal", db + "-shm"}
	if how == "emptied" {
		files = append(files, db)
	}
	for _, f := range files {
		os.Remove(f)
	}
}

// makeIDs makes each proc's state folder and identity, as delta init does,
// and returns their IDs (each proc's id set too).
func makeIDs(t *testing.T, ps ...*proc) map[*proc]string {
	t.Helper()
	ids := map[*proc]string{}
	for _, p := range ps {
		if err := os.MkdirAll(p.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		id, err := ownID(p.dir, p.name)
		if err != nil {
			t.Fatal(err)
		}
		ids[p], p.id = id.String(), id.String()
	}
	return ids
}
