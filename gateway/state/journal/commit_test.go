package journal

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/delta-roads/delta/gateway/state/journal/contslot"
	"github.com/delta-roads/delta/gateway/state/journal/groupcommit"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// TestGroupCommit: writes that wait while a commit runs share the next one;
// each caller returns once its write is durable; one that fails is rolled
// back alone, and the rest of its batch commits.
func TestGroupCommit(t *testing.T) {
	db, _, path := open(t)
	c0, w0 := db.CommitStats()
	release, holding := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // holds the writer, so that the next ones queue
		db.tx(ctx, func(*sql.Tx) error { close(holding); <-release; return nil })
	})
	<-holding
	waitQueued := func(n int) {
		for db.commit.Queued() < n {
			// the senders are goroutines of this test: yield until they
			// have queued (a condition, not a duration)
			runtime.Gosched()
		}
	}
	boom := errors.New("this write fails")
	errs := make([]error, 10)
	for i := range errs {
		wg.Go(func() {
			errs[i] = db.tx(ctx, func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, `INSERT INTO calls (request_id, peer, app, caller_app, method, path, digest, state, outcome, detail, created_at, updated_at)
					VALUES (?, 'p', 'a', '', 'POST', '/', 'd', 'sending', '', '', 0, 0)`, fmt.Sprintf("g%d", i)); err != nil {
					return err
				}
				if i == 3 {
					return boom // after its insert: the insert must go too
				}
				return nil
			})
		})
	}
	waitQueued(10)
	close(release)
	wg.Wait()
	for i, err := range errs {
		if want := error(nil); i == 3 {
			if !errors.Is(err, boom) {
				t.Errorf("the failing write returned %v", err)
			}
		} else if err != want {
			t.Errorf("write %d: %v", i, err)
		}
	}
	c1, w1 := db.CommitStats()
	if commits, writes := c1-c0, w1-w0; writes != 10 || commits != 2 {
		t.Errorf("%d writes committed in %d commits, want 10 in 2 (the holder's, then the nine and a retry is not a commit)", writes, commits)
	}
	db.Close()
	db2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	for i := range errs {
		_, err := db2.Calls().Get(ctx, fmt.Sprintf("g%d", i))
		if i == 3 && !errors.Is(err, ErrNotFound) {
			t.Errorf("the failed write's row is in the journal: %v", err)
		}
		if i != 3 && err != nil {
			t.Errorf("write %d is not in the reopened journal: %v", i, err)
		}
	}
}

// TestWriteAfterClose: a write after Close fails at once with ErrClosed,
// never hangs.
func TestWriteAfterClose(t *testing.T) {
	db, _, _ := open(t)
	db.Close()
	for range groupcommit.MaxBatch + 1 { // more than the queue holds
		if err := db.tx(ctx, func(*sql.Tx) error { return nil }); !errors.Is(err, ErrClosed) {
			t.Fatalf("a write after Close: %v, want ErrClosed", err)
		}
	}
}

// TestReceiveSmall: a small call's receipt is a lazy write: readable at
// once, committed without a flush of its own, and made durable by the
// flush of HandReceipt, before the app has the call; the continuity file
// never counts a receipt that no flush has covered.
func TestReceiveSmall(t *testing.T) {
	db, _, path := open(t)
	counted := func() int64 {
		t.Helper()
		b, err := os.ReadFile(ContinuityFile(path))
		if err != nil {
			t.Fatal(err)
		}
		f, err := contslot.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		return f.Receipts
	}
	f0, n0 := db.Flushes(), counted()
	rec := &Receipt{Caller: "n1", RequestID: "small1", Digest: "d", App: "a", Method: "POST", Path: "/"}
	if dec, _, err := db.Receipts().ReceiveSmall(ctx, rec); err != nil || dec != Forward {
		t.Fatalf("ReceiveSmall: %v %v", dec, err)
	}
	if f := db.Flushes() - f0; f != 0 {
		t.Errorf("the small call's receipt made %d flushes, want none of its own", f)
	}
	if r, err := db.Receipts().Get(ctx, "n1", "small1"); err != nil || r.State != proto.ReceiptRunning {
		t.Fatalf("the receipt, read at once: %+v %v", r, err)
	}
	if n := counted(); n != n0 {
		t.Errorf("the continuity file counts %d receipts before any flush covered the new one, want %d", n, n0)
	}
	// The same id again, as a caller that sends it twice: the lazy
	// receipt decides it.
	if dec, _, err := db.Receipts().ReceiveSmall(ctx, rec); err != nil || dec != Busy {
		t.Errorf("the same call again: %v %v, want Busy (running)", dec, err)
	}
	if err := db.Receipts().Hand(ctx, "n1", "small1"); err != nil {
		t.Fatal(err)
	}
	if f := db.Flushes() - f0; f != 1 {
		t.Errorf("receipt and handing made %d flushes, want 1 (the handing's)", f)
	}
	if n := counted(); n != n0+1 {
		t.Errorf("the continuity file counts %d receipts after the flush, want %d", n, n0+1)
	}
	// A call whose receipt stays lazy when the Delta stops: Close's
	// last commits leave it in the database for the next start, which
	// finds it never handed (not carried out).
	if _, _, err := db.Receipts().ReceiveSmall(ctx, &Receipt{Caller: "n1", RequestID: "small2", Digest: "d", App: "a", Method: "POST", Path: "/"}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if c, err := db2.Continuity(ctx); err != nil || c.Broken != "" {
		t.Errorf("continuity after a restart with a lazy receipt: %+v %v, want unbroken", c, err)
	}
	interrupted, notHanded, err := db2.Receipts().Recover(ctx)
	if err != nil || interrupted != 1 || notHanded != 1 {
		t.Errorf("RecoverReceipts: %d interrupted, %d not handed (%v); want 1 and 1", interrupted, notHanded, err)
	}
}
