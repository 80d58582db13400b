package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/delta-roads/delta/gateway/wire/record"
)

const callCols = `request_id, peer, app, caller_app, method, path, digest, state, outcome,
	dismissed, detail, owner_state, created_at, updated_at, answer_status,
	answer_headers, answer_body, answer_omitted, asks, next_ask_at, dismissed_by, settled_by, settle_note, door, grpc`

func scanCall(s interface{ Scan(...any) error }) (*record.Call, error) {
	var c record.Call
	var created, updated int64
	var status, next sql.NullInt64
	var headers sql.NullString
	var body []byte
	var dismissed, omitted int
	err := s.Scan(&c.RequestID, &c.Peer, &c.App, &c.CallerApp, &c.Method, &c.Path,
		&c.Digest, &c.State, &c.Outcome, &dismissed, &c.Detail, &c.OwnerState,
		&created, &updated, &status, &headers, &body, &omitted, &c.Asks, &next, &c.DismissedBy, &c.SettledBy, &c.SettleNote, &c.Door, &c.GRPC)
	if err != nil {
		return nil, err
	}
	c.Dismissed = dismissed != 0
	c.CreatedAt, c.UpdatedAt = fromNanos(created), fromNanos(updated)
	if next.Valid {
		c.NextAskAt = fromNanos(next.Int64)
	}
	if status.Valid {
		c.Answer = &record.Answer{Status: int(status.Int64), Headers: decodeHeaders(headers.String), Body: body, Omitted: omitted != 0}
	}
	return &c, nil
}

