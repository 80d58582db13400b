"""An owner app for the kit's tests: WSGI, wrapped in DeltaOwner, served
on loopback by wsgiref in threads."""

from __future__ import annotations

import hashlib
import json
import threading
from socketserver import ThreadingMixIn
from typing import Any, Iterator
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from delta_kit import DeltaOwner


def pattern(n: int) -> Iterator[bytes]:
    """n bytes of a fixed pattern, in 256 KiB pieces, never held whole."""
    block = bytes(range(256)) * 1024
    while n > 0:
        b = block[: min(n, len(block))]
        n -= len(b)
        yield b


def pattern_sha256(n: int) -> str:
    h = hashlib.sha256()
    for b in pattern(n):
        h.update(b)
    return h.hexdigest()


class _Quiet(WSGIRequestHandler):
    def log_message(self, *a: Any) -> None:
        pass


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class OwnerApp:
    def __init__(self) -> None:
        self.notes: list[str] = []
        self.effects: dict[str, int] = {}
        self.holds: dict[str, threading.Event] = {}
        self.arrived: dict[str, threading.Event] = {}
        self.lock = threading.Lock()
        self.secret = ""
        self.server = make_server("127.0.0.1", 0, DeltaOwner(self.app, ""), server_class=_Server, handler_class=_Quiet)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def set_secret(self, secret: str) -> None:
        self.secret = secret
        self.server.get_app().secret = secret  # type: ignore[attr-defined]

    def close(self) -> None:
        for e in list(self.holds.values()):
            e.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def _event(self, table: dict[str, threading.Event], k: str) -> threading.Event:
        with self.lock:
            return table.setdefault(k, threading.Event())

    def release(self, k: str) -> None:
        self._event(self.holds, k).set()

    def app(self, environ: dict[str, Any], start: Any) -> Any:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        qs = environ.get("QUERY_STRING", "")
        inc = environ["delta.incoming"]

        def reply(status: str, body: bytes, ctype: str = "text/plain") -> list[bytes]:
            start(status, [("Content-Type", ctype), ("Content-Length", str(len(body)))])
            return [body]

        def body() -> bytes:
            n = int(environ.get("CONTENT_LENGTH") or 0)
            return environ["wsgi.input"].read(n) if n else b""

        if path == "/notes" and method == "GET":
            return reply("200 OK", json.dumps(self.notes).encode(), "application/json")
        if path == "/notes" and method == "POST":
            note = body().decode()
            with self.lock:
                self.notes.append(note)
                self.effects[inc.request_id] = self.effects.get(inc.request_id, 0) + 1
            return reply("201 Created", note.encode())
        if path.startswith("/hold/"):
            k = path[len("/hold/"):]
            data = body()
            self._event(self.arrived, k).set()
            self._event(self.holds, k).wait(60)
            with self.lock:
                self.effects[inc.request_id] = self.effects.get(inc.request_id, 0) + 1
            return reply("201 Created", data)
        if path == "/incoming":
            return reply("200 OK", json.dumps(inc.__dict__).encode(), "application/json")
        if path == "/big" and method == "GET":
            n = int(qs.split("=", 1)[1])
            start("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(n))])
            return pattern(n)
        if path == "/broken" and method == "GET":
            def broken() -> Iterator[bytes]:
                yield b"0123456789"
                raise ConnectionAbortedError("the app broke its answer on purpose")
            start("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "1000")])
            return broken()
        if path == "/sink" and method in ("PUT", "POST"):
            n = int(environ.get("CONTENT_LENGTH") or 0)
            h, got, r = hashlib.sha256(), 0, environ["wsgi.input"]
            while got < n:
                b = r.read(min(256 << 10, n - got))
                if not b:
                    break
                h.update(b)
                got += len(b)
            return reply("200 OK", json.dumps({"size": got, "sha256": h.hexdigest()}).encode(), "application/json")
        return reply("404 Not Found", b"no such thing")
