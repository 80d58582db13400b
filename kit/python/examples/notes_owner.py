"""The notes owner app, in Python: it keeps notes in memory and serves them
to the person's other computers through this computer's Delta.

    GET  /notes   every note, oldest first
    POST /notes   {"text": "…"} adds a note; 201 with the note

It listens on loopback, registers itself with Delta as the app "notes",
admits only requests that carry the forward secret Delta gave it
(DeltaOwner), and unregisters when stopped (Ctrl-C or SIGTERM).

    python3 notes_owner.py [--state-dir DIR] [--name notes]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from socketserver import ThreadingMixIn
from typing import Any, Iterable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from delta_kit import Client, DeltaError, DeltaOwner


class Notes:
    """The app itself: plain WSGI, with Delta's word on each request in
    environ["delta.incoming"]."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.notes: list[dict[str, Any]] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")

        def reply(status: str, value: Any) -> list[bytes]:
            body = json.dumps(value).encode() + b"\n"
            start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]

        if path != "/notes":
            return reply("404 Not Found", {"error": f"no such path {path}"})
        if method == "GET":
            with self.lock:
                return reply("200 OK", list(self.notes))
        if method != "POST":
            return reply("405 Method Not Allowed", {"error": f"{method} is not GET or POST"})
        try:
            n = int(environ.get("CONTENT_LENGTH") or 0)
            text = json.loads(environ["wsgi.input"].read(n))["text"]
            if not isinstance(text, str) or not text:
                raise ValueError("text is not a non-empty string")
        except (ValueError, KeyError, TypeError) as e:
            return reply("400 Bad Request", {"error": f'the body is not {{"text": "…"}}: {e}'})
        inc = environ["delta.incoming"]
        with self.lock:
            note = {"id": len(self.notes) + 1, "text": text, "from": inc.caller, "request_id": inc.request_id,
                    "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            self.notes.append(note)
        return reply("201 Created", note)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, *a: Any) -> None:
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description="The notes owner app, behind this computer's Delta.")
    ap.add_argument("--state-dir", default=None, help="the running Delta's state folder (default DELTA_STATE_DIR, else Delta's default)")
    ap.add_argument("--name", default="notes", help="the app's name at Delta")
    args = ap.parse_args()

    c = Client(args.state_dir)
    owner = DeltaOwner(Notes(), "")
    server = make_server("127.0.0.1", 0, owner, server_class=_Server, handler_class=_Quiet)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        owner.secret = c.register_app(args.name, url)["secret"]
    except DeltaError as e:
        print(f"notes: register with Delta: {e}", file=sys.stderr)
        return 1
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    print(f"notes: serving on {url} as the app {args.name!r} of the Delta in {c.state_dir}", flush=True)
    stop.wait()
    server.shutdown()
    server.server_close()
    try:
        c.remove_app(args.name)
    except DeltaError as e:
        print(f"notes: unregister from Delta: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
