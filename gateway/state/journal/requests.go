package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/delta-roads/delta/gateway/wire/record"
)

// Retention of what calls sent.
const (
	// RequestRetention is how long a settled call's request is kept.
	RequestRetention = 7 * 24 * time.Hour
)

// maxRequestStore bounds the bodies kept for settled calls: over it, the
// oldest settled go first. Unsettled calls keep theirs. (A variable for
// tests.)
var maxRequestStore int64 = 32 << 20

func putRequest(ctx context.Context, tx *sql.Tx, id string, r *record.Request) error {
	_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO call_requests (request_id, headers, body, size, truncated) VALUES (?, ?, ?, ?, ?)`,
		id, encodeHeaders(r.Headers), r.Body, r.Size, boolInt(r.Truncated))
	if err != nil {
		return fmt.Errorf("journal: record the request of call %s: %w", id, err)
	}
	return nil
}

// withRequests reads the kept requests of calls into them.
func (d *store) withRequests(ctx context.Context, calls []*record.Call) error {
	return d.forCalls(ctx, calls, "requests", `SELECT request_id, headers, body, size, truncated, forgotten FROM call_requests
		WHERE request_id IN`, "", func(rows *sql.Rows) (string, func(*record.Call), error) {
		var id, headers string
		r := &record.Request{}
		var trunc, forgotten int
		err := rows.Scan(&id, &headers, &r.Body, &r.Size, &trunc, &forgotten)
		r.Headers, r.Truncated, r.Forgotten = decodeHeaders(headers), trunc != 0, forgotten != 0
		return id, func(c *record.Call) { c.Request = r }, err
	})
}

// WithRequests reads the kept requests of calls into them (the menu and
// the page show them for unsettled calls).
func (d Calls) WithRequests(ctx context.Context, calls []*record.Call) error {
	return d.withRequests(ctx, calls)
}

// RequestBytes is the size of the request bodies kept.
func (d Calls) RequestBytes(ctx context.Context) (int64, error) {
	var n int64
	err := d.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(LENGTH(body)), 0) FROM call_requests`).Scan(&n)
	return n, err
}

// sweepRequests drops the requests of calls settled longer than
// RequestRetention ago, then, while the settled ones' bodies exceed
// maxRequestStore, the oldest settled ones. It returns how many it dropped.
func sweepRequests(ctx context.Context, tx *sql.Tx, now time.Time) (int64, error) {
	// Driven from call_requests (the few kept requests: CROSS JOIN keeps
	// it the outer table), never a scan of every call: with 1M calls the
	// scan held the writer 208 ms at every sweep.
	res, err := tx.ExecContext(ctx, `DELETE FROM call_requests WHERE request_id IN (
		SELECT r.request_id FROM call_requests r CROSS JOIN calls c ON c.request_id = r.request_id
		WHERE c.state != 'sending' AND c.state NOT IN `+unsettledSQL+` AND c.updated_at < ?)`,
		nanos(now.Add(-RequestRetention)))
	if err != nil {
		return 0, fmt.Errorf("journal: drop old requests: %w", err)
	}
	n, _ := res.RowsAffected()
	// The bound: newest settled first, keep them while they fit.
	m, err := dropOverBound(ctx, tx, "call_requests", `SELECT r.rowid, COALESCE(LENGTH(r.body), 0) FROM call_requests r CROSS JOIN calls c ON c.request_id = r.request_id
		WHERE c.state != 'sending' AND c.state NOT IN `+unsettledSQL+` ORDER BY c.updated_at DESC, c.request_id`)
	return n + m, err
}

// dropOverBound deletes from table (call_requests, receipt_requests) the
// rows past maxRequestStore bytes of body, in the order q lists them
// (their rowid and body size, those to keep first).
func dropOverBound(ctx context.Context, tx *sql.Tx, table, q string) (int64, error) {
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("journal: size the bodies kept in %s: %w", table, err)
	}
	var total int64
	var drop []any
	for rows.Next() {
		var rowid, size int64
		if err := rows.Scan(&rowid, &size); err != nil {
			rows.Close()
			return 0, fmt.Errorf("journal: size the bodies kept in %s: %w", table, err)
		}
		if total += size; total > maxRequestStore {
			drop = append(drop, rowid)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("journal: size the bodies kept in %s: %w", table, err)
	}
	var n int64
	for len(drop) > 0 {
		batch := drop[:min(len(drop), 500)]
		drop = drop[len(batch):]
		res, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE rowid IN (`+placeholders(len(batch))+`)`, batch...)
		if err != nil {
			return n, fmt.Errorf("journal: drop the bodies in %s over the %d-byte bound: %w", table, maxRequestStore, err)
		}
		m, _ := res.RowsAffected()
		n += m
	}
	return n, nil
}

// ErrNotSettleable refuses a person's settlement of a call that is not
// unknown or needs_person.
var ErrNotSettleable = errors.New("only a call whose outcome is unknown or needs a person can be settled by a person")

// SettleByPerson records a person's settlement of call id: to (carried_out
// or not_carried_out), with their note. It is a compare-and-set from
// unknown or needs_person: a reconciler that settled it first wins, and
// the person is told what it is now (ErrNotSettleable, with cur).
func (d Calls) SettleByPerson(ctx context.Context, id string, to record.CallState, note string) (cur *record.Call, err error) {
	if to != record.CarriedOut && to != record.NotCarriedOut {
		return nil, fmt.Errorf("journal: a person settles a call as carried_out or not_carried_out, not %q", to)
	}
	words := map[record.CallState]string{record.CarriedOut: "it happened", record.NotCarriedOut: "it did not happen"}[to]
	detail := "a person settled it: " + words
	if note != "" {
		detail += " (" + note + ")"
	}
	var moved bool
	err = d.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE calls SET state = ?, detail = ?, settled_by = 'a person', settle_note = ?, next_ask_at = NULL, updated_at = ?
			WHERE request_id = ? AND state IN (?, ?)`, to, detail, note, nanos(d.now()), id, record.Unknown, record.NeedsPerson)
		if err != nil {
			return fmt.Errorf("journal: settle call %s: %w", id, err)
		}
		m, _ := res.RowsAffected()
		moved = m == 1
		return nil
	})
	if err != nil {
		return nil, err
	}
	if moved {
		d.notify()
	}
	cur, cerr := d.Get(ctx, id)
	if cerr != nil {
		return nil, cerr
	}
	if !moved {
		return cur, fmt.Errorf("%w (it is %s)", ErrNotSettleable, cur.State)
	}
	return cur, nil
}

// ForgetRequest drops what call id sent (its kept headers and body; its
// size stays), at a person's request: a body that should not be kept. The
// call's record, digest and outcome stay. It reports ErrNotFound for a
// call the journal keeps no request of.
func (d Calls) ForgetRequest(ctx context.Context, id string) error {
	var n int64
	err := d.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE call_requests SET headers = '{}', body = NULL, forgotten = 1 WHERE request_id = ?`, id)
		if err != nil {
			return fmt.Errorf("journal: forget the request of call %s: %w", id, err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("journal: the request of call %s: %w", id, ErrNotFound)
	}
	d.notify()
	return nil
}
