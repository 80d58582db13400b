-- The journal's identity and its count of receipts ever made (calls
-- received and fences written), mirrored in a small file beside the
-- database (continuity.go): a journal that lost commits, was emptied or
-- was restored from another copy is told apart from the one that vouched
-- for the past.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
