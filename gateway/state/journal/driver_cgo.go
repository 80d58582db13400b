//go:build cgo

package journal

import (
	"database/sql"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// driverName is mattn's SQLite with a ConnectHook that runs onConnect on
// every new connection (fullfsync on macOS: connPragmas).
const driverName = "sqlite3-delta"

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		for _, p := range onConnect {
			if _, err := c.Exec(p, nil); err != nil {
				return err
			}
		}
		return nil
	}})
}

// Usable reports whether this build can open a journal: it has SQLite
// (cgo).
const Usable = true
