//go:build cgo

package journal

import (
	"errors"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// IsDiskFull reports whether err is SQLite's "database or disk is full".
func IsDiskFull(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrFull
}
