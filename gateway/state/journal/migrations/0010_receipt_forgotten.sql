-- What a received call carried, forgotten at a person's request (delta
-- forget-receipt, issue 34 U2): its body and headers are gone, its size
-- stays, as for a call's kept request (0006).
ALTER TABLE receipt_requests ADD COLUMN forgotten INTEGER NOT NULL DEFAULT 0;
