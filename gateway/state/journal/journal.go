// Package journal owns Delta's SQLite database, <state>/delta.db: the
// caller's calls and their attempts, the owner's receipts and fences, the
// sweep watermark, and the registered owner apps.
//
// Every write that decides an outcome is one BEGIN IMMEDIATE transaction with
// synchronous=FULL, so that it is on disk before the byte it guards leaves
// (a call's "sending") or before a request is handed on (a receipt's
// "running"). The schema is a series of embedded, numbered migrations.
//
// The state machines are exactly DESIGN §4's; this package enforces their
// transitions with compare-and-set updates, so a caller that loses a race
// learns so instead of overwriting.
package journal

import (
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/mattn/go-sqlite3" // the database/sql driver "sqlite3"

	"github.com/delta-roads/delta/gateway/state/journal/groupcommit"
	"github.com/delta-roads/delta/gateway/wire/record"
)

//go:embed migrations/*.sql
var migrations embed.FS

// ErrNotFound is returned when a call, receipt or app does not exist.
var ErrNotFound = record.ErrNotFound

// ErrTooManyFences is Lookup's refusal to write a fence its caller's
// mayFence did not allow; nothing was written.
var ErrTooManyFences = errors.New("journal: too many fences for this caller; none written")

// readConns is how many connections the journal's readers may have open
// at once, beside the writer's.
const readConns = 4

// DB is an open journal. It is safe for concurrent use. Its records are
// read and written through its faces, one engine under them: Calls (what
// this computer's apps sent), Receipts (what its apps received) and Apps
// (the apps it serves); DB itself keeps what is the whole journal's (its
// events, its continuity, the outcomes held behind, closing).
type DB struct{ *store }

// Calls is the journal's face for the calls this computer's apps made
// (the caller's side, DESIGN §4).
type Calls struct{ *store }

// Receipts is the journal's face for the requests this computer's apps
// received (the owner's side, DESIGN §4).
type Receipts struct{ *store }

// Apps is the journal's face for the apps this computer serves.
type Apps struct{ *store }

// Calls is the journal's face for calls.
func (d *DB) Calls() Calls { return Calls{d.store} }

// Receipts is the journal's face for receipts.
func (d *DB) Receipts() Receipts { return Receipts{d.store} }

// Apps is the journal's face for the apps served here.
func (d *DB) Apps() Apps { return Apps{d.store} }

// store is the one engine under the faces: the database and what its
// writer keeps.
type store struct {
	db  *sql.DB
	now func() time.Time

	behind behind              // outcomes not yet written (behind.go)
	commit *groupcommit.Writer // the group commit's writer (commit.go)
	// counted counts the records the transaction being written counted
	// for continuity (countReceipt); unflushed those lazy commits made
	// and no flush has covered yet; records is the durable count. Only
	// the writer touches them (and Open, before it takes writes).
	counted, unflushed, records int64

	appCache appCache // the registered apps, read once each (apps.go)

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change

	// continuity (continuity.go)
	contPath    string
	incarnation string
	contMu      sync.Mutex
	contErr     error    // the last failure to write the continuity file
	contF       *os.File // the file, open for its slots to be written in place
	contNext    int64    // the slot written next (0 or 1)
}

// Options configure Open.
type Options struct {
	// Now is the clock. If nil, time.Now.
	Now func() time.Time
}

// connPragmas are run on every new connection of a journal on goos. On
// macOS, fsync(2) leaves the data in the drive's cache, and SQLite issues
// F_FULLFSYNC only with fullfsync (and, for WAL checkpoints,
// checkpoint_fullfsync) on: without them a "durable" receipt is not
// durable across a power loss on Apple hardware. mattn's DSN has no key
// for them, so a ConnectHook runs them (driver_cgo.go).
func connPragmas(goos string) []string {
	if goos == "darwin" || goos == "ios" {
		return []string{"PRAGMA fullfsync = ON", "PRAGMA checkpoint_fullfsync = ON"}
	}
	return nil
}

// onConnect are the pragmas this build runs on every connection.
var onConnect = connPragmas(runtime.GOOS)

