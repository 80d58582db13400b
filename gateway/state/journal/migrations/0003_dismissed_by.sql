-- Who set a call aside, as a person did it: "the status page" or "the local
-- API" (the command line, an app). Empty while the call is not dismissed,
-- and for calls dismissed before this was recorded.
ALTER TABLE calls ADD COLUMN dismissed_by TEXT NOT NULL DEFAULT '';
