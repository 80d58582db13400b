package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// The owner's side of a settlement (DESIGN §4, docs/protocol.md "What the
// owner keeps"): what a receipt's call carried, a person here checking it,
// and the caller's person's settlement, told by the caller's Delta. The
// caller's side: the settlements a person made that the owner has not
// been told of yet.

// ToCheck reports whether a person here should check the receipt: its
// app may or may not have acted (app_unknown, interrupted), and neither a
// person here nor the caller's person has said what happened.
func (r *Receipt) ToCheck() bool {
	return (r.State == proto.ReceiptAppUnknown || r.State == proto.ReceiptInterrupted) && r.CheckedAt.IsZero() && r.CallerSettled == ""
}

// KeepReceived records what the call (caller, id) carried, by the caller's
// rule (KeepRequest). It is queued behind the receipt's own writes and
// ahead of its outcome, and not waited for: the app is asked at once. The
// headers are read before it returns; the body must not change. An
// error (the journal cannot write) goes to onErr, and the receipt then
// says nothing was kept.
func (d Receipts) KeepReceived(ctx context.Context, caller, id string, r *record.Request, onErr func(error)) {
	ctx = context.WithoutCancel(ctx)
	headers := encodeHeaders(r.Headers) // now: the caller may change r.Headers once this returns
	d.txQueued(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO receipt_requests (caller, request_id, headers, body, size, truncated) VALUES (?, ?, ?, ?, ?, ?)`,
			caller, id, headers, r.Body, r.Size, boolInt(r.Truncated))
		if err != nil {
			return fmt.Errorf("journal: record what call %s from %s carried: %w", id, caller, err)
		}
		return nil
	}, func(err error) {
		if err != nil && onErr != nil {
			onErr(err)
		}
	})
}

// WithRequests reads what each receipt's call carried into it.
func (d Receipts) WithRequests(ctx context.Context, rs []*Receipt) error {
	for _, r := range rs {
		var headers string
		var trunc, forgotten int
		q := &record.Request{}
		err := d.db.QueryRowContext(ctx, `SELECT headers, body, size, truncated, forgotten FROM receipt_requests WHERE caller = ? AND request_id = ?`,
			r.Caller, r.RequestID).Scan(&headers, &q.Body, &q.Size, &trunc, &forgotten)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue
		case err != nil:
			return fmt.Errorf("journal: read what call %s from %s carried: %w", r.RequestID, r.Caller, err)
		}
		q.Headers, q.Truncated, q.Forgotten = decodeHeaders(headers), trunc != 0, forgotten != 0
		r.Request = q
	}
	return nil
}

// ForgetReceived drops what the received call id (from caller, or from
// any caller when "") carried: its headers and body; its size stays.
func (d Receipts) ForgetReceived(ctx context.Context, caller, id string) error {
	var n int64
	err := d.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE receipt_requests SET headers = '{}', body = NULL, forgotten = 1 WHERE request_id = ? AND (? = '' OR caller = ?)`, id, caller, caller)
		if err != nil {
			return fmt.Errorf("journal: forget what received call %s carried: %w", id, err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("journal: what received call %s carried: %w", id, ErrNotFound)
	}
	d.notify()
	return nil
}

// Find returns the receipts under request id from any caller,
// with what their calls carried (a request id is unique per caller; two
// callers could, in principle, use the same one).
func (d Receipts) Find(ctx context.Context, id string) ([]*Receipt, error) {
	out, err := d.queryReceipts(ctx, `SELECT `+receiptCols+` FROM receipts WHERE request_id = ? AND state != 'fenced' ORDER BY received_at`, id)
	if err != nil {
		return nil, fmt.Errorf("journal: look up receipt %s: %w", id, err)
	}
	return out, d.WithRequests(ctx, out)
}

// CountToCheck counts the receipts received since since that a person
// here should check (Receipt.ToCheck): the same as RecentReceipts lists.
func (d Receipts) CountToCheck(ctx context.Context, since time.Time) (int, error) {
	var n int
	err := d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM receipts WHERE received_at >= ? AND `+toCheckSQLOf("receipts"), nanos(since)).Scan(&n)
	return n, err
}

// ErrNotCheckable refuses a person's check of a receipt whose app has not
// finished with it (running) or that never arrived (fenced).
var ErrNotCheckable = errors.New("only a call the app has finished with can be marked checked")

// ErrCheckedAlready refuses a second check of a receipt: a person's check
// is kept as first made (who, when, their note), never silently replaced.
var ErrCheckedAlready = errors.New("it was checked already; a check is kept as first made")

// Check records that a person here checked receipt (caller, id):
// by names where ("the status page", "the local API"). A second check is
// refused (ErrCheckedAlready, with the first's words). It returns the
// receipt as it stands, with what it carried.
func (d Receipts) Check(ctx context.Context, caller, id, by, note string) (*Receipt, error) {
	var n int64
	err := d.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE receipts SET checked_by = ?, checked_at = ?, check_note = ?
			WHERE caller = ? AND request_id = ? AND checked_at IS NULL AND state NOT IN ('running', 'fenced')`, by, nanos(d.now()), note, caller, id)
		if err != nil {
			return fmt.Errorf("journal: mark receipt %s from %s checked: %w", id, caller, err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n > 0 {
		d.notify()
	}
	r, err := d.Get(ctx, caller, id)
	if err != nil {
		return nil, err
	}
	if err := d.WithRequests(ctx, []*Receipt{r}); err != nil {
		return nil, err
	}
	switch {
	case n == 0 && r.CheckedAt.IsZero():
		return r, fmt.Errorf("%w (it is %s)", ErrNotCheckable, r.State)
	case n == 0:
		first := fmt.Sprintf("checked from %s at %s", r.CheckedBy, r.CheckedAt.Local().Format("Jan 2 15:04:05"))
		if r.CheckNote != "" {
			first += fmt.Sprintf(", noting %q", r.CheckNote)
		}
		return r, fmt.Errorf("call %s from %s: %w: %s", id, r.CallerName, ErrCheckedAlready, first)
	}
	return r, nil
}

// CallerSettled records the caller's person's settlement of receipt
// (caller, id), as the caller's Delta told it: to (carried_out or
// not_carried_out) with their note, made at (the caller's clock; a time
// after now, or none, is taken as now: it may be told long after it was
// made, never before; nor before the call arrived here). The first word
// is kept (a person's settlement is final at the caller): the same word
// told again updates its note, another one changes nothing (issue 34 U4).
// It reports ErrNotFound when no receipt (or only a fence) is kept.
func (d Receipts) CallerSettled(ctx context.Context, caller, id, to, note string, at time.Time) (*Receipt, error) {
	if now := d.now(); at.IsZero() || at.After(now) {
		at = now
	}
	var n int64
	err := d.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE receipts SET caller_settled = ?, caller_settled_at = MAX(?, received_at), caller_settle_note = ?
			WHERE caller = ? AND request_id = ? AND state != 'fenced' AND caller_settled IN ('', ?)`, to, nanos(at), note, caller, id, to)
		if err != nil {
			return fmt.Errorf("journal: record the caller's settlement of %s from %s: %w", id, caller, err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		// Another word kept already, or no receipt at all.
		r, err := d.Get(ctx, caller, id)
		if err != nil || r.State == proto.ReceiptFenced {
			return nil, fmt.Errorf("journal: receipt %s from %s: %w", id, caller, ErrNotFound)
		}
		return r, nil
	}
	d.notify()
	return d.Get(ctx, caller, id)
}

// UntoldSettlements are the calls to peer ("" for every peer) that a
// person settled and whose owner has not been told yet, oldest first.
func (d Calls) UntoldSettlements(ctx context.Context, peer string) ([]*record.Call, error) {
	q := `SELECT ` + callCols + ` FROM calls WHERE settled_by != '' AND settle_told = 0`
	var args []any
	if peer != "" {
		q += ` AND peer = ?`
		args = append(args, peer)
	}
	calls, err := d.queryCalls(ctx, q+` ORDER BY updated_at LIMIT 100`, args...)
	if err != nil {
		return nil, fmt.Errorf("journal: list settlements to tell: %w", err)
	}
	return calls, nil
}

// SettlementTold records that call id's owner was told of its person's
// settlement (or has no receipt to tell it to).
func (d Calls) SettlementTold(ctx context.Context, id string) error {
	return d.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE calls SET settle_told = 1 WHERE request_id = ?`, id); err != nil {
			return fmt.Errorf("journal: record that call %s's settlement was told: %w", id, err)
		}
		return nil
	})
}

