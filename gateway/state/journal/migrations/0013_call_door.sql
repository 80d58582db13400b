-- The door a call came in by (issue 63, D9): "" the local API (the
-- token), "forward PEER/APP" a forward. A repeat of its request id is
-- answered with the call's outcome only through the same door; through
-- another it is a conflict that names nothing of the call.
ALTER TABLE calls ADD COLUMN door TEXT NOT NULL DEFAULT '';
