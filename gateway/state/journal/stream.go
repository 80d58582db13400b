package journal

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/delta-roads/delta/gateway/wire/record"
)

// What a streamed call adds to the records (DESIGN §2a): a body whose
// digest is known only once it has passed, and an answer whose head is
// recorded before its body.

// SetBody records the digest and size of a call whose body streamed,
// once the body has been read whole: until then its digest is "" (a repeat
// of the id is refused, and the owner's word decides reconciliation).
func (d Calls) SetBody(ctx context.Context, id, digest string, size int64) error {
	return d.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE calls SET digest = ? WHERE request_id = ? AND digest = ''`, digest, id); err != nil {
			return fmt.Errorf("journal: record the digest of call %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE call_requests SET size = ? WHERE request_id = ?`, size, id); err != nil {
			return fmt.Errorf("journal: record the size of call %s: %w", id, err)
		}
		return nil
	})
}

// SetAnswerBody records the body of call id's answer, whose head was
// recorded as it arrived (with Omitted set until now): a.Body and
// a.Omitted (a call's record keeps no digest of its answer), and, when
// a.Headers is not nil, the answer's header again with its trailers
// (relay.Kept), which came after the body.
func (d Calls) SetAnswerBody(ctx context.Context, id string, a *record.Answer) error {
	err := d.tx(ctx, func(tx *sql.Tx) error {
		q, args := `UPDATE calls SET answer_body = ?, answer_omitted = ? WHERE request_id = ? AND answer_status IS NOT NULL`, []any{a.Body, boolInt(a.Omitted), id}
		if a.Headers != nil { // the head with what came after the body (its trailers)
			q, args = `UPDATE calls SET answer_body = ?, answer_omitted = ?, answer_headers = ? WHERE request_id = ? AND answer_status IS NOT NULL`,
				[]any{a.Body, boolInt(a.Omitted), encodeHeaders(a.Headers), id}
		}
		_, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("journal: record the answer body of call %s: %w", id, err)
		}
		return nil
	})
	if err == nil {
		d.notify()
	}
	return err
}

// SetDigest records the digest of a running receipt whose body
// streamed, once it has arrived whole, before the call is forwarded.
func (d Receipts) SetDigest(ctx context.Context, caller, id, digest string) error {
	return d.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE receipts SET digest = ? WHERE caller = ? AND request_id = ? AND state = 'running' AND digest = ''`,
			digest, caller, id)
		if err != nil {
			return fmt.Errorf("journal: record the digest of receipt %s from %s: %w", id, caller, err)
		}
		return nil
	})
}

// SetAnswerBody records the body of an answered receipt whose
// answer's head was recorded as it arrived, and its header again with its
// trailers when a.Headers is not nil (as SetAnswerBody).
func (d Receipts) SetAnswerBody(ctx context.Context, caller, id string, a *record.Answer) error {
	return d.tx(ctx, func(tx *sql.Tx) error {
		q := `UPDATE receipts SET answer_body = ?, answer_digest = ?, answer_omitted = ? WHERE caller = ? AND request_id = ? AND state = 'answered' AND answer_expired = 0`
		args := []any{a.Body, a.BodyDigest, boolInt(a.Omitted), caller, id}
		if a.Headers != nil { // the head with what came after the body (its trailers)
			q = `UPDATE receipts SET answer_body = ?, answer_digest = ?, answer_omitted = ?, answer_headers = ? WHERE caller = ? AND request_id = ? AND state = 'answered' AND answer_expired = 0`
			args = []any{a.Body, a.BodyDigest, boolInt(a.Omitted), encodeHeaders(a.Headers), caller, id}
		}
		_, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("journal: record the answer body of receipt %s from %s: %w", id, caller, err)
		}
		return nil
	})
}
