package groupcommit_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/delta-roads/delta/gateway/state/journal/groupcommit"
)

var ctx = context.Background()

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "g.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=FULL&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE t (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// synchronous reads the connection's setting from inside a transaction:
// 1 NORMAL, 2 FULL.
func synchronous(tx *sql.Tx, got *int) error {
	if err := tx.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(got); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO t (n) VALUES (1)`)
	return err
}

// TestLazyBatch: a batch of only lazy writes commits without a flush of
// its own (synchronous=NORMAL); a batch with any flushed write in it
// commits with one (FULL), lazy writes and all; and the writer's
// connection goes back to the pool set as the others are (FULL).
func TestLazyBatch(t *testing.T) {
	db := openDB(t)
	db.SetMaxOpenConns(1) // the writer's own is the only one: it is the one checked at the end
	w := groupcommit.Start(db, groupcommit.Hooks{})
	stopped := false
	defer func() {
		if !stopped {
			w.Stop()
		}
	}()

	var lazy, full int
	if err := w.TxLazy(ctx, func(tx *sql.Tx) error { return synchronous(tx, &lazy) }); err != nil {
		t.Fatal(err)
	}
	if err := w.Tx(ctx, func(tx *sql.Tx) error { return synchronous(tx, &full) }); err != nil {
		t.Fatal(err)
	}
	if lazy != 1 || full != 2 {
		t.Errorf("synchronous was %d for a lazy write alone and %d for a flushed one, want 1 (NORMAL) and 2 (FULL)", lazy, full)
	}
	if c, _ := w.Stats(); c != 2 || w.Flushes() != 1 {
		t.Errorf("%d commits, %d of them flushed; want 2 and 1", c, w.Flushes())
	}

	// A lazy write and a flushed one waiting together: one commit, flushed.
	release, holding := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // holds the writer, so that the next two queue
		w.Tx(ctx, func(*sql.Tx) error { close(holding); <-release; return nil })
	})
	<-holding
	var inLazy, inFull int
	var lazyErr, fullErr error
	wg.Go(func() { lazyErr = w.TxLazy(ctx, func(tx *sql.Tx) error { return synchronous(tx, &inLazy) }) })
	for w.Queued() < 1 {
		runtime.Gosched() // the sender is this test's goroutine: a condition, not a duration
	}
	wg.Go(func() { fullErr = w.Tx(ctx, func(tx *sql.Tx) error { return synchronous(tx, &inFull) }) })
	for w.Queued() < 2 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if lazyErr != nil || fullErr != nil {
		t.Fatal(lazyErr, fullErr)
	}
	if inLazy != 2 || inFull != 2 {
		t.Errorf("a lazy and a flushed write in one batch ran with synchronous %d and %d, want 2 (FULL) for both", inLazy, inFull)
	}
	if c, _ := w.Stats(); c != 4 || w.Flushes() != 3 {
		t.Errorf("%d commits, %d of them flushed; want 4 and 3", c, w.Flushes())
	}

	// The last batch was lazy: Stop sets the connection back to FULL
	// before the pool has it again.
	if err := w.TxLazy(ctx, func(tx *sql.Tx) error { return synchronous(tx, &lazy) }); err != nil || lazy != 1 {
		t.Fatalf("a lazy write: %v, synchronous %d", err, lazy)
	}
	w.Stop()
	stopped = true
	var n int
	if err := db.QueryRow(`PRAGMA synchronous`).Scan(&n); err != nil || n != 2 {
		t.Errorf("the pool's connection (the writer's, the only one) has synchronous %d (%v) after the writer stopped, want 2 (FULL)", n, err)
	}
	var rows int
	if err := db.QueryRow(`SELECT COUNT(*) FROM t`).Scan(&rows); err != nil || rows != 5 {
		t.Errorf("%d rows (%v), want the 5 written", rows, err)
	}
}
