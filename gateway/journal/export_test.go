package journal

// CommitStats are the group commit's counts: commits made and operations
// they carried.
func (d *DB) CommitStats() (commits, writes int64) {
	c := d.commit
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.batches, c.writes
}
