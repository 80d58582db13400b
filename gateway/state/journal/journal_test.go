package journal

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func open(t *testing.T) (*DB, *clock, string) {
	t.Helper()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "delta.db")
	db, err := Open(path, Options{Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// A fresh journal vouches only for calls made after its birth (and the
	// clock skew): the tests' calls come later.
	clk.add(ClockSkew + time.Minute)
	return db, clk, path
}

var ctx = context.Background()

func TestCallStateMachine(t *testing.T) {
	db, _, _ := open(t)
	c := &record.Call{RequestID: "r1", Peer: "studio", App: "notes", Method: "POST", Path: "/a", Digest: "d1"}
	if old, err := db.Calls().Begin(ctx, c); err != nil || old != nil {
		t.Fatalf("BeginCall: %v %v", old, err)
	}
	got, _ := db.Calls().Get(ctx, "r1")
	if got.State != record.Sending {
		t.Fatalf("state %s, want sending", got.State)
	}
	// The same id again: nothing written, the record returned.
	again := &record.Call{RequestID: "r1", Peer: "x", App: "y", Method: "PUT", Path: "/b", Digest: "d2"}
	old, err := db.Calls().Begin(ctx, again)
	if err != nil || old == nil || old.Digest != "d1" || old.Method != "POST" {
		t.Fatalf("second BeginCall: %+v %v", old, err)
	}
	// Only a call in a from-state moves.
	moved, cur, err := db.Calls().Move(ctx, "r1", Transition{From: []record.CallState{record.Unknown}, To: record.CarriedOut})
	if err != nil || moved || cur.State != record.Sending {
		t.Fatalf("move from the wrong state: moved=%v cur=%v err=%v", moved, cur, err)
	}
	ans := record.NewAnswer(201, http.Header{"X-A": {"1"}}, []byte("ok"), 1<<20)
	if moved, _, err := db.Calls().Move(ctx, "r1", Transition{From: []record.CallState{record.Sending}, To: record.Answered, Outcome: "answered", Answer: ans}); !moved || err != nil {
		t.Fatalf("move to answered: %v %v", moved, err)
	}
	got, _ = db.Calls().Get(ctx, "r1")
	if got.State != record.Answered || got.Answer == nil || got.Answer.Status != 201 || string(got.Answer.Body) != "ok" || got.Answer.Headers.Get("X-A") != "1" {
		t.Errorf("answered call: %+v", got)
	}
	if _, _, err := db.Calls().Move(ctx, "nope", Transition{From: []record.CallState{record.Sending}, To: record.Unknown}); !errors.Is(err, ErrNotFound) {
		t.Errorf("move of a missing call: %v", err)
	}
	if _, _, err := db.Calls().Move(ctx, "r1", Transition{To: record.Unknown}); err == nil {
		t.Errorf("a move without from-states was accepted")
	}
}

func TestRecoverCallsAndDue(t *testing.T) {
	db, clk, _ := open(t)
	for _, id := range []string{"a", "b"} {
		db.Calls().Begin(ctx, &record.Call{RequestID: id, Peer: "studio", App: "n", Method: "POST", Path: "/", Digest: id})
	}
	db.Calls().Move(ctx, "b", Transition{From: []record.CallState{record.Sending}, To: record.Answered})
	n, err := db.Calls().Recover(ctx)
	if err != nil || n != 1 {
		t.Fatalf("RecoverCalls: %d %v", n, err)
	}
	a, _ := db.Calls().Get(ctx, "a")
	if a.State != record.Unknown || a.Outcome != "outcome_unknown" {
		t.Errorf("recovered call: %s %s", a.State, a.Outcome)
	}
	due, _ := db.Calls().Due(ctx, clk.now())
	if len(due) != 1 || due[0].RequestID != "a" {
		t.Errorf("due: %v", due)
	}
	clk.add(time.Second)
	if err := db.Calls().NoteAsk(ctx, "a", "running", "still running", clk.now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if due, _ := db.Calls().Due(ctx, clk.now()); len(due) != 0 {
		t.Errorf("a call was due before its next ask")
	}
	next, ok, _ := db.Calls().NextAsk(ctx)
	if !ok || !next.Equal(clk.now().Add(5*time.Second)) {
		t.Errorf("NextAsk %v %v", next, ok)
	}
	if n, _, _ := db.Calls().CountUnsettled(ctx); n != 1 {
		t.Errorf("unsettled %d", n)
	}
	db.Calls().Dismiss(ctx, "a", "the local API")
	if n, _, _ := db.Calls().CountUnsettled(ctx); n != 0 {
		t.Errorf("a dismissed call counts as unsettled")
	}
	a, _ = db.Calls().Get(ctx, "a")
	if a.Asks != 1 || a.OwnerState != "running" || !a.Dismissed || a.State != record.Unknown {
		t.Errorf("after ask and dismiss: %+v", a)
	}
}

func TestReceiveDecisions(t *testing.T) {
	db, _, _ := open(t)
	r := func(digest string) *Receipt {
		return &Receipt{Caller: "n1", RequestID: "x", Digest: digest, App: "notes", Method: "POST", Path: "/"}
	}
	if dec, _, err := db.Receipts().Receive(ctx, r("d")); dec != Forward || err != nil {
		t.Fatalf("new: %v %v", dec, err)
	}
	if dec, old, _ := db.Receipts().Receive(ctx, r("d")); dec != Busy || old.State != proto.ReceiptRunning {
		t.Errorf("running: %v %v", dec, old.State)
	}
	if dec, _, _ := db.Receipts().Receive(ctx, r("other")); dec != Reused {
		t.Errorf("other digest: %v", dec)
	}
	// Another caller may use the same id.
	if dec, _, _ := db.Receipts().Receive(ctx, &Receipt{Caller: "n2", RequestID: "x", Digest: "zz"}); dec != Forward {
		t.Errorf("same id from another caller: %v", dec)
	}
	db.Receipts().Finish(ctx, "n1", "x", proto.ReceiptAnswered, record.NewAnswer(200, nil, []byte("hi"), 1<<20))
	if dec, old, _ := db.Receipts().Receive(ctx, r("d")); dec != Replay || string(old.Answer.Body) != "hi" {
		t.Errorf("answered: %v %v", dec, old)
	}
	if ok, _ := db.Receipts().Finish(ctx, "n1", "x", proto.ReceiptAppUnknown, nil); ok {
		t.Errorf("a finished receipt was finished again")
	}
	// A big answer is kept as its digest only.
	db.Receipts().Receive(ctx, &Receipt{Caller: "n1", RequestID: "big", Digest: "d"})
	db.Receipts().Finish(ctx, "n1", "big", proto.ReceiptAnswered, record.NewAnswer(200, nil, make([]byte, 2<<20), 1<<20))
	big, _ := db.Receipts().Get(ctx, "n1", "big")
	if !big.Answer.Omitted || len(big.Answer.Body) != 0 || big.Answer.BodyDigest == "" {
		t.Errorf("big answer: omitted=%v len=%d digest=%q", big.Answer.Omitted, len(big.Answer.Body), big.Answer.BodyDigest)
	}
}

func TestFenceAndRestart(t *testing.T) {
	db, clk, path := open(t)
	// Asked about before it arrives: fenced, and refused when it arrives.
	got, err := db.Receipts().Lookup(ctx, "n1", "early", clk.now(), nil)
	if err != nil || got.State != proto.ReceiptNeverArrived {
		t.Fatalf("lookup of an unseen id: %v %v", got, err)
	}
	if got, _ := db.Receipts().Lookup(ctx, "n1", "early", clk.now(), nil); got.State != proto.ReceiptNeverArrived {
		t.Errorf("second lookup: %s", got.State)
	}
	if dec, old, _ := db.Receipts().Receive(ctx, &Receipt{Caller: "n1", RequestID: "early", Digest: "d"}); dec != Busy || old.State != proto.ReceiptFenced {
		t.Errorf("arrival after a fence: %v %v", dec, old.State)
	}
	// Running receipts handed to their app become interrupted on
	// restart; those never handed over, not carried out.
	db.Receipts().Receive(ctx, &Receipt{Caller: "n1", RequestID: "run", Digest: "d"})
	if err := db.Receipts().Hand(ctx, "n1", "run"); err != nil {
		t.Fatal(err)
	}
	db.Receipts().Receive(ctx, &Receipt{Caller: "n1", RequestID: "spooling", Digest: "d"})
	if err := db.Receipts().Hand(ctx, "n1", "nothing"); err == nil {
		t.Error("a receipt that is not there was handed over")
	}
	db.Close()
	db2, err := Open(path, Options{Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if n, notHanded, _ := db2.Receipts().Recover(ctx); n != 1 || notHanded != 1 {
		t.Errorf("recovered %d interrupted and %d not handed over, want 1 and 1", n, notHanded)
	}
	if got, _ := db2.Receipts().Lookup(ctx, "n1", "run", clk.now(), nil); got.State != proto.ReceiptInterrupted {
		t.Errorf("restarted receipt handed over: %s", got.State)
	}
	if got, _ := db2.Receipts().Lookup(ctx, "n1", "spooling", clk.now(), nil); got.State != proto.ReceiptNotCarriedOut {
		t.Errorf("restarted receipt never handed over: %s", got.State)
	}
}

func TestSweepAndWatermark(t *testing.T) {
	db, clk, _ := open(t)
	start := clk.now()
	db.Receipts().Receive(ctx, &Receipt{Caller: "n1", RequestID: "old", Digest: "d"})
	db.Receipts().Finish(ctx, "n1", "old", proto.ReceiptAnswered, record.NewAnswer(200, nil, []byte("a"), 1<<20))
	db.Calls().Begin(ctx, &record.Call{RequestID: "settled", Peer: "p", App: "a", Method: "POST", Path: "/", Digest: "d"})
	db.Calls().Move(ctx, "settled", Transition{From: []record.CallState{record.Sending}, To: record.Answered})
	db.Calls().Begin(ctx, &record.Call{RequestID: "open", Peer: "p", App: "a", Method: "POST", Path: "/", Digest: "d"})
	db.Calls().Move(ctx, "open", Transition{From: []record.CallState{record.Sending}, To: record.Unknown})

	clk.add(8 * 24 * time.Hour)
	res, _ := db.Receipts().Sweep(ctx, clk.now())
	if res.AnswersExpired != 1 || res.ReceiptsGone != 0 {
		t.Errorf("after 8 days: %+v", res)
	}
	r, _ := db.Receipts().Get(ctx, "n1", "old")
	if !r.AnswerExpired || r.Answer != nil || r.State != proto.ReceiptAnswered {
		t.Errorf("expired answer: %+v", r)
	}
	if dec, _, _ := db.Receipts().Receive(ctx, &Receipt{Caller: "n1", RequestID: "old", Digest: "d"}); dec != Busy {
		t.Errorf("a repeat whose answer expired: %v, want busy (never forwarded twice)", dec)
	}

	clk.add(90 * 24 * time.Hour)
	res, _ = db.Receipts().Sweep(ctx, clk.now())
	if res.ReceiptsGone != 1 || res.CallsGone != 1 {
		t.Errorf("after 98 days: %+v", res)
	}
	if _, err := db.Calls().Get(ctx, "open"); err != nil {
		t.Errorf("an unsettled call was swept: %v", err)
	}
	// A call created before the watermark (plus skew) is expired, never
	// never_arrived; a newer one is fenced.
	if got, _ := db.Receipts().Lookup(ctx, "n1", "old", start, nil); got.State != proto.ReceiptExpired {
		t.Errorf("lookup of a swept call: %s, want expired", got.State)
	}
	if got, _ := db.Receipts().Lookup(ctx, "n1", "gone", clk.now().Add(-90*24*time.Hour+5*time.Minute), nil); got.State != proto.ReceiptExpired {
		t.Errorf("lookup within the clock skew of the watermark: %s, want expired", got.State)
	}
	if got, _ := db.Receipts().Lookup(ctx, "n1", "young", clk.now().Add(-time.Hour), nil); got.State != proto.ReceiptNeverArrived {
		t.Errorf("lookup of a young unseen call: %s, want never_arrived", got.State)
	}
	if got, _ := db.Receipts().Lookup(ctx, "n1", "undated", time.Time{}, nil); got.State != proto.ReceiptExpired {
		t.Errorf("lookup without created_at after a sweep: %s, want expired", got.State)
	}
}

func TestDurableOnDisk(t *testing.T) {
	db, _, path := open(t)
	db.Calls().Begin(ctx, &record.Call{RequestID: "keep", Peer: "p", App: "a", Method: "POST", Path: "/", Digest: "d"})
	db.Close()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("no database file: %v", err)
	}
	db2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if c, err := db2.Calls().Get(ctx, "keep"); err != nil || c.State != record.Sending {
		t.Errorf("reopened: %v %v", c, err)
	}
	var mode string
	db2.db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	var sync int
	db2.db.QueryRow("PRAGMA synchronous").Scan(&sync)
	if mode != "wal" || sync != 2 {
		t.Errorf("journal_mode %s synchronous %d; want wal and 2 (FULL)", mode, sync)
	}
}

func TestApps(t *testing.T) {
	db, _, _ := open(t)
	a, err := db.Apps().Put(ctx, "notes", "http://127.0.0.1:1", 0, false)
	if err != nil || len(a.Secret) < 16 {
		t.Fatalf("%v %v", a, err)
	}
	b, _ := db.Apps().Put(ctx, "notes", "http://127.0.0.1:2", 45*time.Second, false)
	got, _ := db.Apps().Get(ctx, "notes")
	if b.Secret != a.Secret || got.URL != "http://127.0.0.1:2" || got.Secret != a.Secret || got.Timeout != 45*time.Second {
		t.Errorf("re-registered: %+v", got)
	}
	// No limit is kept as such, and read back by a journal opened anew
	// (not only from its cache of apps).
	if _, err := db.Apps().Put(ctx, "notes", "http://127.0.0.1:2", proto.NoLimit, true); err != nil {
		t.Fatal(err)
	}
	if all, err := db.Apps().List(ctx); err != nil || len(all) != 1 || all[0].Timeout != proto.NoLimit || !all[0].H2C {
		t.Errorf("apps after --timeout none --h2c: %+v %v", all, err)
	}
	if got, err := db.Apps().Get(ctx, "notes"); err != nil || !got.H2C || got.Timeout != proto.NoLimit {
		t.Errorf("the app read again: %+v %v", got, err)
	}
	if err := db.Apps().Delete(ctx, "notes"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Apps().Get(ctx, "notes"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted app: %v", err)
	}
}

func TestChangedWakes(t *testing.T) {
	db, _, _ := open(t)
	ch := db.Changed()
	db.Calls().Begin(ctx, &record.Call{RequestID: "w", Peer: "p", App: "a", Method: "POST", Path: "/", Digest: "d"})
	select {
	case <-ch:
	default:
		t.Errorf("Changed did not fire on a new call")
	}
}

// TestAttemptsAsTheyHappen: an attempt recorded with the call before its
// first byte survives a crash (restart recovery says Delta stopped during
// it), and the attempt as it ended replaces the attempt as it began.
func TestAttemptsAsTheyHappen(t *testing.T) {
	db, _, path := open(t)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	failed := record.Attempt{N: 1, Road: "lan", Address: "10.0.0.2:7422", StartedAt: t0, Error: "connect: refused"}
	inFlight := record.Attempt{N: 2, Road: "tailnet", Address: "100.64.0.2:7421", StartedAt: t0, FirstByte: true}
	c := &record.Call{RequestID: "crash", Peer: "studio", App: "notes", Method: "POST", Path: "/", Digest: "d", Attempts: []record.Attempt{failed, inFlight}}
	if old, err := db.Calls().Begin(ctx, c); err != nil || old != nil {
		t.Fatalf("BeginCall: %v %v", old, err)
	}
	done := &record.Call{RequestID: "done", Peer: "studio", App: "notes", Method: "POST", Path: "/", Digest: "d", Attempts: []record.Attempt{inFlight}}
	db.Calls().Begin(ctx, done)
	ended := inFlight
	ended.Error = "studio replied 503 app_unavailable"
	if moved, _, err := db.Calls().Move(ctx, "done", Transition{From: []record.CallState{record.Sending}, To: record.Unavailable, Attempts: []record.Attempt{ended}}); !moved || err != nil {
		t.Fatalf("move: %v %v", moved, err)
	}
	if got, _ := db.Calls().Get(ctx, "done"); len(got.Attempts) != 1 || got.Attempts[0].Error != ended.Error {
		t.Errorf("the ended attempt did not replace the one begun: %+v", got.Attempts)
	}
	// A crash: reopen the file, recover.
	db.Close()
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n, err := db.Calls().Recover(ctx); n != 1 || err != nil {
		t.Fatalf("RecoverCalls: %d %v", n, err)
	}
	got, _ := db.Calls().Get(ctx, "crash")
	if got.State != record.Unknown || len(got.Attempts) != 2 {
		t.Fatalf("after recovery: %s with %+v", got.State, got.Attempts)
	}
	if a := got.Attempts[0]; a.FirstByte || a.Error != "connect: refused" {
		t.Errorf("the failed attempt changed: %+v", a)
	}
	if a := got.Attempts[1]; !a.FirstByte || a.Road != "tailnet" || !strings.Contains(a.Error, "Delta stopped during this attempt") {
		t.Errorf("the attempt in flight: %+v", a)
	}
	// A call refused before anything left is recorded in its final state.
	un := &record.Call{RequestID: "unsent", Peer: "studio", App: "notes", Method: "POST", Path: "/", Digest: "d",
		State: record.Unavailable, Outcome: "unavailable", Detail: "no road; nothing was sent", Attempts: []record.Attempt{failed}}
	db.Calls().Begin(ctx, un)
	if got, _ := db.Calls().Get(ctx, "unsent"); got.State != record.Unavailable || got.Outcome != "unavailable" || got.Detail != un.Detail || len(got.Attempts) != 1 {
		t.Errorf("a call recorded unsent: %+v", got)
	}
}

// TestOpenOddFolderName: "#", "?" and "%" in the state folder's name open
// the journal there, not somewhere cut short.
func TestOpenOddFolderName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "Delta #1?x%20")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "delta.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the journal is not at %s: %v", path, err)
	}
}

