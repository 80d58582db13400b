// Package groupcommit runs the write transactions of one SQLite database
// in group commits. Every write goes to one writer, which runs the ones
// waiting together in one transaction and one commit: one fsync of the
// WAL for all of them. Each caller is answered only after that commit
// returns, so a row is durable before the step that depends on it,
// exactly as with a transaction of its own; only the fsync is shared. A
// writer that finds nobody waiting commits a lone transaction at once: a
// single call pays nothing for the batching.
//
// An operation that fails is rolled back with its whole batch (SQLite may
// roll a transaction back by itself after an error such as SQLITE_FULL, so
// a savepoint cannot be trusted to keep the rest), and the others are run
// again without it in a new transaction: each either commits whole or not
// at all, alone or with the others.
package groupcommit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// MaxBatch bounds one group commit.
const MaxBatch = 64

// ErrClosed is a write after Stop.
var ErrClosed = errors.New("journal: closed")

// Hooks are told of each transaction, on the writer: Begin before its
// operations run, Committed after it committed and before any of its
// callers is answered. Either may be nil.
type Hooks struct {
	Begin, Committed func()
}

type writeOp struct {
	ctx  context.Context
	f    func(*sql.Tx) error
	done chan error
	// then, if set, is told the result instead of done, by the writer
	// itself (TxQueued: nobody waits, and no goroutine is spent on it).
	then func(error)
}

// Writer is the one writer of a database.
type Writer struct {
	db     *sql.DB
	hooks  Hooks
	ops    chan *writeOp
	stop   chan struct{}
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	batches int64 // commits made
	writes  int64 // operations committed
}

// Start starts the writer of db.
func Start(db *sql.DB, hooks Hooks) *Writer {
	w := &Writer{db: db, hooks: hooks, ops: make(chan *writeOp, MaxBatch), stop: make(chan struct{}), closed: make(chan struct{})}
	go w.run()
	return w
}

// Stop lets the writer finish what is queued and stop.
func (w *Writer) Stop() {
	w.once.Do(func() { close(w.stop) })
	<-w.closed
}

// Stats are the commits made and the operations committed.
func (w *Writer) Stats() (commits, writes int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.batches, w.writes
}

// Queued is how many operations wait for the writer.
func (w *Writer) Queued() int { return len(w.ops) }

// Tx runs f in the next group commit, and returns once it is durable (or
// failed, rolled back).
func (w *Writer) Tx(ctx context.Context, f func(*sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := &writeOp{ctx: ctx, f: f, done: make(chan error, 1)}
	select {
	case w.ops <- op:
	case <-w.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return w.wait(op)
}

// TxQueued queues f for the next group commit and returns at once; then
// gets its result (nil: committed) from the writer itself, so it must be
// quick. Operations commit in the order they were queued, so one queued
// before a Tx is durable no later than it.
func (w *Writer) TxQueued(ctx context.Context, f func(*sql.Tx) error, then func(error)) {
	op := &writeOp{ctx: ctx, f: f, then: then}
	select {
	case w.ops <- op:
	case <-w.stop:
		then(ErrClosed)
	case <-ctx.Done():
		then(ctx.Err())
	}
}

// finish hands the operation its result.
func (op *writeOp) finish(err error) {
	if op.then != nil {
		op.then(err)
		return
	}
	op.done <- err
}

// wait waits for a queued operation's result.
func (w *Writer) wait(op *writeOp) error {
	// Once queued, the operation is waited for even if ctx ends: whether
	// it committed must be known. The writer answers every operation it
	// takes before it stops; one it never took was not written.
	select {
	case err := <-op.done:
		return err
	case <-w.closed:
		select {
		case err := <-op.done:
			return err
		default:
			return ErrClosed
		}
	}
}

func (w *Writer) run() {
	defer close(w.closed)
	for {
		var first *writeOp
		select {
		case first = <-w.ops:
		case <-w.stop:
			// What is queued already is written, then nothing more.
			var rest []*writeOp
			for len(w.ops) > 0 {
				rest = append(rest, <-w.ops)
			}
			for len(rest) > 0 {
				n := min(len(rest), MaxBatch)
				w.runBatch(rest[:n])
				rest = rest[n:]
			}
			return
		}
		batch := []*writeOp{first}
	more:
		for len(batch) < MaxBatch {
			select {
			case op := <-w.ops:
				batch = append(batch, op)
			default:
				break more
			}
		}
		w.runBatch(batch)
	}
}

// runBatch commits batch, running again without it any operation that
// failed.
func (w *Writer) runBatch(batch []*writeOp) {
	for len(batch) > 0 {
		failed, err := w.commitOnce(batch)
		if failed < 0 {
			if err == nil { // counted before anyone is answered
				w.mu.Lock()
				w.batches++
				w.writes += int64(len(batch))
				w.mu.Unlock()
			}
			for _, op := range batch {
				op.finish(err) // nil: committed
			}
			return
		}
		batch[failed].finish(err)
		batch = append(batch[:failed:failed], batch[failed+1:]...)
	}
}

// commitOnce runs batch in one transaction. It returns the index of the
// operation that failed (the transaction rolled back), or -1 with the
// commit's result.
func (w *Writer) commitOnce(batch []*writeOp) (int, error) {
	tx, err := w.db.BeginTx(context.Background(), nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return -1, fmt.Errorf("journal: begin: %w", err)
	}
	if w.hooks.Begin != nil {
		w.hooks.Begin()
	}
	for i, op := range batch {
		err := op.ctx.Err()
		if err == nil {
			err = op.f(tx)
		}
		if err != nil {
			tx.Rollback()
			return i, err
		}
	}
	if err := tx.Commit(); err != nil {
		return -1, fmt.Errorf("journal: commit: %w", err)
	}
	if w.hooks.Committed != nil {
		w.hooks.Committed()
	}
	return -1, nil
}
