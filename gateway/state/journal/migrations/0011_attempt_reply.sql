-- The owner's own reply to an attempt (its X-Delta-Outcome: app_not_found,
-- app_unavailable, no_room, …), kept so that what Delta says of a call it
-- did not carry out comes from the record (issue 36): "sent; not carried
-- out: the app was not listening", never "not sent" for a call whose body
-- crossed. Empty: no reply came (or the attempt predates this column).
ALTER TABLE attempts ADD COLUMN reply TEXT NOT NULL DEFAULT '';
