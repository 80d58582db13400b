// Package groupcommit runs the write transactions of one SQLite database
// in group commits. Every write goes to one writer, which runs the ones
// waiting together in one transaction and one commit: one fsync of the
// WAL for all of them. Each caller is answered only after that commit
// returns, so a row is durable before the step that depends on it,
// exactly as with a transaction of its own; only the fsync is shared. A
// writer that finds nobody waiting commits a lone transaction at once: a
// single call pays nothing for the batching.
//
// A lazy write (TxLazy, TxQueued) is one that nothing outside the process
// depends on until a later flushed write does: a batch of only such writes
// commits without a flush of its own (synchronous=NORMAL on the writer's
// connection), and the next flushed commit makes it durable, because in
// WAL mode that commit's fsync of the WAL covers every frame before its
// own. The rows are in the database, for every reader, as soon as the
// lazy commit returns; only a power loss before the next flush can take
// them back (never a crash of the process: its writes are the kernel's by
// then), and then together with everything after them.
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
	"database/sql/driver"
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
// callers is answered, with flushed false for a lazy batch (durable only
// with the next flushed commit). Either may be nil.
type Hooks struct {
	Begin     func()
	Committed func(flushed bool)
}

type writeOp struct {
	ctx  context.Context
	f    func(*sql.Tx) error
	done chan error
	// then, if set, is told the result instead of done, by the writer
	// itself (TxQueued: nobody waits, and no goroutine is spent on it).
	then func(error)
	// lazy: the op needs no flush of its own (TxLazy, TxQueued).
	lazy bool
}

// Writer is the one writer of a database.
type Writer struct {
	db     *sql.DB
	hooks  Hooks
	ops    chan *writeOp
	stop   chan struct{}
	closed chan struct{}
	once   sync.Once

	// conn is the writer's own connection, taken at its first commit
	// and kept, so that its synchronous setting (sync: "" unknown) is
	// the one each batch needs.
	conn *sql.Conn
	sync string

	mu      sync.Mutex
	batches int64 // commits made
	flushed int64 // of them, with a flush of their own
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

// Flushes is how many of the commits made had a flush of their own.
func (w *Writer) Flushes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushed
}

// Queued is how many operations wait for the writer.
func (w *Writer) Queued() int { return len(w.ops) }

// Tx runs f in the next group commit, and returns once it is durable (or
// failed, rolled back).
func (w *Writer) Tx(ctx context.Context, f func(*sql.Tx) error) error {
	return w.tx(ctx, f, false)
}

// TxLazy runs f in the next group commit, and returns once it is
// committed (or failed, rolled back): its rows are read by everyone at
// once, and durable with the next flushed commit (Tx), which must come
// before anything outside the process depends on them.
func (w *Writer) TxLazy(ctx context.Context, f func(*sql.Tx) error) error {
	return w.tx(ctx, f, true)
}

func (w *Writer) tx(ctx context.Context, f func(*sql.Tx) error, lazy bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := &writeOp{ctx: ctx, f: f, done: make(chan error, 1), lazy: lazy}
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
// quick. It is lazy (TxLazy). Operations commit in the order they were
// queued, so one queued before a Tx is durable no later than it.
func (w *Writer) TxQueued(ctx context.Context, f func(*sql.Tx) error, then func(error)) {
	op := &writeOp{ctx: ctx, f: f, then: then, lazy: true}
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
	defer w.releaseConn()
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
		flush := !allLazy(batch)
		failed, err := w.commitOnce(batch, flush)
		if failed < 0 {
			if err == nil { // counted before anyone is answered
				w.mu.Lock()
				w.batches++
				if flush {
					w.flushed++
				}
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

// allLazy reports whether no operation of batch needs a flush.
func allLazy(batch []*writeOp) bool {
	for _, op := range batch {
		if !op.lazy {
			return false
		}
	}
	return true
}

// Synchronous settings of the writer's connection: FULL flushes the WAL at
// each commit, NORMAL leaves it to the next FULL commit (or checkpoint).
const (
	syncFull   = "FULL"
	syncNormal = "NORMAL"
)

// connWith returns the writer's connection set to sync.
func (w *Writer) connWith(sync string) (*sql.Conn, error) {
	ctx := context.Background()
	if w.conn == nil {
		c, err := w.db.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("journal: open the writer's connection: %w", err)
		}
		w.conn, w.sync = c, ""
	}
	if w.sync != sync {
		if _, err := w.conn.ExecContext(ctx, "PRAGMA synchronous = "+sync); err != nil {
			w.dropConn()
			return nil, fmt.Errorf("journal: set synchronous=%s on the writer's connection: %w", sync, err)
		}
		w.sync = sync
	}
	return w.conn, nil
}

// dropConn closes the writer's connection for good (not back to the
// pool: its setting is not known).
func (w *Writer) dropConn() {
	w.conn.Raw(func(any) error { return driver.ErrBadConn })
	w.conn.Close()
	w.conn, w.sync = nil, ""
}

// releaseConn gives the writer's connection back to the pool, set as the
// pool's others are (FULL), or drops it.
func (w *Writer) releaseConn() {
	if w.conn == nil {
		return
	}
	if w.sync != syncFull {
		if _, err := w.conn.ExecContext(context.Background(), "PRAGMA synchronous = "+syncFull); err != nil {
			w.dropConn()
			return
		}
	}
	w.conn.Close()
	w.conn = nil
}

// commitOnce runs batch in one transaction, with a flush of its own or
// without. It returns the index of the operation that failed (the
// transaction rolled back), or -1 with the commit's result.
func (w *Writer) commitOnce(batch []*writeOp, flush bool) (int, error) {
	sync := syncFull
	if !flush {
		sync = syncNormal
	}
	conn, err := w.connWith(sync)
	if err != nil {
		return -1, err
	}
	tx, err := conn.BeginTx(context.Background(), nil) // BEGIN IMMEDIATE (_txlock)
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
		w.hooks.Committed(flush)
	}
	return -1, nil
}
