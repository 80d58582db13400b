package journal

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// receive records a receipt of id from caller, with what it carried, and
// finishes it in state.
func receive(t *testing.T, db *DB, caller, id string, body []byte, state proto.ReceiptState) {
	t.Helper()
	if dec, _, err := db.Receipts().Receive(ctx, &Receipt{Caller: caller, RequestID: id, Digest: "d-" + id, CallerName: "laptop", App: "notes", Method: "POST", Path: "/a"}); err != nil || dec != Forward {
		t.Fatalf("Receive %s: %v %v", id, dec, err)
	}
	db.Receipts().KeepReceived(ctx, caller, id, record.KeepRequest(http.Header{"Content-Type": {"text/plain"}}, body), func(err error) { t.Errorf("keep %s: %v", id, err) })
	// Queued after it: once the finish is durable, so is what it carried.
	if state != proto.ReceiptRunning {
		if ok, err := db.Receipts().Finish(ctx, caller, id, state, nil); !ok || err != nil {
			t.Fatalf("FinishReceipt %s: %v %v", id, ok, err)
		}
	}
}

// TestReceiptChecks: what a receipt's call carried is kept by the 64 KiB
// rule; a receipt to check leaves that list when a person here checks it
// or the caller's person settled it, and the list puts those to check
// first; a running one cannot be checked.
func TestReceiptChecks(t *testing.T) {
	db, clk, _ := open(t)
	receive(t, db, "nL", "a", []byte("pay the rent"), proto.ReceiptAppUnknown)
	clk.add(1)
	receive(t, db, "nL", "b", make([]byte, record.MaxKeptBody+1), proto.ReceiptInterrupted)
	clk.add(1)
	receive(t, db, "nL", "c", []byte("fine"), proto.ReceiptAnswered)
	clk.add(1)
	receive(t, db, "nL", "d", []byte("working"), proto.ReceiptRunning)

	rs, err := db.Receipts().Find(ctx, "a")
	if err != nil || len(rs) != 1 || rs[0].Request == nil || string(rs[0].Request.Body) != "pay the rent" || rs[0].Request.Headers.Get("Content-Type") != "text/plain" || !rs[0].ToCheck() {
		t.Fatalf("FindReceipts a: %+v %v", rs, err)
	}
	rs, _ = db.Receipts().Find(ctx, "b")
	if q := rs[0].Request; q == nil || !q.Truncated || q.Body != nil || q.Size != record.MaxKeptBody+1 {
		t.Fatalf("a body over 64 KiB: %+v", q)
	}
	order := func() (ids string) {
		recs, err := db.Receipts().Recent(ctx, clk.now().Add(-ReceiptShown), "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			ids += r.RequestID
		}
		return ids
	}
	if got := order(); got != "badc" {
		t.Errorf("order %q, want the two to check (newest first), then running, then the rest", got)
	}

	if _, err := db.Receipts().Check(ctx, "nL", "d", "the local API", ""); !errors.Is(err, ErrNotCheckable) {
		t.Errorf("checking a running receipt: %v", err)
	}
	r, err := db.Receipts().Check(ctx, "nL", "b", "the status page", "not in the app")
	if err != nil || r.CheckedBy != "the status page" || r.CheckNote != "not in the app" || r.CheckedAt.IsZero() || r.ToCheck() {
		t.Fatalf("CheckReceipt b: %+v %v", r, err)
	}
	if r, err := db.Receipts().Check(ctx, "nL", "b", "the local API", "again"); r.CheckNote != "not in the app" || !errors.Is(err, ErrCheckedAlready) ||
		!strings.Contains(err.Error(), `checked from the status page at`) || !strings.Contains(err.Error(), `noting "not in the app"`) {
		t.Errorf("a second check: %+v %v, want it refused with the first's words, the first kept", r, err)
	}
	// Told an hour after it was made: the time it was made is kept; a
	// time to come is not believed.
	clk.add(2 * time.Hour)
	made := clk.now().Add(-time.Hour)
	r, err = db.Receipts().CallerSettled(ctx, "nL", "a", "carried_out", "in the notes", made)
	if err != nil || r.CallerSettled != "carried_out" || r.CallerSettleNote != "in the notes" || r.ToCheck() || !r.CallerSettledAt.Equal(made) {
		t.Fatalf("CallerSettled a: %+v %v", r, err)
	}
	if r, _ := db.Receipts().CallerSettled(ctx, "nL", "a", "carried_out", "", clk.now().Add(time.Hour)); !r.CallerSettledAt.Equal(clk.now()) {
		t.Errorf("a settlement made in the future is recorded at %v, want now (%v)", r.CallerSettledAt, clk.now())
	}
	// The first word is kept: another one changes nothing (issue 34 U4);
	// a time before the call arrived is not believed either.
	if r, err := db.Receipts().CallerSettled(ctx, "nL", "a", "not_carried_out", "changed my mind", time.Time{}); err != nil || r.CallerSettled != "carried_out" {
		t.Errorf("a second, other word replaced the first: %+v %v", r, err)
	}
	if r, _ := db.Receipts().CallerSettled(ctx, "nL", "b", "not_carried_out", "", time.Unix(0, 0)); !r.CallerSettledAt.Equal(r.ReceivedAt) {
		t.Errorf("a settlement backdated to 1970 is recorded at %v, want no earlier than the call's arrival (%v)", r.CallerSettledAt, r.ReceivedAt)
	}
	if _, err := db.Receipts().CallerSettled(ctx, "nL", "nope", "carried_out", "", time.Time{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a settlement of a call never received: %v", err)
	}
	if got := order(); got != "dcba" {
		t.Errorf("order after the checks %q, want running first, then the rest newest first", got)
	}

	// Sweep: kept while to check; the others' go after RequestRetention,
	// and with their receipt.
	receive(t, db, "nL", "e", []byte("still to check"), proto.ReceiptAppUnknown)
	clk.add(RequestRetention + 1)
	if _, err := db.Receipts().Sweep(ctx, clk.now()); err != nil {
		t.Fatal(err)
	}
	kept := func(id string) bool {
		rs, _ := db.Receipts().Find(ctx, id)
		return len(rs) == 1 && rs[0].Request != nil
	}
	if kept("a") || kept("b") || kept("c") || !kept("e") {
		t.Errorf("after the sweep: a %v b %v c %v e %v; want only e's kept", kept("a"), kept("b"), kept("c"), kept("e"))
	}
	clk.add(ReceiptRetention)
	if _, err := db.Receipts().Sweep(ctx, clk.now()); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.db.QueryRow(`SELECT COUNT(*) FROM receipt_requests`).Scan(&n); err != nil || n != 1 {
		t.Errorf("receipt_requests after the receipts' own sweep: %d %v; want only the running one's", n, err)
	}
}

// TestSettlementsToTell: a person's settlement waits to be told to the
// owner until SettlementTold; the reconciler's own settlements are not told.
func TestSettlementsToTell(t *testing.T) {
	db, _, _ := open(t)
	for _, id := range []string{"p1", "p2", "r1"} {
		begin(t, db, id, []byte("x"))
		toUnknown(t, db, id)
	}
	if _, err := db.Calls().SettleByPerson(ctx, "p1", record.CarriedOut, "seen"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Calls().SettleByPerson(ctx, "p2", record.NotCarriedOut, ""); err != nil {
		t.Fatal(err)
	}
	if moved, _, err := db.Calls().Move(ctx, "r1", Transition{From: []record.CallState{record.Unknown}, To: record.CarriedOut}); !moved || err != nil {
		t.Fatal(moved, err)
	}
	untold, err := db.Calls().UntoldSettlements(ctx, "")
	if err != nil || len(untold) != 2 || untold[0].RequestID != "p1" || untold[0].SettleNote != "seen" || untold[1].State != record.NotCarriedOut {
		t.Fatalf("untold: %+v %v", untold, err)
	}
	if other, _ := db.Calls().UntoldSettlements(ctx, "kitchen"); len(other) != 0 {
		t.Errorf("another peer's: %+v", other)
	}
	if err := db.Calls().SettlementTold(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if untold, _ := db.Calls().UntoldSettlements(ctx, untold[1].Peer); len(untold) != 1 || untold[0].RequestID != "p2" {
		t.Fatalf("after p1 was told: %+v", untold)
	}
}

// TestReceiptRequestsBounded: over the store's bound, what the oldest
// received calls carried goes first; one to check keeps its own whatever
// its age.
func TestReceiptRequestsBounded(t *testing.T) {
	db, clk, _ := open(t)
	defer func(v int64) { maxRequestStore = v }(maxRequestStore)
	maxRequestStore = 10
	receive(t, db, "nL", "old", []byte("aaaaaa"), proto.ReceiptAnswered)
	clk.add(1)
	receive(t, db, "nL", "check", []byte("cccccc"), proto.ReceiptAppUnknown)
	clk.add(1)
	receive(t, db, "nL", "new", []byte("bbbbbb"), proto.ReceiptAnswered)
	if _, err := db.Receipts().Sweep(ctx, clk.now()); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"old": false, "check": true, "new": true} {
		rs, err := db.Receipts().Find(ctx, id)
		if err != nil || len(rs) != 1 {
			t.Fatalf("receipt %s: %v %v", id, rs, err)
		}
		if got := rs[0].Request != nil; got != want {
			t.Errorf("%s: what it carried kept %v, want %v", id, got, want)
		}
	}
}
