-- Delta's journal, version 2: each call's history, for the status page and
-- for notifications. Triggers write it in the same transaction as the change
-- itself, so no path that moves a call (a send, the reconciler, a restart's
-- recovery, a person's dismissal) can leave it out.
CREATE TABLE call_events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id  TEXT NOT NULL REFERENCES calls (request_id) ON DELETE CASCADE,
    at          INTEGER NOT NULL,
    state       TEXT NOT NULL,
    owner_state TEXT NOT NULL,
    dismissed   INTEGER NOT NULL,
    detail      TEXT NOT NULL
);
CREATE INDEX call_events_call ON call_events (request_id, seq);

CREATE TRIGGER call_events_insert AFTER INSERT ON calls BEGIN
    INSERT INTO call_events (request_id, at, state, owner_state, dismissed, detail)
    VALUES (NEW.request_id, NEW.updated_at, NEW.state, NEW.owner_state, NEW.dismissed, NEW.detail);
END;

CREATE TRIGGER call_events_update AFTER UPDATE OF state, owner_state, dismissed ON calls
WHEN OLD.state IS NOT NEW.state OR OLD.owner_state IS NOT NEW.owner_state OR OLD.dismissed IS NOT NEW.dismissed BEGIN
    INSERT INTO call_events (request_id, at, state, owner_state, dismissed, detail)
    VALUES (NEW.request_id, NEW.updated_at, NEW.state, NEW.owner_state, NEW.dismissed, NEW.detail);
END;
