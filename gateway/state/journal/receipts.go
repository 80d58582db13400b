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

// Retention (DESIGN §8).
const (
	AnswerRetention  = 7 * 24 * time.Hour
	ReceiptRetention = 90 * 24 * time.Hour
	// CallRetention is how long the caller keeps a settled call's id.
	CallRetention = 91 * 24 * time.Hour
	// ClockSkew is added to the sweep watermark before an owner may say
	// never_arrived.
	ClockSkew = 10 * time.Minute
)

// Receipt is one request the owner received, keyed by (Caller, RequestID).
type Receipt struct {
	Caller     string // the caller's stable node ID
	RequestID  string
	Digest     string
	State      proto.ReceiptState
	CallerName string
	// CallerApp names the app that made the call, as the caller's Delta
	// said it (X-Delta-App), or "".
	CallerApp     string
	App           string
	Method        string
	Path          string
	ReceivedAt    time.Time
	UpdatedAt     time.Time
	Answer        *record.Answer // nil until answered, and after it expired
	AnswerExpired bool
	// Behind: State and Answer are held in memory, not yet written (the
	// journal could not write them; behind.go).
	Behind bool
	// CheckedBy, CheckedAt and CheckNote: a person here checked it
	// (CheckReceipt); CheckedBy says where ("the status page").
	CheckedBy string
	CheckedAt time.Time
	CheckNote string
	// CallerSettled is the caller's person's settlement (carried_out or
	// not_carried_out), as the caller's Delta told it at CallerSettledAt,
	// with their note.
	CallerSettled    string
	CallerSettledAt  time.Time
	CallerSettleNote string
	// Request is what the call carried, when kept and read
	// (WithReceiptRequests); nil otherwise.
	Request *record.Request
}

// Decision is what the owner does with an arriving call.
type Decision int

const (
	// Forward: new; recorded as running; hand it to the app once.
	Forward Decision = iota
	// Replay: answered before; send the stored answer again.
	Replay
	// Reused: the id was used for another request (422).
	Reused
	// Busy: the id is in another state (409 with that state).
	Busy
	// Later: the id is known and the arriving call's digest is not yet
	// (its body streams): read the body, then Decide with its digest.
	Later
)

// Decide is what the owner does with a call of digest arriving under an
// id it holds as old ("" for a digest not known yet).
func Decide(old *Receipt, digest string) Decision {
	switch {
	case old.State == proto.ReceiptFenced:
		return Busy
	case digest == "":
		return Later
	case old.Digest == "": // its body never arrived whole, or is arriving
		return Busy
	case old.Digest != digest:
		return Reused
	case old.State == proto.ReceiptAnswered && !old.AnswerExpired:
		return Replay
	}
	return Busy
}

const receiptCols = `caller, request_id, digest, state, caller_name, app, method, path,
	received_at, updated_at, answer_status, answer_headers, answer_body,
	answer_digest, answer_omitted, answer_expired, checked_by, checked_at, check_note,
	caller_settled, caller_settled_at, caller_settle_note, caller_app`

func scanReceipt(s interface{ Scan(...any) error }) (*Receipt, error) {
	var r Receipt
	var recv, upd int64
	var status sql.NullInt64
	var headers sql.NullString
	var body []byte
	var bodyDigest string
	var omitted, expired int
	var checked, settled sql.NullInt64
	err := s.Scan(&r.Caller, &r.RequestID, &r.Digest, &r.State, &r.CallerName, &r.App,
		&r.Method, &r.Path, &recv, &upd, &status, &headers, &body, &bodyDigest, &omitted, &expired,
		&r.CheckedBy, &checked, &r.CheckNote, &r.CallerSettled, &settled, &r.CallerSettleNote, &r.CallerApp)
	if err != nil {
		return nil, err
	}
	r.ReceivedAt, r.UpdatedAt = fromNanos(recv), fromNanos(upd)
	if checked.Valid {
		r.CheckedAt = fromNanos(checked.Int64)
	}
	if settled.Valid {
		r.CallerSettledAt = fromNanos(settled.Int64)
	}
	r.AnswerExpired = expired != 0
	if status.Valid {
		r.Answer = &record.Answer{Status: int(status.Int64), Headers: decodeHeaders(headers.String),
			Body: body, Omitted: omitted != 0, BodyDigest: bodyDigest}
	}
	return &r, nil
}