// Open opens (creating if needed) the journal at path and brings its schema
// up to date.
func Open(path string, opts Options) (*DB, error) {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_busy_timeout", "10000")
	q.Set("_txlock", "immediate")
	q.Set("_foreign_keys", "on")
	// Prepared statements kept per connection: preparing was 13 % of a
	// call's CPU (BenchmarkCall1KiB's profile).
	q.Set("_stmt_cache_size", "64")
	db, err := sql.Open(driverName, "file:"+uriPath(path)+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	// The group commit's writer keeps one connection for itself (its
	// synchronous setting is its own: groupcommit); four are the readers'.
	db.SetMaxOpenConns(1 + readConns)
	// As many kept idle as may be open: database/sql keeps 2 by default,
	// and a third reader at once closed its connection after use and the
	// next opened one again (its pragmas run, its statements prepared
	// again): about 2 % of a call's CPU at 16 at once.
	db.SetMaxIdleConns(1 + readConns)
	d := &DB{&store{db: db, now: opts.Now, changed: make(chan struct{}), contPath: ContinuityFile(path)}}
	if d.now == nil {
		d.now = time.Now
	}
	if err := d.check(path); err != nil {
		db.Close()
		return nil, err
	}
	fresh, err := d.migrate()
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("journal: %s: %w", path, err)
	}
	d.startWriter()
	if err := d.checkContinuity(fresh); err != nil {
		d.stopWriter()
		db.Close()
		return nil, err
	}
	return d, nil
}

// uriPath escapes a file path for an SQLite URI filename: "%", "?" and "#"
// would otherwise end the path or start the parameters (a state folder
// named "Delta #1?x" opened a database at "…/Delta " instead).
func uriPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(p)
}

// check runs PRAGMA quick_check before anything writes: a damaged journal
// is refused, and left exactly as it is.
func (d *store) check(path string) error {
	rows, err := d.db.Query("PRAGMA quick_check")
	if err != nil {
		return fmt.Errorf("journal: %s cannot be read as a journal (%v): Delta does not run on it and leaves it as it is; "+
			"move it aside (mv %q %q) to start with an empty journal, knowing that the calls and receipts in it are then unknown to this Delta", path, err, path, path+".damaged")
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("journal: check %s: %w", path, err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("journal: %s cannot be checked (%v): Delta does not run on it and leaves it as it is; move it aside (mv %q %q) to start afresh", path, err, path, path+".damaged")
	}
	if len(problems) > 0 {
		if len(problems) > 3 {
			problems = append(problems[:3], fmt.Sprintf("and %d more", len(problems)-3))
		}
		return fmt.Errorf("journal: %s is damaged (quick_check: %s): Delta does not run on it and leaves it as it is; "+
			"keep a copy, then move it aside (mv %q %q) to start with an empty journal", path, strings.Join(problems, "; "), path, path+".damaged")
	}
	return nil
}

// Close closes the database.
func (d *DB) Close() error {
	d.stopWriter()
	d.contMu.Lock()
	if d.contF != nil {
		d.contF.Close()
		d.contF = nil
	}
	d.contMu.Unlock()
	return d.db.Close()
}

// migrate brings the schema up to date; fresh reports whether the journal
// was just made.
func (d *store) migrate() (fresh bool, err error) {
	var have int
	if err := d.db.QueryRow("PRAGMA user_version").Scan(&have); err != nil {
		return false, fmt.Errorf("read schema version: %w", err)
	}
	fresh = have == 0
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return false, err
	}
	sort.Strings(names)
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return false, fmt.Errorf("migration %s: name must start with its number", base)
		}
		if v <= have {
			continue
		}
		text, err := migrations.ReadFile(name)
		if err != nil {
			return false, err
		}
		tx, err := d.db.Begin()
		if err != nil {
			return false, err
		}
		if _, err := tx.Exec(string(text)); err != nil {
			tx.Rollback()
			return false, fmt.Errorf("migration %s: %w", base, err)
		}
		if _, err := tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
			tx.Rollback()
			return false, err
		}
		if err := tx.Commit(); err != nil {
			return false, fmt.Errorf("migration %s: commit: %w", base, err)
		}
		have = v
	}
	return fresh, nil
}

// Changed returns a channel that is closed at the next change to a call or
// receipt. Take a new one after each wake-up.
func (d *DB) Changed() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.changed
}

func (d *store) notify() {
	d.mu.Lock()
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
