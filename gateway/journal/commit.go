package journal

import (
	"context"
	"database/sql"

	"github.com/delta-roads/delta/gateway/journal/groupcommit"
)

// Every write transaction of the journal goes to one writer, in group
// commits (groupcommit: one fsync of the WAL for the writes waiting
// together, each caller answered only once its write is durable).

// ErrClosed is a write after Close.
var ErrClosed = groupcommit.ErrClosed

func (d *DB) startWriter() {
	d.commit = groupcommit.Start(d.db, groupcommit.Hooks{
		Begin: func() { d.counted = 0 },
		Committed: func() {
			if d.counted > 0 {
				d.records += d.counted
				d.continuityAfterCommit() // with the commit, before its callers go on
			}
		},
	})
}

// stopWriter lets the writer finish what is queued and stop.
func (d *DB) stopWriter() { d.commit.Stop() }

// tx runs f in the next group commit, and returns once it is durable (or
// failed, rolled back).
func (d *DB) tx(ctx context.Context, f func(*sql.Tx) error) error { return d.commit.Tx(ctx, f) }

// txQueued queues f for the next group commit and returns at once; then
// gets its result from the writer itself (groupcommit.Writer.TxQueued).
func (d *DB) txQueued(ctx context.Context, f func(*sql.Tx) error, then func(error)) {
	d.commit.TxQueued(ctx, f, then)
}
