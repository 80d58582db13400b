-- The owner's side of a settlement (issue 25 §2).
--
-- What a receipt's call carried, kept by the same rule as the caller's
-- call_requests: the headers as received and the body up to 64 KiB; a
-- larger body keeps only its size (the receipt's digest names it). Kept
-- while the receipt is one to check, then RequestRetention; the oldest go
-- first when the store is over its bound.
CREATE TABLE receipt_requests (
    caller     TEXT NOT NULL,
    request_id TEXT NOT NULL,
    headers    TEXT NOT NULL,
    body       BLOB,
    size       INTEGER NOT NULL,
    truncated  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (caller, request_id),
    FOREIGN KEY (caller, request_id) REFERENCES receipts (caller, request_id) ON DELETE CASCADE
);

-- A person here checked the receipt (the app did, or did not, act): who
-- ("the status page", "the local API"), when, and their note.
ALTER TABLE receipts ADD COLUMN checked_by TEXT NOT NULL DEFAULT '';
ALTER TABLE receipts ADD COLUMN checked_at INTEGER;
ALTER TABLE receipts ADD COLUMN check_note TEXT NOT NULL DEFAULT '';
-- The caller's person settled the call (carried_out | not_carried_out),
-- told by the caller's Delta, when, and their note.
ALTER TABLE receipts ADD COLUMN caller_settled TEXT NOT NULL DEFAULT '';
ALTER TABLE receipts ADD COLUMN caller_settled_at INTEGER;
ALTER TABLE receipts ADD COLUMN caller_settle_note TEXT NOT NULL DEFAULT '';

-- The caller's side: a person's settlement not yet told to the owner.
-- Settlements made before this version are told too (the owner may still
-- list the receipt as one to check).
ALTER TABLE calls ADD COLUMN settle_told INTEGER NOT NULL DEFAULT 0;
CREATE INDEX calls_settle_untold ON calls (peer) WHERE settled_by != '' AND settle_told = 0;
