//go:build !cgo

package journal

// driverName is mattn's stub without cgo: it opens nothing (a build without
// cgo is for vetting only).
const driverName = "sqlite3"

// Usable reports whether this build can open a journal: without cgo it
// cannot.
const Usable = false