// sweepReceiptRequests drops what receipts' calls carried once they are
// RequestRetention old and not to check, then, over maxRequestStore, the
// oldest of those.
func sweepReceiptRequests(ctx context.Context, tx *sql.Tx, now time.Time) (int64, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM receipt_requests WHERE (caller, request_id) IN (
		SELECT q.caller, q.request_id FROM receipt_requests q CROSS JOIN receipts r ON r.caller = q.caller AND r.request_id = q.request_id
		WHERE NOT `+toCheckSQLOf("r")+` AND r.state != 'running' AND r.received_at < ?)`, nanos(now.Add(-RequestRetention)))
	if err != nil {
		return 0, fmt.Errorf("journal: drop what old receipts carried: %w", err)
	}
	n, _ := res.RowsAffected()
	m, err := dropOverBound(ctx, tx, "receipt_requests", `SELECT q.rowid, COALESCE(LENGTH(q.body), 0) FROM receipt_requests q CROSS JOIN receipts r ON r.caller = q.caller AND r.request_id = q.request_id
		WHERE NOT `+toCheckSQLOf("r")+` AND r.state != 'running' ORDER BY r.received_at DESC, r.caller, r.request_id`)
	return n + m, err
}

// toCheckSQLOf is Receipt.ToCheck in SQL, on the receipts table named t.
func toCheckSQLOf(t string) string {
	return `(` + t + `.state IN ('app_unknown', 'interrupted') AND ` + t + `.checked_at IS NULL AND ` + t + `.caller_settled = '')`
}
