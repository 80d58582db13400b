package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// Group commit. Every write transaction of the journal (d.tx) goes to one
// writer, which runs the ones waiting together in one SQLite transaction
// and one commit: one fsync of the WAL for all of them. Each caller is
// answered only after that commit returns, so a row is durable before the
// step that depends on it, exactly as with a transaction of its own; only
// the fsync is shared. A writer that finds nobody waiting commits a lone
// transaction at once: a single call pays nothing for the batching.
//
// An operation that fails is rolled back with its whole batch (SQLite may
// roll a transaction back by itself after an error such as SQLITE_FULL, so
// a savepoint cannot be trusted to keep the rest), and the others are run
// again without it in a new transaction: each either commits whole or not
// at all, alone or with the others.

// maxBatch bounds one group commit.
const maxBatch = 64

// ErrClosed is a write after Close.
var ErrClosed = errors.New("journal: closed")

type writeOp struct {
	ctx  context.Context
	f    func(*sql.Tx) error
	done chan error
	// then, if set, is told the result instead of done, by the writer
	// itself (txQueued: nobody waits, and no goroutine is spent on it).
	then func(error)
}

type committer struct {
	ops    chan *writeOp
	stop   chan struct{}
	closed chan struct{}
	once   sync.Once

	// counted counts the records this transaction counted for
	// continuity (countReceipt); records is the committed count. Only the
	// writer touches them (and Open, before it takes writes).
	counted, records int64

	mu      sync.Mutex
	batches int64 // commits made
	writes  int64 // operations committed
}

func (d *DB) startWriter() {
	d.commit = &committer{ops: make(chan *writeOp, maxBatch), stop: make(chan struct{}), closed: make(chan struct{})}
	go d.writer()
}

// stopWriter lets the writer finish what is queued and stop.
func (d *DB) stopWriter() {
	c := d.commit
	c.once.Do(func() { close(c.stop) })
	<-c.closed
}

// tx runs f in the next group commit, and returns once it is durable (or
// failed, rolled back).
func (d *DB) tx(ctx context.Context, f func(*sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := &writeOp{ctx: ctx, f: f, done: make(chan error, 1)}
	select {
	case d.commit.ops <- op:
	case <-d.commit.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return d.wait(op)
}

// txQueued queues f for the next group commit and returns at once; then
// gets its result (nil: committed) from the writer itself, so it must be
// quick. Operations commit in the order they were queued, so one queued
// before a tx is durable no later than it.
func (d *DB) txQueued(ctx context.Context, f func(*sql.Tx) error, then func(error)) {
	op := &writeOp{ctx: ctx, f: f, then: then}
	select {
	case d.commit.ops <- op:
	case <-d.commit.stop:
		then(ErrClosed)
		return
	case <-ctx.Done():
		then(ctx.Err())
		return
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
func (d *DB) wait(op *writeOp) error {
	// Once queued, the operation is waited for even if ctx ends: whether
	// it committed must be known. The writer answers every operation it
	// takes before it stops; one it never took was not written.
	select {
	case err := <-op.done:
		return err
	case <-d.commit.closed:
		select {
		case err := <-op.done:
			return err
		default:
			return ErrClosed
		}
	}
}

func (d *DB) writer() {
	c := d.commit
	defer close(c.closed)
	for {
		var first *writeOp
		select {
		case first = <-c.ops:
		case <-c.stop:
			// What is queued already is written, then nothing more.
			var rest []*writeOp
			for len(c.ops) > 0 {
				rest = append(rest, <-c.ops)
			}
			for len(rest) > 0 {
				n := min(len(rest), maxBatch)
				d.runBatch(rest[:n])
				rest = rest[n:]
			}
			return
		}
		batch := []*writeOp{first}
	more:
		for len(batch) < maxBatch {
			select {
			case op := <-c.ops:
				batch = append(batch, op)
			default:
				break more
			}
		}
		d.runBatch(batch)
	}
}

// runBatch commits batch, running again without it any operation that
// failed.
func (d *DB) runBatch(batch []*writeOp) {
	for len(batch) > 0 {
		failed, err := d.commitOnce(batch)
		if failed < 0 {
			if err == nil { // counted before anyone is answered
				c := d.commit
				c.mu.Lock()
				c.batches++
				c.writes += int64(len(batch))
				c.mu.Unlock()
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
func (d *DB) commitOnce(batch []*writeOp) (int, error) {
	tx, err := d.db.BeginTx(context.Background(), nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return -1, fmt.Errorf("journal: begin: %w", err)
	}
	d.commit.counted = 0
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
	if d.commit.counted > 0 {
		d.commit.records += d.commit.counted
		d.continuityAfterCommit() // with the commit, before its callers go on
	}
	return -1, nil
}
