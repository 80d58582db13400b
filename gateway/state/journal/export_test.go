package journal

// CommitStats are the group commit's counts: commits made and operations
// they carried.
func (d *DB) CommitStats() (commits, writes int64) { return d.commit.Stats() }

// Flushes is how many of the group commit's commits had a flush of
// their own.
func (d *DB) Flushes() int64 { return d.commit.Flushes() }