// TestDamagedJournalRefused: a journal that fails quick_check (or is not a
// database) is refused with what to do, and left byte for byte as it was.
func TestDamagedJournalRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "delta.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		db.Calls().Begin(context.Background(), &record.Call{RequestID: fmt.Sprintf("c%03d", i), Peer: "p", App: "a", Method: "POST", Path: "/" + strings.Repeat("x", 200), Digest: "d"})
	}
	db.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	db.Close()
	b, _ := os.ReadFile(path)
	// Scribble over the page-type byte of every page after the first.
	for off := 4096; off < len(b); off += 4096 {
		b[off] = 0x5a
	}
	os.WriteFile(path, b, 0o600)
	_, err = Open(path, Options{})
	if err == nil || !strings.Contains(err.Error(), "Delta does not run on it and leaves it as it is") || !strings.Contains(err.Error(), ".damaged") {
		t.Fatalf("a damaged journal: %v", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, b) {
		t.Fatal("the damaged journal was changed")
	}
	os.WriteFile(path, []byte("not a database at all, just text"), 0o600)
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "leaves it as it is") {
		t.Fatalf("a file that is not a database: %v", err)
	}
}

// TestFullFsyncPragmas: on macOS every connection of the journal runs with
// fullfsync and checkpoint_fullfsync on (fsync alone leaves data in the
// drive's cache there); elsewhere nothing is added. SQLite takes the
// pragmas on Linux too (a no-op there), so the hook is checked here on
// each of the pool's connections.
func TestFullFsyncPragmas(t *testing.T) {
	if got := connPragmas("linux"); len(got) != 0 {
		t.Errorf("linux: %q, want none", got)
	}
	darwin := connPragmas("darwin")
	if len(darwin) != 2 {
		t.Fatalf("darwin: %q, want fullfsync and checkpoint_fullfsync", darwin)
	}
	saved := onConnect
	onConnect = darwin
	defer func() { onConnect = saved }()
	db, _, _ := open(t)
	type querier interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}
	check := func(name string, q querier) {
		for _, p := range []string{"fullfsync", "checkpoint_fullfsync"} {
			var v int
			if err := q.QueryRowContext(ctx, "PRAGMA "+p).Scan(&v); err != nil || v != 1 {
				t.Errorf("%s: PRAGMA %s = %d (%v), want 1", name, p, v, err)
			}
		}
	}
	var conns []*sql.Conn
	for range readConns { // the readers' every connection
		c, err := db.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		check(fmt.Sprintf("reader's connection %d", len(conns)), c)
	}
	for _, c := range conns {
		c.Close()
	}
	// The writer's own, from inside a transaction of its own.
	if err := db.tx(ctx, func(tx *sql.Tx) error { check("the writer's connection", tx); return nil }); err != nil {
		t.Fatal(err)
	}
}

