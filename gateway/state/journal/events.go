package journal

import (
	"context"
	"fmt"

	"github.com/delta-roads/delta/gateway/wire/record"
)

// LastEventSeq returns the newest event's sequence number, 0 if none: where
// a reader that cares only about what happens from now on starts.
func (d *DB) LastEventSeq(ctx context.Context) (int64, error) {
	var n int64
	err := d.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM call_events`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("journal: read the newest call event: %w", err)
	}
	return n, nil
}

// EventsAfter returns up to limit events with Seq > after, oldest first.
func (d *DB) EventsAfter(ctx context.Context, after int64, limit int) ([]record.Event, error) {
	return d.events(ctx, `WHERE e.seq > ? ORDER BY e.seq LIMIT ?`, after, limit)
}

// History returns call id's events, oldest first.
func (d *DB) History(ctx context.Context, id string) ([]record.Event, error) {
	return d.events(ctx, `WHERE e.request_id = ? ORDER BY e.seq`, id)
}

func (d *store) events(ctx context.Context, where string, args ...any) ([]record.Event, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT e.seq, e.request_id, e.at, e.state, e.owner_state, e.dismissed, e.detail,
		COALESCE((SELECT p.state FROM call_events p WHERE p.request_id = e.request_id AND p.seq < e.seq ORDER BY p.seq DESC LIMIT 1), '')
		FROM call_events e `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("journal: read call events: %w", err)
	}
	defer rows.Close()
	var out []record.Event
	for rows.Next() {
		var e record.Event
		var at int64
		var dis int
		if err := rows.Scan(&e.Seq, &e.RequestID, &at, &e.State, &e.OwnerState, &dis, &e.Detail, &e.From); err != nil {
			return nil, fmt.Errorf("journal: read call events: %w", err)
		}
		e.At, e.Dismissed = fromNanos(at), dis != 0
		out = append(out, e)
	}
	return out, rows.Err()
}
