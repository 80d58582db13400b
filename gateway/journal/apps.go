package journal

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// App is a local app that owns data on this computer.
type App struct {
	Name      string
	URL       string // http://127.0.0.1:PORT (loopback only)
	Secret    string // sent to the app as X-Delta-Forward-Secret
	UpdatedAt time.Time
}

// PutApp registers (or re-points) app name at url. An app that is
// registered already keeps its secret.
func (d *DB) PutApp(ctx context.Context, name, url string) (*App, error) {
	a := &App{Name: name, URL: url, UpdatedAt: d.now()}
	err := d.tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT secret FROM apps WHERE name = ?`, name).Scan(&a.Secret)
		if errors.Is(err, sql.ErrNoRows) {
			a.Secret = rand.Text()
		} else if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO apps (name, url, secret, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET url = excluded.url, updated_at = excluded.updated_at`,
			name, url, a.Secret, nanos(a.UpdatedAt))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("journal: register app %s: %w", name, err)
	}
	d.forgetApp(name)
	return a, nil
}

// The app registry is read on every request an owner forwards (6 % of a
// read's CPU as a query); it changes only through PutApp and DeleteApp,
// so the registered apps are kept in memory, read once each.
type appCache struct {
	mu   sync.Mutex
	apps map[string]App
}

func (d *DB) forgetApp(name string) {
	d.appCache.mu.Lock()
	delete(d.appCache.apps, name)
	d.appCache.mu.Unlock()
}

// App returns the registered app name.
func (d *DB) App(ctx context.Context, name string) (*App, error) {
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

func (d *DB) readApp(ctx context.Context, name string) (*App, error) {
	a := &App{Name: name}
	var upd int64
	err := d.db.QueryRowContext(ctx, `SELECT url, secret, updated_at FROM apps WHERE name = ?`, name).Scan(&a.URL, &a.Secret, &upd)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("journal: app %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: read app %s: %w", name, err)
	}
	a.UpdatedAt = fromNanos(upd)
	return a, nil
}

// DeleteApp removes app name.
func (d *DB) DeleteApp(ctx context.Context, name string) error {
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

// Apps returns every registered app, by name.
func (d *DB) Apps(ctx context.Context) ([]*App, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT name, url, secret, updated_at FROM apps ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("journal: list apps: %w", err)
	}
	defer rows.Close()
	var out []*App
	for rows.Next() {
		a := &App{}
		var upd int64
		if err := rows.Scan(&a.Name, &a.URL, &a.Secret, &upd); err != nil {
			return nil, fmt.Errorf("journal: list apps: %w", err)
		}
		a.UpdatedAt = fromNanos(upd)
		out = append(out, a)
	}
	return out, rows.Err()
}
