-- The app that made a received call, as the caller's Delta named it
-- (X-Delta-App: the app's own name, else its User-Agent's product): the
-- owner's page, menu and delta receipts name it beside the calling
-- computer (issue 65: they named only the computer).
ALTER TABLE receipts ADD COLUMN caller_app TEXT NOT NULL DEFAULT '';