// Receive is the owner's one decision point for an arriving call: receipt,
// fence and the check for both in one BEGIN IMMEDIATE transaction, durable
// before anything is forwarded. r names the call; for Forward it is stored
// as running (with r.Digest "" when the body streams: SetReceiptDigest
// records it once the body has arrived). For the other decisions, old is
// the stored receipt.
func (d Receipts) Receive(ctx context.Context, r *Receipt) (dec Decision, old *Receipt, err error) {
	return d.receive(ctx, r, d.tx)
}

// ReceiveSmall is Receive for a call whose body is small enough to be
// taken in memory, and so is read, checked and handed to its app at
// once: a new receipt is committed without a flush of its own (a lazy
// write), and made durable by the flush of the next write about it,
// HandReceipt before the app has a byte, or FinishReceipt when the call
// is not forwarded. Until then nothing outside depends on it: a receipt
// that a power cut took back is of a call its app never had, and a
// caller that asks is told that it never arrived (a fence), which is
// then the truth. (A big body's receipt keeps its own flush: it may be
// minutes before the body is whole, and the flush is nothing beside it.)
func (d Receipts) ReceiveSmall(ctx context.Context, r *Receipt) (dec Decision, old *Receipt, err error) {
	return d.receive(ctx, r, d.txLazy)
}

