package journal

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/wire/proto"
)

// App is a local app that owns data on this computer.
type App struct {
	Name   string
	URL    string // http://127.0.0.1:PORT (loopback only)
	Secret string // sent to the app as X-Delta-Forward-Secret
	// Timeout is the app's own wait for its answer's head, when a request
	// says none (proto.Wait.For): 0 none of its own, proto.NoLimit no
	// limit.
	Timeout   time.Duration
	H2C       bool // it speaks HTTP/2 with prior knowledge (delta apps add --h2c)
	UpdatedAt time.Time
}

// Put registers (or re-points) app name at url, with its own timeout
// (App.Timeout) and protocol (App.H2C). An app that is registered already
// keeps its secret.
func (d Apps) Put(ctx context.Context, name, url string, timeout time.Duration, h2c bool) (*App, error) {
	a := &App{Name: name, URL: url, Timeout: timeout, H2C: h2c, UpdatedAt: d.now()}
	err := d.tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT secret FROM apps WHERE name = ?`, name).Scan(&a.Secret)
		if errors.Is(err, sql.ErrNoRows) {
			a.Secret = rand.Text()
		} else if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO apps (name, url, secret, timeout_ms, h2c, updated_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET url = excluded.url, timeout_ms = excluded.timeout_ms, h2c = excluded.h2c, updated_at = excluded.updated_at`,
			name, url, a.Secret, timeoutMillis(timeout), h2c, nanos(a.UpdatedAt))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("journal: register app %s: %w", name, err)
	}
	d.forgetApp(name)
	return a, nil
}

// The app registry is read on every request an owner forwards (6 % of a
// read's CPU as a query); it changes only through Put and Delete,
// so the registered apps are kept in memory, read once each.
type appCache struct {
	mu   sync.Mutex
	apps map[string]App
}

func (d *store) forgetApp(name string) {
	d.appCache.mu.Lock()
	delete(d.appCache.apps, name)
	d.appCache.mu.Unlock()
}

// Get returns the registered app name.
func (d Apps) Get(ctx context.Context, name string) (*App, error) {
	d.appCache.mu.Lock()
	if a, ok := d.appCache.apps[name]; ok {
		d.appCache.mu.Unlock()
		return &a, nil
	}
	d.appCache.mu.Unlock()
	a, err := d.readApp(ctx, name)
	if err == nil {
		d.appCache.mu.Lock()
		if d.appCache.apps == nil {
			d.appCache.apps = map[string]App{}
		}
		d.appCache.apps[name] = *a
		d.appCache.mu.Unlock()
	}
	return a, err
}

func (d *store) readApp(ctx context.Context, name string) (*App, error) {
	a := &App{Name: name}
	var upd, ms int64
	err := d.db.QueryRowContext(ctx, `SELECT url, secret, timeout_ms, h2c, updated_at FROM apps WHERE name = ?`, name).Scan(&a.URL, &a.Secret, &ms, &a.H2C, &upd)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("journal: app %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: read app %s: %w", name, err)
	}
	a.UpdatedAt, a.Timeout = fromNanos(upd), fromMillis(ms)
	return a, nil
}

// timeoutMillis is an app's timeout as the apps table keeps it (-1: no
// limit), and fromMillis the timeout it keeps.
func timeoutMillis(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

func fromMillis(ms int64) time.Duration {
	if ms < 0 {
		return proto.NoLimit
	}
	return time.Duration(ms) * time.Millisecond
}

// Delete removes app name.
func (d Apps) Delete(ctx context.Context, name string) error {
	res, err := d.db.ExecContext(ctx, `DELETE FROM apps WHERE name = ?`, name)
	d.forgetApp(name)
	if err != nil {
		return fmt.Errorf("journal: remove app %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("journal: app %s: %w", name, ErrNotFound)
	}
	return nil
}

// List returns every registered app, by name.
func (d Apps) List(ctx context.Context) ([]*App, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT name, url, secret, timeout_ms, h2c, updated_at FROM apps ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("journal: list apps: %w", err)
	}
	defer rows.Close()
	var out []*App
	for rows.Next() {
		a := &App{}
		var upd, ms int64
		if err := rows.Scan(&a.Name, &a.URL, &a.Secret, &ms, &a.H2C, &upd); err != nil {
			return nil, fmt.Errorf("journal: list apps: %w", err)
		}
		a.UpdatedAt, a.Timeout = fromNanos(upd), fromMillis(ms)
		out = append(out, a)
	}
	return out, rows.Err()
}
