package journal

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest/smalldisk"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// TestDiskFull: on a real disk filled to the last byte, the journal
// refuses to begin what it cannot record (nothing would be sent or
// forwarded), holds the outcomes it cannot write and shows them in every
// read, says it is behind because the disk is full, and writes them when
// space frees: a reopened journal has them.
func TestDiskFull(t *testing.T) {
	disk := smalldisk.Mount(t, 4<<20)
	path := filepath.Join(disk.Dir, "delta.db")
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	db, err := Open(path, Options{Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	clk.add(ClockSkew + time.Minute)
	call := &record.Call{RequestID: "c1", Peer: "p", App: "a", Method: "POST", Path: "/x", Digest: "d1"}
	if _, err := db.Calls().Begin(ctx, call); err != nil {
		t.Fatal(err)
	}
	rec := &Receipt{Caller: "n1", RequestID: "r1", Digest: "d2", CallerName: "laptop", App: "a", Method: "POST", Path: "/y"}
	if dec, _, err := db.Receipts().Receive(ctx, rec); err != nil || dec != Forward {
		t.Fatalf("receive: %v %v", dec, err)
	}

	holding := db.Holding()
	select {
	case <-holding:
		t.Fatal("Holding is closed while the journal holds nothing")
	default:
	}
	disk.Fill()
	if _, err := db.Calls().Begin(ctx, &record.Call{RequestID: "c2", Peer: "p", App: "a", Method: "POST", Path: "/", Digest: "d"}); err == nil {
		t.Fatal("a call was recorded as sending on a full disk: it could be sent without a record")
	}
	if _, _, err := db.Receipts().Receive(ctx, &Receipt{Caller: "n1", RequestID: "r2", Digest: "d", App: "a", Method: "POST", Path: "/"}); err == nil {
		t.Fatal("a receipt was recorded on a full disk")
	}
	ans := &record.Answer{Status: 201, Body: []byte("done")}
	moved, held, err := db.Calls().MoveOrHold(ctx, "c1", Transition{From: []record.CallState{record.Sending}, To: record.Answered, Outcome: "answered", Answer: ans})
	if err != nil || !moved || !held {
		t.Fatalf("an outcome on a full disk: moved %v held %v err %v, want held in memory", moved, held, err)
	}
	select {
	case <-holding:
	default:
		t.Fatal("Holding's channel, taken before, is not closed once an outcome is held")
	}
	select {
	case <-db.Holding():
	default:
		t.Fatal("Holding, asked while an outcome is held, is not closed")
	}
	if _, held, err := db.Receipts().FinishOrHold(ctx, "n1", "r1", proto.ReceiptAnswered, ans); err != nil || !held {
		t.Fatalf("a receipt's outcome on a full disk: held %v err %v", held, err)
	}
	b := db.Behind()
	if b.Held != 2 || !b.DiskFull || b.Err == nil {
		t.Fatalf("Behind = %+v, want 2 held and the disk full", b)
	}
	// Every read shows the held outcome, marked.
	if c, err := db.Calls().Get(ctx, "c1"); err != nil || c.State != record.Answered || !c.Behind || string(c.Answer.Body) != "done" {
		t.Fatalf("the call as read: %+v %v", c, err)
	}
	if cs, _ := db.Calls().List(ctx, CallFilter{}); len(cs) != 1 || cs[0].State != record.Answered || !cs[0].Behind {
		t.Fatalf("the call as listed: %+v", cs)
	}
	if r, err := db.Receipts().Lookup(ctx, "n1", "r1", clk.now(), nil); err != nil || r.State != proto.ReceiptAnswered || !r.Behind {
		t.Fatalf("the receipt as the caller's question sees it: %+v %v", r, err)
	}
	if dec, old, err := db.Receipts().Receive(ctx, rec); err != nil || dec != Replay || string(old.Answer.Body) != "done" {
		t.Fatalf("the same call again: %v %+v %v, want a replay of the held answer", dec, old, err)
	}
	if left, err := db.Flush(ctx); err == nil || left != 2 {
		t.Fatalf("flush on a full disk: %d left, %v", left, err)
	}

	disk.Free()
	if left, err := db.Flush(ctx); err != nil || left != 0 {
		t.Fatalf("flush with space again: %d left, %v", left, err)
	}
	if b := db.Behind(); b.Held != 0 {
		t.Fatalf("after the flush: %+v", b)
	}
	select {
	case <-db.Holding():
		t.Fatal("Holding is closed after the flush wrote everything")
	default:
	}
	db.Close()
	if db, err = Open(path, Options{Now: clk.now}); err != nil {
		t.Fatal(err)
	}
	if c, err := db.Calls().Get(ctx, "c1"); err != nil || c.State != record.Answered || c.Behind || string(c.Answer.Body) != "done" {
		t.Fatalf("the call after a reopen: %+v %v", c, err)
	}
	if r, err := db.Receipts().Get(ctx, "n1", "r1"); err != nil || r.State != proto.ReceiptAnswered || string(r.Answer.Body) != "done" {
		t.Fatalf("the receipt after a reopen: %+v %v", r, err)
	}
}
