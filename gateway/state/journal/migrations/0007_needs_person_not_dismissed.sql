-- A call that needs a person is never set aside (hidden): setting aside
-- means "keep asking", and such a call is asked about no more. Calls set
-- aside before they came to need a person come back.
UPDATE calls SET dismissed = 0, dismissed_by = '' WHERE state = 'needs_person' AND dismissed = 1;
