"""For apps that own data: admit only requests forwarded by this
computer's Delta.

An owner app listens on loopback, where any local process can reach it;
only Delta knows the forward secret it was given at registration
(``Client.register_app``). Wrap the app:

* WSGI (Flask, Django, bottle, ``wsgiref``): ``app = DeltaOwner(app, secret)``;
  an admitted request's environ has ``environ["delta.incoming"]``.
* ASGI (Starlette, FastAPI, Django's ASGI): ``app = DeltaOwnerASGI(app, secret)``;
  ``scope["delta.incoming"]``.

A request without the secret, or with another, gets 403 and never reaches
the app. An admitted call should finish and answer even when its caller
has stopped waiting: the owner's Delta records the answer for the caller's
reconciliation.
"""

from __future__ import annotations

import hmac
import json
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Mapping, Optional

__all__ = ["Incoming", "DeltaOwner", "DeltaOwnerASGI", "check_secret"]


@dataclass(frozen=True)
class Incoming:
    """What Delta says of a request it forwarded.

    ``request_id`` names a call ("" for reads): a call arrives at most once
    under an id, so an app that keeps the id with its effect can tell a
    person which call did what. ``caller`` is the calling computer,
    ``caller_app`` the calling app; ``deadline`` is when the caller stops
    waiting (a time.time() value), 0 if none was given.
    """
    request_id: str
    caller: str
    caller_app: str
    deadline: float


def check_secret(secret: str, got: Optional[str]) -> str:
    """"" when got is the forward secret, else why the request is refused.
    Compared in constant time."""
    if not got:
        return "the request has no X-Delta-Forward-Secret: only Delta may call this app"
    if not secret or not hmac.compare_digest(got.encode(), secret.encode()):
        return "X-Delta-Forward-Secret does not match: only this computer's Delta may call this app"
    return ""


def _incoming(get: Callable[[str], str]) -> Incoming:
    deadline = 0.0
    try:
        t = float(get("x-delta-timeout"))
        if t > 0:
            deadline = time.time() + t
    except ValueError:
        pass
    return Incoming(get("x-delta-request-id"), get("x-delta-caller"), get("x-delta-app"), deadline)


def _refusal(why: str) -> bytes:
    return json.dumps({"error": "forbidden", "detail": why}).encode() + b"\n"


class DeltaOwner:
    """WSGI middleware: admits only requests carrying this app's forward
    secret, and puts an :class:`Incoming` in ``environ["delta.incoming"]``."""

    def __init__(self, app: Callable[..., Iterable[bytes]], secret: str) -> None:
        self.app = app
        self.secret = secret

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        why = check_secret(self.secret, environ.get("HTTP_X_DELTA_FORWARD_SECRET"))
        if why:
            body = _refusal(why)
            start_response("403 Forbidden", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        environ["delta.incoming"] = _incoming(lambda k: environ.get("HTTP_" + k.upper().replace("-", "_"), ""))
        return self.app(environ, start_response)


Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[Mapping[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]


class DeltaOwnerASGI:
    """ASGI middleware: admits only HTTP and WebSocket requests carrying
    this app's forward secret, and puts an :class:`Incoming` in
    ``scope["delta.incoming"]``. Other scopes (lifespan) pass through."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], secret: str) -> None:
        self.app = app
        self.secret = secret

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for k, v in scope.get("headers") or []:
            headers.setdefault(k.decode("latin-1").lower(), v.decode("latin-1"))
        why = check_secret(self.secret, headers.get("x-delta-forward-secret"))
        if why:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": why[:120]})
                return
            body = _refusal(why)
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        scope = dict(scope)
        scope["delta.incoming"] = _incoming(lambda k: headers.get(k, ""))
        await self.app(scope, receive, send)
