-- What a call sent, kept while it matters (a person may have to check it):
-- the headers as sent (after stripping) and the body up to 64 KiB; a larger
-- body keeps only its size (the call's digest names it). Kept while the
-- call is unsettled, then RequestRetention; the oldest settled go first
-- when the store is over its bound.
CREATE TABLE call_requests (
    request_id TEXT PRIMARY KEY REFERENCES calls (request_id) ON DELETE CASCADE,
    headers    TEXT NOT NULL,
    body       BLOB,
    size       INTEGER NOT NULL,
    truncated  INTEGER NOT NULL DEFAULT 0
);

-- A person's settlement: who ("a person") and their note.
ALTER TABLE calls ADD COLUMN settled_by TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN settle_note TEXT NOT NULL DEFAULT '';
