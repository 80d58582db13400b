"""gRPC's Python client (Debian's python3-grpcio) against
testdata/grpc_server.py at TARGET (host:port), directly or through a
forward, for app/grpc_test.go: each check raises on a wrong result, and
"ok CHECK" is printed for each that passed.

  grpc_client.py TARGET unary|stream|clientstream|error|deadline|chat|status CHECKDIR
"""
import os
import sys
import tempfile

import grpc

target, check, folder = sys.argv[1], sys.argv[2], sys.argv[3]
ident = lambda b: b
opts = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20),
        ("grpc.enable_retries", 0)]
ch = grpc.insecure_channel(target, options=opts)
svc = "/delta.test.Echo/"


def call(method, kind):
    return getattr(ch, kind)(svc + method, request_serializer=ident, response_deserializer=ident)


if check == "unary":
    big = os.urandom(8 << 20)
    resp, c = call("Echo", "unary_unary").with_call(big, timeout=60, metadata=(("x-app-meta", "m1"),))
    assert resp == big, "the 8 MiB message came back changed"
    trailing = dict(c.trailing_metadata())
    assert trailing.get("x-length") == str(len(big)), trailing
    print("ok unary")
elif check == "stream":
    path = tempfile.mktemp(dir=folder)
    it = call("Count", "unary_stream")(path.encode(), timeout=30)
    first = next(it)
    assert first == b"one", first
    open(path, "w").close()  # the server sends "two" only after this
    rest = list(it)
    assert rest == [b"two"], rest
    print("ok stream")
elif check == "clientstream":
    resp = call("Sum", "stream_unary")(iter([b"a" * 10, b"b" * 20, b"c" * 30]), timeout=30)
    assert resp == b"3 messages, 60 bytes", resp
    print("ok clientstream")
elif check == "error":
    try:
        call("Echo", "unary_unary")(b"fail:no such note", timeout=30)
        raise AssertionError("no error")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and e.details() == "no such note", (e.code(), e.details())
    print("ok error")
elif check == "deadline":
    try:
        call("Echo", "unary_unary")(b"slow", timeout=1)
        raise AssertionError("no error")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.DEADLINE_EXCEEDED, (e.code(), e.details())
    print("ok deadline")
elif check == "chat":
    # Bidirectional, as a conversation: each message is sent only once the
    # answer to the one before it came.
    import queue
    q = queue.Queue()
    def requests():
        for i in range(3):
            yield b"m%d" % i
            q.get(timeout=20)
    got = []
    for m in call("Chat", "stream_stream")(requests(), timeout=float(sys.argv[4]) if len(sys.argv) > 4 else 30):
        got.append(m)
        q.put(m)
    assert got == [b"echo:m0", b"echo:m1", b"echo:m2"], got
    print("ok chat")
elif check == "status":
    # Delta's own outcome as a status: CODE DETAILS-SUBSTRING [request id]
    want, words = sys.argv[4], sys.argv[5]
    md = (("x-delta-request-id", sys.argv[6]),) if len(sys.argv) > 6 else ()
    try:
        call("Echo", "unary_unary")(b"hello", timeout=30, metadata=md)
        raise AssertionError("no error")
    except grpc.RpcError as e:
        assert e.code().name == want and words in e.details(), (e.code(), e.details())
        meta = dict(e.trailing_metadata() or ())
        print("ok status", e.code().name, meta.get("x-delta-outcome", ""), meta.get("x-delta-request-id", ""))
else:
    raise SystemExit("unknown check " + check)
