-- Delta's journal, version 1. Times are Unix nanoseconds (UTC).

-- The caller's calls (DESIGN §4, "Calls (caller side)").
CREATE TABLE calls (
    request_id     TEXT PRIMARY KEY,
    peer           TEXT NOT NULL,
    app            TEXT NOT NULL,
    caller_app     TEXT NOT NULL DEFAULT '',
    method         TEXT NOT NULL,
    path           TEXT NOT NULL,
    digest         TEXT NOT NULL,
    -- sending | answered | unavailable | unknown | carried_out | not_carried_out | needs_person
    state          TEXT NOT NULL,
    -- the outcome the app was told (proto.Outcome)
    outcome        TEXT NOT NULL DEFAULT '',
    dismissed      INTEGER NOT NULL DEFAULT 0,
    detail         TEXT NOT NULL DEFAULT '',
    owner_state    TEXT NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    answer_status  INTEGER,
    answer_headers TEXT,
    answer_body    BLOB,
    answer_omitted INTEGER NOT NULL DEFAULT 0,
    asks           INTEGER NOT NULL DEFAULT 0,
    next_ask_at    INTEGER
);
CREATE INDEX calls_state ON calls (state, next_ask_at);
CREATE INDEX calls_created ON calls (created_at);

-- Every try of a call: which road, whether its first byte was written.
CREATE TABLE attempts (
    request_id  TEXT NOT NULL REFERENCES calls (request_id) ON DELETE CASCADE,
    n           INTEGER NOT NULL,
    road        TEXT NOT NULL,
    address     TEXT NOT NULL,
    started_at  INTEGER NOT NULL,
    first_byte  INTEGER NOT NULL,
    error       TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (request_id, n)
);

-- The owner's receipts and fences (DESIGN §4, "Receipts (owner side)").
-- A fence is a row in state 'fenced' with an empty digest.
CREATE TABLE receipts (
    caller          TEXT NOT NULL,
    request_id      TEXT NOT NULL,
    digest          TEXT NOT NULL,
    -- running | answered | not_carried_out | app_unknown | interrupted | fenced
    state           TEXT NOT NULL,
    caller_name     TEXT NOT NULL DEFAULT '',
    app             TEXT NOT NULL DEFAULT '',
    method          TEXT NOT NULL DEFAULT '',
    path            TEXT NOT NULL DEFAULT '',
    received_at     INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    answer_status   INTEGER,
    answer_headers  TEXT,
    answer_body     BLOB,
    answer_digest   TEXT NOT NULL DEFAULT '',
    answer_omitted  INTEGER NOT NULL DEFAULT 0,
    answer_expired  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (caller, request_id)
);
CREATE INDEX receipts_received ON receipts (received_at);

-- How far the retention sweep has gone: receipts and fences received before
-- swept_until are gone, so the owner cannot say "never arrived" for them.
CREATE TABLE sweeps (
    caller      TEXT PRIMARY KEY,
    swept_until INTEGER NOT NULL
);

-- The local apps that own data here.
CREATE TABLE apps (
    name       TEXT PRIMARY KEY,
    url        TEXT NOT NULL,
    secret     TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
