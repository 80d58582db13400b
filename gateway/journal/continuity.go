package journal

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
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
//     the count as of the last receipt, written after each commit.
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

type continuityFile struct {
	Incarnation string `json:"incarnation"`
	Receipts    int64  `json:"receipts"`
}

// Continuity is what the journal can vouch for.
type Continuity struct {
	// Since is the start of the time the journal vouches for: its birth,
	// or a break.
	Since time.Time `json:"since"`
	// Broken, if not empty, says why the journal cannot vouch for the time
	// before Since although it is older.
	Broken string `json:"broken,omitempty"`
	// FileError is the last failure to write the continuity file.
	FileError string `json:"file_error,omitempty"`
}

func (d *DB) meta(ctx context.Context, q interface {
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
func (d *DB) countReceipt(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('receipts', '1')
		ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1`)
	if err != nil {
		return fmt.Errorf("journal: count the receipt: %w", err)
	}
	d.commit.counted++ // the writer's own field: f runs on the writer
	return nil
}

// checkContinuity compares the database with the continuity file at Open
// (see above), and writes the file.
func (d *DB) checkContinuity(fresh bool) error {
	ctx := context.Background()
	now := d.now()
	var file *continuityFile
	if b, err := os.ReadFile(d.contPath); err == nil {
		var f continuityFile
		if json.Unmarshal(b, &f) != nil || f.Incarnation == "" {
			return fmt.Errorf("journal: %s is not Delta's continuity file; Delta does not guess what the journal can vouch for: move it aside only if you know the journal beside it is the one it belongs to", d.contPath)
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
	d.incarnation, d.commit.records = inc, count
	return d.saveContinuity(count)
}

// saveContinuity writes the continuity file from the database (after a
// commit that made a receipt). Written without an fsync of its own: behind
// the database it only weakens what a later restore would be caught by;
// it is never ahead of a committed count.
//
// count is the committed count: the writer keeps it (records), as every
// counted write is its own.
func (d *DB) saveContinuity(count int64) error {
	d.contMu.Lock()
	defer d.contMu.Unlock()
	b, _ := json.Marshal(continuityFile{Incarnation: d.incarnation, Receipts: count})
	tmp := d.contPath + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("journal: write %s: %w", d.contPath, err)
	}
	if err := os.Rename(tmp, d.contPath); err != nil {
		return fmt.Errorf("journal: write %s: %w", d.contPath, err)
	}
	return nil
}

// continuityAfterCommit writes the file after a commit that counted a
// record; a failure is kept for Continuity to report (the journal itself
// is committed either way).
func (d *DB) continuityAfterCommit() {
	err := d.saveContinuity(d.commit.records)
	d.contMu.Lock()
	d.contErr = err
	d.contMu.Unlock()
}

// Continuity reports what the journal vouches for.
func (d *DB) Continuity(ctx context.Context) (Continuity, error) {
	var c Continuity
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
