-- An owner app that speaks HTTP/2 with prior knowledge (h2c; delta apps
-- add --h2c): its Delta speaks HTTP/2 to it for every request, not only
-- for gRPC's (docs/protocol.md §1c). 0 HTTP/1.1, 1 HTTP/2.
ALTER TABLE apps ADD COLUMN h2c INTEGER NOT NULL DEFAULT 0;
