package journal

// CommitStats are the group commit's counts: commits made and operations
// they carried.
func (d *DB) CommitStats() (commits, writes int64) { return d.commit.Stats() }
