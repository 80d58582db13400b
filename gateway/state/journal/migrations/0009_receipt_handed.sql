-- When a received call was handed to its app (issue 34 A10): a receipt
-- still "running" at a start whose call was never handed over (its body
-- was still arriving, or waiting for the app's turn) was certainly not
-- carried out; one that was handed over is "interrupted" (a person may
-- have to check). Written, and made durable, before the first byte goes
-- to the app.
ALTER TABLE receipts ADD COLUMN handed_at INTEGER;

-- Receipts running under an earlier version may have been handed over:
-- they stay "interrupted" at the next start, as before.
UPDATE receipts SET handed_at = received_at WHERE state = 'running';
