package journal

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/state/journal/contslot"
)

// Continuity: an owner's journal must never answer never_arrived for a
// call it may have received, and a caller's must say when calls it sent
// may be missing from its list. A journal that is new, emptied, truncated
// (its WAL lost), or restored from an older or another copy cannot vouch
// for the time before it, so Delta tells it apart from the journal that
// can, with two records that must agree:
//
//   - in the database (table meta): an incarnation id, made when the
//     journal is made, and the count of records ever made that it must
//     not lose (calls received, fences written, and calls this computer
//     began sending), counted in the same transaction as each;
//   - in a file beside it (<journal>.continuity): the same incarnation and
//     the count as of the last receipt, written after each commit that
//     counted one. It is two slots of 128 bytes, each a JSON line with its
//     CRC-32, written in turn in place (one write, no new file or rename
//     per commit: those were a fifth of a busy Delta's CPU); a torn write
//     spoils one slot and the other still holds the count before it. The
//     one-JSON-object file of earlier versions is read too.
//
// At Open they are compared. The file missing on a journal that has
// receipts is an upgrade or a lost file: trusted, and the file made. A
// fresh journal cannot vouch for anything before its own birth. When they
// disagree (the database is new but the file is not, the incarnations
// differ, or the database counts fewer receipts than the file saw), the
// journal's continuity starts now: the sweep watermark moves to now, so
// every call created before it is answered expired (the caller settles
// needs_person: a person must check), never never_arrived; the break is
// kept in meta and reported by Continuity.

// ContinuityFile is the file beside the journal.
func ContinuityFile(journalPath string) string { return journalPath + ".continuity" }

func (d *store) meta(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, key string) (string, bool, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return v, err == nil, err
}

func setMeta(ctx context.Context, tx *sql.Tx, key, value string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}

// countReceipt adds one to the records ever made, in tx, and has the
// writer save the continuity file after the commit (continuityAfterCommit):
// once per group commit, before any of its callers is answered.
func (d *store) countReceipt(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('receipts', '1')
		ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1`)
	if err != nil {
		return fmt.Errorf("journal: count the receipt: %w", err)
	}
	d.counted++ // the writer's own field: f runs on the writer
	return nil
}

// checkContinuity compares the database with the continuity file at Open
// (see above), and writes the file.
func (d *store) checkContinuity(fresh bool) error {
	ctx := context.Background()
	now := d.now()
	var file *contslot.Record
	if b, err := os.ReadFile(d.contPath); err == nil {
		f, err := contslot.Decode(b)
		if err != nil {
			return fmt.Errorf("journal: %s is not Delta's continuity file (%v); Delta does not guess what the journal can vouch for: move it aside only if you know the journal beside it is the one it belongs to", d.contPath, err)
		}
		file = &f
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: read %s: %w", d.contPath, err)
	}
	inc, hasInc, err := d.meta(ctx, d.db, "incarnation")
	if err != nil {
		return fmt.Errorf("journal: read the journal's identity: %w", err)
	}
	countS, _, err := d.meta(ctx, d.db, "receipts")
	if err != nil {
		return fmt.Errorf("journal: read the receipt count: %w", err)
	}
	count, _ := strconv.ParseInt(countS, 10, 64)
	broken := ""
	switch {
	case file != nil && !hasInc:
		broken = fmt.Sprintf("the journal is new or was emptied, but %s says a journal with %d receipts was here", d.contPath, file.Receipts)
	case file != nil && inc != file.Incarnation:
		broken = fmt.Sprintf("the journal is another one than %s names (restored from another copy?)", d.contPath)
	case file != nil && count < file.Receipts:
		broken = fmt.Sprintf("the journal counts %d receipts but %d were made (commits lost: a restored older copy, or a lost WAL)", count, file.Receipts)
	}
	err = d.tx(ctx, func(tx *sql.Tx) error {
		if !hasInc {
			inc = rand.Text()
			if err := setMeta(ctx, tx, "incarnation", inc); err != nil {
				return err
			}
		}
		if fresh || broken != "" {
			// It vouches from now on, not for the 90 days before.
			if _, err := tx.ExecContext(ctx, `INSERT INTO sweeps (caller, swept_until) VALUES ('*', ?)
				ON CONFLICT (caller) DO UPDATE SET swept_until = MAX(swept_until, excluded.swept_until)`, nanos(now)); err != nil {
				return err
			}
			if err := setMeta(ctx, tx, "continuous_since", strconv.FormatInt(nanos(now), 10)); err != nil {
				return err
			}
		}
		if broken != "" {
			return setMeta(ctx, tx, "broken", fmt.Sprintf("%s (found %s)", broken, now.UTC().Format(time.RFC3339)))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("journal: record its continuity: %w", err)
	}
	d.incarnation, d.records = inc, count
	return d.saveContinuity(count)
}

// saveContinuity writes the continuity file from the database (after a
// commit that made a receipt). Written without an fsync of its own: behind
// the database it only weakens what a later restore would be caught by;
// it is never ahead of a committed count.
//
// count is the committed count: the writer keeps it (records), as every
// counted write is its own.
func (d *store) saveContinuity(count int64) error {
	d.contMu.Lock()
	defer d.contMu.Unlock()
	slot, err := contslot.Encode(contslot.Record{Incarnation: d.incarnation, Receipts: count})
	if err != nil {
		return fmt.Errorf("journal: write %s: %w", d.contPath, err)
	}
	if d.contF != nil {
		_, err := d.contF.WriteAt(slot, d.contNext*contslot.Size)
		if err == nil {
			d.contNext ^= 1
			return nil
		}
		// Made anew below: a file moved or removed under it, a full disk.
		d.contF.Close()
		d.contF = nil
	}
	// Both slots the same, as a new file renamed over the old one: the
	// file is whole at every moment.
	tmp := d.contPath + ".tmp"
	if err := os.WriteFile(tmp, append(slot, slot...), 0o600); err != nil {
		return fmt.Errorf("journal: write %s: %w", d.contPath, err)
	}
	if err := os.Rename(tmp, d.contPath); err != nil {
		return fmt.Errorf("journal: write %s: %w", d.contPath, err)
	}
	f, err := os.OpenFile(d.contPath, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("journal: open %s: %w", d.contPath, err)
	}
	d.contF, d.contNext = f, 0
	return nil
}

// continuityAfterCommit writes the file after a commit that counted a
// record; a failure is kept for Continuity to report (the journal itself
// is committed either way).
func (d *store) continuityAfterCommit() {
	err := d.saveContinuity(d.records)
	d.contMu.Lock()
	d.contErr = err
	d.contMu.Unlock()
}

// Continuity reports what the journal vouches for.
func (d *DB) Continuity(ctx context.Context) (localapi.Continuity, error) {
	var c localapi.Continuity
	since, ok, err := d.meta(ctx, d.db, "continuous_since")
	if err != nil {
		return c, err
	}
	if ok {
		n, _ := strconv.ParseInt(since, 10, 64)
		c.Since = fromNanos(n)
	}
	c.Broken, _, err = d.meta(ctx, d.db, "broken")
	d.contMu.Lock()
	if d.contErr != nil {
		c.FileError = d.contErr.Error()
	}
	d.contMu.Unlock()
	return c, err
}
