-- An owner app's own wait for its answer's head (DESIGN §2c; delta apps
-- add --timeout), in milliseconds: 0 none of its own (the caller's
-- default applies: 30 s on the local API, no limit through a forward),
-- -1 no limit.
ALTER TABLE apps ADD COLUMN timeout_ms INTEGER NOT NULL DEFAULT 0;