// syncModes are the journal's connections with fsync alone and with
// fullfsync on (on macOS, F_FULLFSYNC; elsewhere the pragma is a no-op),
// for the benchmarks that compare them in one run.
var syncModes = []struct {
	name    string
	pragmas []string
}{{"fsync", nil}, {"fullfsync", connPragmas("darwin")}}

// BenchmarkDurableCall is a call's two durable writes (sending, then its
// outcome) with synchronous=FULL alone and with fullfsync on, in one run:
// the cost of fullfsync on this disk (on macOS, F_FULLFSYNC; elsewhere
// the pragma is a no-op). The macOS release workflow runs it.
func BenchmarkDurableCall(b *testing.B) {
	saved := onConnect
	defer func() { onConnect = saved }()
	for _, mode := range syncModes {
		b.Run(mode.name, func(b *testing.B) {
			onConnect = mode.pragmas
			db, err := Open(filepath.Join(b.TempDir(), "delta.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprintf("bench-%d", i)
				if _, err := db.Calls().Begin(ctx, &record.Call{RequestID: id, Peer: "p", App: "a", Method: "POST", Path: "/", Digest: "d"}); err != nil {
					b.Fatal(err)
				}
				if _, _, err := db.Calls().Move(ctx, id, Transition{From: []record.CallState{record.Sending}, To: record.Answered, Answer: &record.Answer{Status: 201}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOwnerCall is the owner's writes for a small call (its
// receipt, "handed", its answer) with the receipt flushed on its own
// (Receive) and lazy (ReceiveSmall, what the owner does for a body of up
// to 1 MiB), with fsync and with fullfsync, in one run: what the lazy
// receipt saves on this disk (on macOS, one F_FULLFSYNC of three). The
// macOS release workflow runs it.
func BenchmarkOwnerCall(b *testing.B) {
	saved := onConnect
	defer func() { onConnect = saved }()
	for _, mode := range syncModes {
		for _, receipt := range []struct {
			name    string
			receive func(*DB) func(context.Context, *Receipt) (Decision, *Receipt, error)
		}{{"receipt-flushed", func(d *DB) func(context.Context, *Receipt) (Decision, *Receipt, error) { return d.Receipts().Receive }},
			{"receipt-lazy", func(d *DB) func(context.Context, *Receipt) (Decision, *Receipt, error) {
				return d.Receipts().ReceiveSmall
			}}} {
			b.Run(mode.name+"/"+receipt.name, func(b *testing.B) {
				onConnect = mode.pragmas
				db, err := Open(filepath.Join(b.TempDir(), "delta.db"), Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				receive := receipt.receive(db)
				f0 := db.Flushes()
				n := 0
				for i := 0; b.Loop(); i++ {
					id := fmt.Sprintf("bench-%d", i)
					if dec, _, err := receive(ctx, &Receipt{Caller: "n1", RequestID: id, Digest: "d", App: "a", Method: "POST", Path: "/"}); err != nil || dec != Forward {
						b.Fatal(dec, err)
					}
					if err := db.Receipts().Hand(ctx, "n1", id); err != nil {
						b.Fatal(err)
					}
					if _, err := db.Receipts().Finish(ctx, "n1", id, proto.ReceiptAnswered, &record.Answer{Status: 201}); err != nil {
						b.Fatal(err)
					}
					n++
				}
				b.ReportMetric(float64(db.Flushes()-f0)/float64(n), "flushes/call")
			})
		}
	}
}

// TestDecide: the owner's decision for a call arriving under an id it
// holds, with its digest known or not yet (a streamed body).
func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		old    Receipt
		digest string
		want   Decision
	}{
		{Receipt{State: proto.ReceiptFenced}, "d", Busy},
		{Receipt{State: proto.ReceiptFenced}, "", Busy},
		{Receipt{State: proto.ReceiptAnswered, Digest: "d"}, "", Later},
		{Receipt{State: proto.ReceiptAnswered, Digest: "d"}, "d", Replay},
		{Receipt{State: proto.ReceiptAnswered, Digest: "d", AnswerExpired: true}, "d", Busy},
		{Receipt{State: proto.ReceiptAnswered, Digest: "d"}, "e", Reused},
		{Receipt{State: proto.ReceiptRunning, Digest: ""}, "d", Busy}, // its body still arriving
		{Receipt{State: proto.ReceiptNotCarriedOut, Digest: ""}, "d", Busy},
		{Receipt{State: proto.ReceiptRunning, Digest: "d"}, "d", Busy},
	} {
		if got := Decide(&tc.old, tc.digest); got != tc.want {
			t.Errorf("%s/%q with %q: %d, want %d", tc.old.State, tc.old.Digest, tc.digest, got, tc.want)
		}
	}
}