func (d *store) receive(ctx context.Context, r *Receipt, write func(context.Context, func(*sql.Tx) error) error) (dec Decision, old *Receipt, err error) {
	err = write(ctx, func(tx *sql.Tx) error {
		old, err = scanReceipt(tx.QueryRowContext(ctx, `SELECT `+receiptCols+` FROM receipts WHERE caller = ? AND request_id = ?`, r.Caller, r.RequestID))
		switch {
		case err == nil:
			d.overlayReceipt(old)
			dec = Decide(old, r.Digest)
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("journal: look up receipt %s from %s: %w", r.RequestID, r.Caller, err)
		}
		now := d.now()
		r.State, r.ReceivedAt, r.UpdatedAt = proto.ReceiptRunning, now, now
		_, err = tx.ExecContext(ctx, `INSERT INTO receipts (caller, request_id, digest, state, caller_name, caller_app, app, method, path, received_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Caller, r.RequestID, r.Digest, proto.ReceiptRunning, r.CallerName, r.CallerApp, r.App, r.Method, r.Path, nanos(now), nanos(now))
		if err != nil {
			return fmt.Errorf("journal: record receipt %s from %s as running: %w", r.RequestID, r.Caller, err)
		}
		dec = Forward
		return d.countReceipt(ctx, tx)
	})
	if err == nil && dec == Forward {
		d.notify()
	}
	return dec, old, err
}

// Finish moves a running receipt to state (answered with ans, or
// not_carried_out, or app_unknown). It reports whether the receipt was
// still running.
func (d Receipts) Finish(ctx context.Context, caller, id string, state proto.ReceiptState, ans *record.Answer) (bool, error) {
	return d.finishReceipt(ctx, caller, id, state, ans)
}

func (d *store) finishReceipt(ctx context.Context, caller, id string, state proto.ReceiptState, ans *record.Answer) (bool, error) {
	var n int64
	now := nanos(d.now())
	err := d.tx(ctx, func(tx *sql.Tx) error {
		var res sql.Result
		var err error
		if ans != nil {
			res, err = tx.ExecContext(ctx, `UPDATE receipts SET state = ?, updated_at = ?, answer_status = ?, answer_headers = ?,
			answer_body = ?, answer_digest = ?, answer_omitted = ? WHERE caller = ? AND request_id = ? AND state = 'running'`,
				state, now, ans.Status, encodeHeaders(ans.Headers), ans.Body, ans.BodyDigest, boolInt(ans.Omitted), caller, id)
		} else {
			res, err = tx.ExecContext(ctx, `UPDATE receipts SET state = ?, updated_at = ? WHERE caller = ? AND request_id = ? AND state = 'running'`,
				state, now, caller, id)
		}
		if err != nil {
			return fmt.Errorf("journal: record receipt %s from %s as %s: %w", id, caller, state, err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return false, err
	}
	if n > 0 {
		d.notify()
	}
	return n == 1, nil
}

// Get returns one receipt as stored.
func (d Receipts) Get(ctx context.Context, caller, id string) (*Receipt, error) {
	r, err := scanReceipt(d.db.QueryRowContext(ctx, `SELECT `+receiptCols+` FROM receipts WHERE caller = ? AND request_id = ?`, caller, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("journal: receipt %s from %s: %w", id, caller, ErrNotFound)
	}
	d.overlayReceipt(r)
	return r, err
}

// List lists every receipt, oldest first (for tests and the status page).
func (d Receipts) List(ctx context.Context) ([]*Receipt, error) {
	return d.queryReceipts(ctx, `SELECT `+receiptCols+` FROM receipts ORDER BY received_at`)
}

// queryReceipts runs q and reads its rows as receipts, with what the
// journal holds in memory shown.
func (d *store) queryReceipts(ctx context.Context, q string, args ...any) ([]*Receipt, error) {
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Receipt
	for rows.Next() {
		r, err := scanReceipt(rows)
		if err != nil {
			return nil, err
		}
		d.overlayReceipt(r)
		out = append(out, r)
	}
	return out, rows.Err()
}

// Lookup answers a caller's question about call id (GET /delta/v1/calls/{id}).
// If the owner has never seen the id, it writes a fence in the same
// transaction and reports proto.ReceiptNeverArrived, unless the call is older than the
// sweep watermark (plus ClockSkew): then it reports proto.ReceiptExpired, because a
// receipt may have been swept. A fenced id reports proto.ReceiptNeverArrived again.
// mayFence, if not nil, is asked before a fence is written; when it says
// no, nothing is written and the error is ErrTooManyFences.
func (d Receipts) Lookup(ctx context.Context, caller, id string, createdAt time.Time, mayFence func() bool) (*Receipt, error) {
	var out *Receipt
	fenced := false
	err := d.tx(ctx, func(tx *sql.Tx) error {
		r, err := scanReceipt(tx.QueryRowContext(ctx, `SELECT `+receiptCols+` FROM receipts WHERE caller = ? AND request_id = ?`, caller, id))
		if err == nil {
			d.overlayReceipt(r)
			out = r
			if r.State == proto.ReceiptFenced {
				out.State = proto.ReceiptNeverArrived
			}
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("journal: look up receipt %s from %s: %w", id, caller, err)
		}
		var swept sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(swept_until) FROM sweeps WHERE caller IN (?, '*')`, caller).Scan(&swept); err != nil {
			return fmt.Errorf("journal: read sweep watermark: %w", err)
		}
		if swept.Valid && (createdAt.IsZero() || createdAt.Before(fromNanos(swept.Int64).Add(ClockSkew))) {
			out = &Receipt{Caller: caller, RequestID: id, State: proto.ReceiptExpired}
			return nil
		}
		if mayFence != nil && !mayFence() {
			return ErrTooManyFences
		}
		now := d.now()
		if _, err := tx.ExecContext(ctx, `INSERT INTO receipts (caller, request_id, digest, state, received_at, updated_at) VALUES (?, ?, '', 'fenced', ?, ?)`,
			caller, id, nanos(now), nanos(now)); err != nil {
			return fmt.Errorf("journal: write fence for %s from %s: %w", id, caller, err)
		}
		if err := d.countReceipt(ctx, tx); err != nil {
			return err
		}
		fenced = true
		out = &Receipt{Caller: caller, RequestID: id, State: proto.ReceiptNeverArrived, ReceivedAt: now, UpdatedAt: now}
		return nil
	})
	if fenced && err == nil {
		d.notify()
	}
	return out, err
}

