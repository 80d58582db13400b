"""A gRPC server as people run them (Debian's python3-grpcio), for
app/grpc_test.go: service delta.test.Echo on 127.0.0.1:PORT, its messages
plain bytes (no generated code), with

  Echo   (unary)            the request back, its length in trailing
                            metadata x-length; a request "fail:WHY" is
                            answered INVALID_ARGUMENT with WHY; "slow"
                            waits 10 s (a deadline shorter than that ends
                            it first)
  Count  (server streaming) "one", then, once the file named by the
                            request exists (the client made it when "one"
                            arrived: the stream flows), "two", and ends
  Sum    (client streaming) the count and total length of the messages
  Chat   (bidirectional)    each message back as it comes
"""
import os
import sys
import time
from concurrent import futures

import grpc


def echo(req, ctx):
    if req.startswith(b"fail:"):
        ctx.abort(grpc.StatusCode.INVALID_ARGUMENT, req[5:].decode())
    if req == b"slow":
        time.sleep(10)
    ctx.set_trailing_metadata((("x-length", str(len(req))),))
    return req


def count(req, ctx):
    yield b"one"
    path = req.decode()
    for _ in range(400):
        if os.path.exists(path):
            yield b"two"
            return
        time.sleep(0.05)
    ctx.abort(grpc.StatusCode.FAILED_PRECONDITION, "the client never saw the first message before the stream ended")


def total(reqs, ctx):
    n = size = 0
    for r in reqs:
        n += 1
        size += len(r)
    return b"%d messages, %d bytes" % (n, size)


def chat(reqs, ctx):
    for r in reqs:
        yield b"echo:" + r


def main():
    ident = lambda b: b
    handlers = {
        "Echo": grpc.unary_unary_rpc_method_handler(echo, ident, ident),
        "Count": grpc.unary_stream_rpc_method_handler(count, ident, ident),
        "Sum": grpc.stream_unary_rpc_method_handler(total, ident, ident),
        "Chat": grpc.stream_stream_rpc_method_handler(chat, ident, ident),
    }
    opts = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=opts)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("delta.test.Echo", handlers),))
    server.add_insecure_port("127.0.0.1:" + sys.argv[1])
    server.start()
    server.wait_for_termination()


main()
