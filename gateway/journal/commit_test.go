package journal

import (
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/delta-roads/delta/gateway/journal/groupcommit"
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
		_, err := db2.Call(ctx, fmt.Sprintf("g%d", i))
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