// Begin records c, durably, unless its request id is in the journal
// already; then nothing is written and the existing record is returned.
// c.State is "sending" if empty; a call refused before anything was sent is
// recorded at once in its final state (unavailable, with c.Outcome and
// c.Detail). c.Attempts are recorded in the same transaction: an attempt
// about to write its first byte is in the journal before it does, at no
// cost beyond the transaction the call needs anyway. c.CreatedAt and
// c.UpdatedAt are set.
func (d Calls) Begin(ctx context.Context, c *record.Call) (existing *record.Call, err error) {
	err = d.tx(ctx, func(tx *sql.Tx) error {
		old, err := scanCall(tx.QueryRowContext(ctx, `SELECT `+callCols+` FROM calls WHERE request_id = ?`, c.RequestID))
		if err == nil {
			existing = old
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("journal: look up call %s: %w", c.RequestID, err)
		}
		now := d.now()
		if c.State == "" {
			c.State = record.Sending
		}
		c.CreatedAt, c.UpdatedAt = now, now
		_, err = tx.ExecContext(ctx, `INSERT INTO calls (request_id, peer, app, caller_app, method, path, digest, state, outcome, detail, created_at, updated_at, door, grpc)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.RequestID, c.Peer, c.App, c.CallerApp, c.Method, c.Path, c.Digest, c.State, c.Outcome, c.Detail, nanos(now), nanos(now), c.Door, c.GRPC)
		if err != nil {
			return fmt.Errorf("journal: record call %s as %s: %w", c.RequestID, c.State, err)
		}
		for _, a := range c.Attempts {
			if err := putAttempt(ctx, tx, c.RequestID, a); err != nil {
				return err
			}
		}
		if c.Request != nil {
			if err := putRequest(ctx, tx, c.RequestID, c.Request); err != nil {
				return err
			}
		}
		if c.State == record.Sending { // one the journal must not lose: counted for continuity
			return d.countReceipt(ctx, tx)
		}
		return nil
	})
	if err == nil && existing == nil {
		if c.State == record.Sending {
		}
		d.notify()
	}
	return existing, err
}

// AddAttempt records one more attempt of call id, durably: a later attempt
// (after a door asked for a new ticket) is in the journal before its first
// byte is written, like the first.
func (d Calls) AddAttempt(ctx context.Context, id string, a record.Attempt) error {
	return d.tx(ctx, func(tx *sql.Tx) error { return putAttempt(ctx, tx, id, a) })
}

// putAttempt writes attempt a of call id: a.N names it (a second write of
// the same N replaces the first: the attempt as it ended replaces the
// attempt as it began); if 0, the next number.
func putAttempt(ctx context.Context, tx *sql.Tx, id string, a record.Attempt) error {
	var err error
	if a.N > 0 {
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO attempts (request_id, n, road, address, started_at, first_byte, error, reply)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, id, a.N, a.Road, a.Address, nanos(a.StartedAt), boolInt(a.FirstByte), a.Error, a.Reply)
	} else {
		_, err = tx.ExecContext(ctx, `INSERT INTO attempts (request_id, n, road, address, started_at, first_byte, error, reply)
			VALUES (?, (SELECT COALESCE(MAX(n), 0) + 1 FROM attempts WHERE request_id = ?), ?, ?, ?, ?, ?, ?)`,
			id, id, a.Road, a.Address, nanos(a.StartedAt), boolInt(a.FirstByte), a.Error, a.Reply)
	}
	if err != nil {
		return fmt.Errorf("journal: record attempt of call %s: %w", id, err)
	}
	return nil
}

// Transition describes a compare-and-set change of a call's state.
type Transition struct {
	From       []record.CallState // the states it may leave; required
	To         record.CallState
	Outcome    string         // if not empty, the outcome the app is told
	Detail     string         // if not empty, replaces the detail
	OwnerState string         // if not empty, what the owner said
	Answer     *record.Answer // if not nil, the answer
	NextAsk    time.Time      // when to ask the owner; zero: not scheduled
	CountAsk   bool           // whether this transition followed asking the owner
	// Attempts are recorded in the same transaction, whether or not the
	// call moves (they happened either way); one with the N of a recorded
	// attempt replaces it.
	Attempts []record.Attempt
}

// Move applies t to call id if the call is in one of t.From. It reports
// whether it did; if not, cur is the call as it is.
func (d Calls) Move(ctx context.Context, id string, t Transition) (moved bool, cur *record.Call, err error) {
	if len(t.From) == 0 {
		return false, nil, fmt.Errorf("journal: move call %s: no from-state given", id)
	}
	err = d.tx(ctx, func(tx *sql.Tx) error {
		for _, a := range t.Attempts {
			if err := putAttempt(ctx, tx, id, a); err != nil {
				return err
			}
		}
		set := []string{"state = ?", "updated_at = ?"}
		args := []any{t.To, nanos(d.now())}
		if t.Outcome != "" {
			set, args = append(set, "outcome = ?"), append(args, t.Outcome)
		}
		if t.Detail != "" {
			set, args = append(set, "detail = ?"), append(args, t.Detail)
		}
		if t.OwnerState != "" {
			set, args = append(set, "owner_state = ?"), append(args, t.OwnerState)
		}
		if a := t.Answer; a != nil {
			set = append(set, "answer_status = ?", "answer_headers = ?", "answer_body = ?", "answer_omitted = ?")
			args = append(args, a.Status, encodeHeaders(a.Headers), a.Body, boolInt(a.Omitted))
		}
		if t.NextAsk.IsZero() {
			set = append(set, "next_ask_at = NULL")
		} else {
			set, args = append(set, "next_ask_at = ?"), append(args, nanos(t.NextAsk))
		}
		if t.CountAsk {
			set = append(set, "asks = asks + 1")
		}
		if t.To == record.NeedsPerson {
			// Set aside means "keep asking", never "hide it if it needs
			// me": a call that comes to need a person comes back.
			set = append(set, "dismissed = 0", "dismissed_by = ''")
		}
		q := `UPDATE calls SET ` + strings.Join(set, ", ") + ` WHERE request_id = ? AND state IN (` + placeholders(len(t.From)) + `)`
		args = append(args, id)
		for _, s := range t.From {
			args = append(args, s)
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("journal: move call %s to %s: %w", id, t.To, err)
		}
		n, _ := res.RowsAffected()
		if n == 1 {
			moved = true
			return nil
		}
		cur, err = scanCall(tx.QueryRowContext(ctx, `SELECT `+callCols+` FROM calls WHERE request_id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("journal: call %s: %w", id, ErrNotFound)
		}
		return err
	})
	if moved {
		d.notify()
	}
	return moved, cur, err
}

// NoteAsk records what the owner said about an unsettled call that stays
// unsettled, and when to ask next.
func (d Calls) NoteAsk(ctx context.Context, id, ownerState, detail string, next time.Time) error {
	_, err := d.db.ExecContext(ctx, `UPDATE calls SET owner_state = ?, detail = ?, next_ask_at = ?, asks = asks + 1, updated_at = ?
		WHERE request_id = ? AND state IN `+unsettledSQL,
		ownerState, detail, nanos(next), nanos(d.now()), id)
	if err != nil {
		return fmt.Errorf("journal: note ask of call %s: %w", id, err)
	}
	d.notify()
	return nil
}

