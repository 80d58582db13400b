-- A gRPC call (Content-Type application/grpc): shown by its service and
-- method, not as POST and a path (docs/protocol.md §1c). 0 or 1.
ALTER TABLE calls ADD COLUMN grpc INTEGER NOT NULL DEFAULT 0;