// Hand records, durably, that a received call is being handed to
// its app, before the first byte goes to it: until then a restart knows
// the app never had it (RecoverReceipts).
func (d Receipts) Hand(ctx context.Context, caller, id string) error {
	return d.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE receipts SET handed_at = ? WHERE caller = ? AND request_id = ? AND state = 'running'`, nanos(d.now()), caller, id)
		if err != nil {
			return fmt.Errorf("journal: record that call %s from %s is handed to its app: %w", id, caller, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("journal: call %s from %s is not running, so it is not handed to its app", id, caller)
		}
		return nil
	})
}

// Recover settles every receipt still "running" after a restart
// (nothing is running any more): one whose call was never handed to its
// app (HandReceipt) is "not_carried_out", the app never had it; one that
// was is "interrupted", its app may have acted. It returns how many of
// each.
func (d Receipts) Recover(ctx context.Context) (interrupted, notHanded int, err error) {
	err = d.tx(ctx, func(tx *sql.Tx) error {
		now := nanos(d.now())
		res, err := tx.ExecContext(ctx, `UPDATE receipts SET state = 'not_carried_out', updated_at = ? WHERE state = 'running' AND handed_at IS NULL`, now)
		if err != nil {
			return fmt.Errorf("journal: recover running receipts: %w", err)
		}
		n, _ := res.RowsAffected()
		notHanded = int(n)
		if res, err = tx.ExecContext(ctx, `UPDATE receipts SET state = 'interrupted', updated_at = ? WHERE state = 'running'`, now); err != nil {
			return fmt.Errorf("journal: recover running receipts: %w", err)
		}
		n, _ = res.RowsAffected()
		interrupted = int(n)
		return nil
	})
	return interrupted, notHanded, err
}

// SweepResult counts what a sweep removed.
type SweepResult struct {
	AnswersExpired int64
	ReceiptsGone   int64
	CallsGone      int64
	RequestsGone   int64
}

// Sweep applies retention at now: answers older than 7 days are dropped
// (answer_expired), receipts and fences older than 90 days are deleted and
// the watermark moves to that time, and settled calls older than
// CallRetention leave the caller's journal. Unsettled calls are never
// removed.
func (d Receipts) Sweep(ctx context.Context, now time.Time) (SweepResult, error) {
	var s SweepResult
	err := d.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE receipts SET answer_status = NULL, answer_headers = NULL, answer_body = NULL, answer_expired = 1
			WHERE state = 'answered' AND answer_expired = 0 AND updated_at < ?`, nanos(now.Add(-AnswerRetention)))
		if err != nil {
			return fmt.Errorf("journal: expire answers: %w", err)
		}
		s.AnswersExpired, _ = res.RowsAffected()
		cutoff := nanos(now.Add(-ReceiptRetention))
		res, err = tx.ExecContext(ctx, `DELETE FROM receipts WHERE received_at < ? AND state != 'running'`, cutoff)
		if err != nil {
			return fmt.Errorf("journal: delete old receipts: %w", err)
		}
		s.ReceiptsGone, _ = res.RowsAffected()
		if _, err := tx.ExecContext(ctx, `INSERT INTO sweeps (caller, swept_until) VALUES ('*', ?)
			ON CONFLICT (caller) DO UPDATE SET swept_until = MAX(swept_until, excluded.swept_until)`, cutoff); err != nil {
			return fmt.Errorf("journal: move sweep watermark: %w", err)
		}
		res, err = tx.ExecContext(ctx, `DELETE FROM calls WHERE created_at < ? AND state != 'sending' AND state NOT IN `+unsettledSQL,
			nanos(now.Add(-CallRetention)))
		if err != nil {
			return fmt.Errorf("journal: delete old calls: %w", err)
		}
		s.CallsGone, _ = res.RowsAffected()
		if s.RequestsGone, err = sweepRequests(ctx, tx, now); err != nil {
			return err
		}
		n, err := sweepReceiptRequests(ctx, tx, now)
		s.RequestsGone += n
		return err
	})
	return s, err
}

// ReceiptShown is how long the status page and GET /v1/receipts look back.
const ReceiptShown = 7 * 24 * time.Hour

// Recent lists the receipts received since since, those a person
// has to check first (Receipt.ToCheck), then running, then
// the rest, newest first within each; state, if not empty, keeps only
// that state. At most limit (500 if 0).
func (d Receipts) Recent(ctx context.Context, since time.Time, state proto.ReceiptState, limit int) ([]*Receipt, error) {
	if limit <= 0 {
		limit = 500
	}
	q := `SELECT ` + receiptCols + ` FROM receipts WHERE received_at >= ?`
	args := []any{nanos(since)}
	if state != "" {
		q += ` AND state = ?`
		args = append(args, state)
	}
	q += ` ORDER BY CASE WHEN ` + toCheckSQLOf("receipts") + ` THEN 0 WHEN state = 'running' THEN 1 ELSE 2 END, received_at DESC LIMIT ?`
	args = append(args, limit)
	out, err := d.queryReceipts(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("journal: list receipts: %w", err)
	}
	return out, nil
}
