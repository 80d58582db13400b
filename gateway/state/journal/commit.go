package journal

import (
	"context"
	"database/sql"

	"github.com/delta-roads/delta/gateway/state/journal/groupcommit"
)

// Every write transaction of the journal goes to one writer, in group
// commits (groupcommit: one fsync of the WAL for the writes waiting
// together, each caller answered only once its write is durable). A lazy
// write (txLazy, txQueued) is answered once committed, and durable with
// the next flushed commit.

// ErrClosed is a write after Close.
var ErrClosed = groupcommit.ErrClosed

func (d *store) startWriter() {
	d.commit = groupcommit.Start(d.db, groupcommit.Hooks{
		Begin: func() { d.counted = 0 },
		Committed: func(flushed bool) {
			// The file never counts more than is durable: a lazy
			// commit's records wait for the next flushed one.
			d.unflushed += d.counted
			if flushed && d.unflushed > 0 {
				d.records += d.unflushed
				d.unflushed = 0
				d.continuityAfterCommit() // with the commit, before its callers go on
			}
		},
	})
}

// stopWriter lets the writer finish what is queued and stop.
func (d *store) stopWriter() { d.commit.Stop() }

// tx runs f in the next group commit, and returns once it is durable (or
// failed, rolled back).
func (d *store) tx(ctx context.Context, f func(*sql.Tx) error) error { return d.commit.Tx(ctx, f) }

// txLazy runs f in the next group commit, and returns once it is
// committed (groupcommit.Writer.TxLazy): durable with the next flushed
// commit, which must come before anything outside depends on f's rows.
func (d *store) txLazy(ctx context.Context, f func(*sql.Tx) error) error {
	return d.commit.TxLazy(ctx, f)
}

// txQueued queues f for the next group commit and returns at once; then
// gets its result from the writer itself (groupcommit.Writer.TxQueued).
func (d *store) txQueued(ctx context.Context, f func(*sql.Tx) error, then func(error)) {
	d.commit.TxQueued(ctx, f, then)
}