// Get returns call id with its attempts.
func (d Calls) Get(ctx context.Context, id string) (*record.Call, error) {
	c, err := scanCall(d.db.QueryRowContext(ctx, `SELECT `+callCols+` FROM calls WHERE request_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("journal: call %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: read call %s: %w", id, err)
	}
	if err := d.withAttempts(ctx, []*record.Call{c}); err != nil {
		return nil, err
	}
	if err := d.withRequests(ctx, []*record.Call{c}); err != nil {
		return nil, err
	}
	d.overlayCall(c)
	return c, nil
}

// forCalls reads, in one query, rows that belong to calls (their
// attempts, their kept requests): query selects from a table whose rows
// name a request id, and ends in "WHERE request_id IN" (the ids are added,
// then order). scan reads one row and returns its request id and what to
// do with its call.
func (d *store) forCalls(ctx context.Context, calls []*record.Call, what, query, order string, scan func(*sql.Rows) (string, func(*record.Call), error)) error {
	if len(calls) == 0 {
		return nil
	}
	byID := make(map[string]*record.Call, len(calls))
	args := make([]any, 0, len(calls))
	for _, c := range calls {
		byID[c.RequestID] = c
		args = append(args, c.RequestID)
	}
	rows, err := d.db.QueryContext(ctx, query+` (`+placeholders(len(args))+`) `+order, args...)
	if err != nil {
		return fmt.Errorf("journal: read the %s of %d calls: %w", what, len(calls), err)
	}
	defer rows.Close()
	for rows.Next() {
		id, apply, err := scan(rows)
		if err != nil {
			return fmt.Errorf("journal: read the %s of calls: %w", what, err)
		}
		if c := byID[id]; c != nil {
			apply(c)
		}
	}
	return rows.Err()
}

// withAttempts reads the attempts of calls into them.
func (d *store) withAttempts(ctx context.Context, calls []*record.Call) error {
	return d.forCalls(ctx, calls, "attempts", `SELECT request_id, n, road, address, started_at, first_byte, error, reply FROM attempts
		WHERE request_id IN`, `ORDER BY request_id, n`, func(rows *sql.Rows) (string, func(*record.Call), error) {
		var id string
		var a record.Attempt
		var started int64
		var fb int
		err := rows.Scan(&id, &a.N, &a.Road, &a.Address, &started, &fb, &a.Error, &a.Reply)
		a.StartedAt, a.FirstByte = fromNanos(started), fb != 0
		return id, func(c *record.Call) { c.Attempts = append(c.Attempts, a) }, err
	})
}

// CallFilter selects calls for Calls.
type CallFilter struct {
	// Unsettled keeps only unknown and needs_person calls not dismissed.
	Unsettled bool
	// WithDismissed, with Unsettled, keeps the dismissed ones too.
	WithDismissed bool
	// Dismissed keeps only the calls a person set aside.
	Dismissed bool
	// State, if not empty, keeps only calls in that state.
	State record.CallState
	// SettledSince, if not zero, keeps only the calls settled after an
	// unknown outcome (carried_out, not_carried_out) since then, most
	// recently settled first.
	SettledSince time.Time
	// Limit caps the number returned. If 0, 500.
	Limit int
}

// List lists calls, newest first, with their attempts.
func (d Calls) List(ctx context.Context, f CallFilter) ([]*record.Call, error) {
	q := `SELECT ` + callCols + ` FROM calls`
	var args []any
	switch {
	case f.Unsettled && f.WithDismissed:
		q += ` WHERE state IN ` + unsettledSQL
	case f.Unsettled:
		q += ` WHERE state IN ` + unsettledSQL + ` AND dismissed = 0`
	case f.Dismissed:
		q += ` WHERE state IN ` + unsettledSQL + ` AND dismissed = 1`
	case f.State != "":
		q += ` WHERE state = ?`
		args = append(args, f.State)
	case !f.SettledSince.IsZero():
		q += ` WHERE state IN (?, ?) AND updated_at >= ?`
		args = append(args, record.CarriedOut, record.NotCarriedOut, nanos(f.SettledSince))
	}
	if f.Limit <= 0 {
		f.Limit = 500
	}
	order := `created_at DESC`
	if !f.SettledSince.IsZero() {
		order = `updated_at DESC`
	}
	q += ` ORDER BY ` + order + `, request_id LIMIT ?`
	args = append(args, f.Limit)
	calls, err := d.queryCalls(ctx, q, args...)
	if err == nil {
		err = d.withAttempts(ctx, calls)
	}
	for _, c := range calls {
		d.overlayCall(c)
	}
	return calls, err
}

// Due returns the unknown calls whose next ask is due at now.
func (d Calls) Due(ctx context.Context, now time.Time) ([]*record.Call, error) {
	return d.queryCalls(ctx, `SELECT `+callCols+` FROM calls
		WHERE state = 'unknown' AND next_ask_at IS NOT NULL AND next_ask_at <= ? ORDER BY next_ask_at`, nanos(now))
}

// NextAsk returns when the earliest unknown call is due to be asked about,
// and false if none is.
func (d Calls) NextAsk(ctx context.Context) (time.Time, bool, error) {
	var n sql.NullInt64
	err := d.db.QueryRowContext(ctx, `SELECT MIN(next_ask_at) FROM calls WHERE state = 'unknown'`).Scan(&n)
	if err != nil || !n.Valid {
		return time.Time{}, false, err
	}
	return fromNanos(n.Int64), true, nil
}

// UnknownFor returns the unknown calls to peer, to ask about at once.
func (d Calls) UnknownFor(ctx context.Context, peer string) ([]*record.Call, error) {
	return d.queryCalls(ctx, `SELECT `+callCols+` FROM calls WHERE state = 'unknown' AND peer = ?`, peer)
}

func (d *store) queryCalls(ctx context.Context, q string, args ...any) ([]*record.Call, error) {
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("journal: list calls: %w", err)
	}
	defer rows.Close()
	var out []*record.Call
	for rows.Next() {
		c, err := scanCall(rows)
		if err != nil {
			return nil, fmt.Errorf("journal: list calls: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CountUnsettled counts the unsettled calls that are not dismissed, and
// among them those that need a person, in one read (the two never
// disagree).
func (d Calls) CountUnsettled(ctx context.Context) (unsettled, needsPerson int, err error) {
	err = d.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(state = ?), 0) FROM calls WHERE state IN `+unsettledSQL+` AND dismissed = 0`,
		record.NeedsPerson).Scan(&unsettled, &needsPerson)
	return unsettled, needsPerson, err
}

// Dismiss sets call id aside: hidden from the menu, still reconciled. by
// names who did it ("the status page", "the local API"), as the call's
// record keeps it. Only an unknown call can be set aside (Delta keeps
// asking about it); moved reports whether it was unknown. A call that
// comes to need a person comes back (Move).
func (d Calls) Dismiss(ctx context.Context, id, by string) (moved bool, err error) {
	res, err := d.db.ExecContext(ctx, `UPDATE calls SET dismissed = 1, dismissed_by = ?, updated_at = ? WHERE request_id = ? AND state = ?`,
		by, nanos(d.now()), id, record.Unknown)
	if err != nil {
		return false, fmt.Errorf("journal: dismiss call %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	d.notify()
	return true, nil
}

// CountDismissed counts the calls a person set aside that are still
// unsettled (Delta still asks about them).
func (d Calls) CountDismissed(ctx context.Context) (int, error) {
	var n int
	err := d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM calls WHERE state IN `+unsettledSQL+` AND dismissed = 1`).Scan(&n)
	return n, err
}

// Recover turns every "sending" call into "unknown", due for asking at
// once: after a restart nobody knows whether its bytes left. Its attempt in
// flight (recorded before its first byte, as written) says that Delta
// stopped during it. It returns how many calls there were.
func (d Calls) Recover(ctx context.Context) (int, error) {
	now := nanos(d.now())
	var n int64
	err := d.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET error = 'Delta stopped during this attempt; the request may have left'
			WHERE first_byte = 1 AND error = '' AND request_id IN (SELECT request_id FROM calls WHERE state = 'sending')`); err != nil {
			return fmt.Errorf("journal: recover attempts in flight: %w", err)
		}
		res, err := tx.ExecContext(ctx, `UPDATE calls SET state = 'unknown', outcome = 'outcome_unknown',
			detail = 'Delta stopped while this call was being sent; it may have left, so it is not sent again and the owner will be asked',
			next_ask_at = ?, updated_at = ? WHERE state = 'sending'`, now, now)
		if err != nil {
			return fmt.Errorf("journal: recover sending calls: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, err
	}
	if n > 0 {
		d.notify()
	}
	return int(n), nil
}

// unsettledSQL is the unsettled states as an SQL list, made from
// record.CallState.Unsettled so that the two cannot disagree.
var unsettledSQL = func() string {
	var in []string
	for _, st := range []record.CallState{record.Sending, record.Answered, record.Unavailable, record.Unknown, record.CarriedOut, record.NotCarriedOut, record.NeedsPerson} {
		if st.Unsettled() {
			in = append(in, "'"+string(st)+"'")
		}
	}
	return "(" + strings.Join(in, ", ") + ")"
}()

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
