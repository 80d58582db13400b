-- A call's kept request forgotten at a person's request (delta forget):
-- its body and headers are gone, its size stays.
ALTER TABLE call_requests ADD COLUMN forgotten INTEGER NOT NULL DEFAULT 0;
