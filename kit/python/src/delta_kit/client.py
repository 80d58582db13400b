"""The client of this computer's Delta: reads, at-most-once calls with
typed outcomes, settlement, and Delta's own API."""

from __future__ import annotations

import http.client
import io
import json
import os
import socket
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping, Optional, Union

from . import wire
from .errors import APIError, BadInput, Cut, DeltaDown, DeltaError, NotDelta, OutcomeUnknown, Unavailable

__all__ = ["Client", "Answer", "Response", "program_name"]

Body = Union[bytes, bytearray, memoryview, str, BinaryIO, Iterable[bytes], None]
Progress = Callable[[int, int], None]

_CHUNK = 256 << 10


def program_name() -> str:
    """The name the kit gives a calling app that names none: its program's,
    as people see it in ps and Activity Monitor ("notes-sync"), never a
    library's. For a script, the script's base name without ".py"."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] not in ("", "-c", "-m") else ""
    if not argv0:
        return os.path.basename(sys.executable) or "python"
    name = os.path.basename(argv0)
    if name == "__main__.py":  # python -m pkg: the package's name
        name = os.path.basename(os.path.dirname(argv0))
    return name[:-3] if name.endswith(".py") else name


@dataclass
class Answer(wire.AnswerBody):
    """The owner app's own answer, whatever its status, with what users of
    requests and httpx reach for: ``status_code``, ``content``, ``text``,
    ``json()``.

    ``road`` is the road it came over (thunderbolt, lan, tailnet);
    ``request_id`` the call's id; ``replayed``: the call had been made
    before under this id and this is the answer recorded then (nothing was
    sent again); ``direct``: this computer's Delta was down and the kit read
    the peer directly; ``stale``: the peer could not be reached and this is
    a cached answer (``stale_reason`` why, ``age`` how old in seconds).
    """
    status: int
    headers: http.client.HTTPMessage
    body: bytes = b""
    road: str = ""
    request_id: str = ""
    replayed: bool = False
    direct: bool = False
    stale: bool = False
    stale_reason: str = ""
    age: float = 0.0


class _Conn(http.client.HTTPConnection):
    """A connection to the local API, proven before anything of the app's
    went on it. It is never connected again by http.client: a closed one
    is dropped."""

    def __init__(self, host: str, port: int, sock: socket.socket) -> None:
        super().__init__(host, port)
        self.sock = sock
        self.blocksize = _CHUNK

    def connect(self) -> None:  # http.client calls it only when sock is None
        raise ConnectionError("the connection to Delta was closed (a new one is proven first)")


class _HandedOver(Exception):
    """A connection to Delta was made and the exchange failed: a call may
    have been handed over."""


class Response:
    """An owner app's answer whose body streams: read it with
    :meth:`read` or by iterating, and close it (or use ``with``). The
    answer's fields are those of :class:`Answer`. A body that breaks off
    before its end raises :class:`Cut`, never a clean end: an answer that
    ends cleanly is whole."""

    def __init__(self, resp: http.client.HTTPResponse, conn: Optional[http.client.HTTPConnection],
                 client: Optional["Client"], *, request_id: str = "", direct: bool = False, road: str = "",
                 progress: Optional[Progress] = None) -> None:
        h = resp.headers
        self.status = resp.status
        self.headers = h
        self.road = road or h.get(wire.ROUTE, "")
        self.request_id = h.get(wire.REQUEST_ID, "") or request_id
        self.replayed = h.get(wire.REPLAYED, "") == "true"
        self.direct = direct or h.get(wire.DIRECT, "") == "true"
        self.stale = h.get(wire.OUTCOME, "") == "stale"
        self.stale_reason = h.get(wire.STALE, "") if self.stale else ""
        age = h.get("Age", "")
        self.age = float(age) if self.stale and age.isdigit() else 0.0
        cl = h.get("Content-Length", "")
        self.total = int(cl) if cl.isdigit() and resp.length is not None else -1
        self._resp = resp
        self._conn = conn
        self._client = client
        self._progress = progress
        self._n = 0
        self._done = False

    def answer(self, body: bytes = b"") -> Answer:
        """The answer's fields, with body."""
        return Answer(self.status, self.headers, body, self.road, self.request_id, self.replayed, self.direct,
                      self.stale, self.stale_reason, self.age)

    def read(self, n: int = -1) -> bytes:
        """Up to n bytes of the body (all that is left when n < 0); b"" at
        its end."""
        if n is None or n < 0:
            return b"".join(iter(lambda: self.read(_CHUNK), b""))
        if self._done or n == 0:
            return b""
        try:
            data = self._resp.read(n)
        except (http.client.IncompleteRead, http.client.HTTPException, OSError) as e:
            self._cut(f"{type(e).__name__}: {e}")
        self._n += len(data)
        if self._progress and data:
            self._progress(self._n, self.total)
        if not data:
            if self.total >= 0 and self._n < self.total:
                self._cut("the connection closed before the answer's length")
            self._finish(keep=True)
        return data

    def __iter__(self) -> Iterator[bytes]:
        return iter(lambda: self.read(_CHUNK), b"")

    def _cut(self, why: str) -> None:
        self._finish(keep=False)
        raise Cut(self._n, self.total, why)

    def _finish(self, keep: bool) -> None:
        if self._done:
            return
        self._done = True
        if self._progress and keep:
            self._progress(self._n, self.total)
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if keep and self._client is not None and isinstance(conn, _Conn) and not self._resp.will_close and conn.sock is not None:
            self._client._put_idle(conn)
        else:
            conn.close()

    def close(self) -> None:
        """Close the answer; one not read to its end closes its connection."""
        if not self._done:
            self._finish(keep=False)
        self._resp.close()

    def __enter__(self) -> "Response":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Counting(io.RawIOBase):
    """A call's body as it leaves, counted for progress."""

    def __init__(self, r: BinaryIO, total: int, report: Progress) -> None:
        self._r, self._total, self._report, self._n = r, total, report, 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        b = self._r.read(n)
        self._n += len(b)
        self._report(self._n, self._total)
        return b


class Client:
    """A client of this computer's Delta, found through the state folder's
    local.json and local-token (docs/design.md §7). Safe to share between threads.

    ``Client()`` names the default state folder (``DELTA_STATE_DIR``, else
    the OS's) and, as ``httpx.Client()`` does, never fails: each request
    finds Delta through the folder when it is made. When Delta is not
    running, a request raises :class:`DeltaDown` naming the folder, unless
    Delta left what reads need to go on without it (direct.json): then
    reads go directly to the peer and everything else raises
    :class:`DeltaDown`.

    ``app`` names the calling app to the owner (``X-Delta-App``), in the
    menu and in ``delta calls``; by default the program's name.
    """

    def __init__(self, state_dir: Optional[str] = None, *, app: Optional[str] = None,
                 now: Optional[Callable[[], float]] = None) -> None:
        self.state_dir = state_dir or wire.default_state_dir()
        self.app = app or program_name()
        self.now = now or time.time
        self._lock = threading.Lock()
        self._url = ""
        self._token = ""
        self._idle: list[_Conn] = []

    def close(self) -> None:
        """Close the pooled connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """The running Delta's local API, as local.json says ("" if down)."""
        try:
            return self._endpoint(False)[0]
        except DeltaDown:
            return ""

    # -- finding and proving Delta ------------------------------------

    def _endpoint(self, reload: bool) -> tuple[str, str]:
        with self._lock:
            if self._url and not reload:
                return self._url, self._token
            if not self.state_dir:
                raise DeltaDown("no state folder: set DELTA_STATE_DIR (HOME is not set either)")
            try:
                lf = wire.read_local(self.state_dir)
            except FileNotFoundError:
                raise DeltaDown("it has no local.json, which a running Delta writes there", state_dir=self.state_dir) from None
            except (OSError, ValueError) as e:
                raise DeltaDown(str(e), state_dir=self.state_dir) from None
            if wire.left_behind(self.state_dir, lf):
                raise DeltaDown("its local.json was left by a Delta that is no longer running (a crash or a SIGKILL); it was removed",
                                state_dir=self.state_dir, url=lf["url"])
            try:
                tok = wire.read_token(self.state_dir)
            except OSError as e:
                raise DeltaDown(f"read the local token: {e}", state_dir=self.state_dir, url=lf["url"]) from None
            self._url, self._token = lf["url"], tok
            return self._url, self._token

    def _dial(self) -> _Conn:
        """A new connection to the local API, proven (wire.prove) before
        anything of the app's is sent. After a failed connect, local.json is
        read once more (Delta may have restarted elsewhere: nothing was
        sent, so a second connect is safe)."""
        last: Exception = OSError("no attempt")
        url = ""
        for reload in (False, True):
            url, tok = self._endpoint(reload)
            u = urllib.parse.urlsplit(url)
            host, port = u.hostname or "127.0.0.1", u.port or 80
            try:
                sock = socket.create_connection((host, port), timeout=5)
            except OSError as e:
                last = e
                continue
            addr = f"{host}:{port}"
            try:
                wire.prove(sock, addr, tok, self.state_dir)
            except NotDelta as e:
                sock.close()
                last = e
                continue
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return _Conn(host, port, sock)
        if isinstance(last, NotDelta):
            raise last
        raise DeltaDown(f"{url} did not take the connection: {last}", state_dir=self.state_dir, url=url)

    def _put_idle(self, c: _Conn) -> None:
        with self._lock:
            if len(self._idle) < 16:
                self._idle.append(c)
                return
        c.close()

    def _take_idle(self) -> Optional[_Conn]:
        with self._lock:
            return self._idle.pop() if self._idle else None

    def _send(self, method: str, path: str, headers: dict[str, str], body: Any = None, *,
              pooled: bool) -> tuple[http.client.HTTPResponse, _Conn]:
        """One request to the local API. DeltaDown when no connection was
        made (nothing was sent); _HandedOver when one was and the exchange
        failed."""
        conn = self._take_idle() if pooled else None
        reused = conn is not None
        if conn is None:
            conn = self._dial()
        tok = self._endpoint(False)[1]
        h = dict(headers)
        h["Authorization"] = "Bearer " + tok
        for attempt in (1, 2):
            try:
                conn.request(method, path, body=body, headers=h)
                return conn.getresponse(), conn
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                if attempt == 1 and reused and body is None and method in wire.READ_METHODS:
                    # A pooled connection Delta had closed: a read is safe
                    # on a fresh one.
                    conn = self._dial()
                    continue
                raise _HandedOver(f"{type(e).__name__}: {e}") from None
        raise AssertionError("unreachable")

    # -- reads ----------------------------------------------------------

    def get(self, peer: str, app: str, path: str, *, route: str = "", timeout: float = 0,
            headers: Optional[Mapping[str, str]] = None, progress: Optional[Progress] = None) -> Answer:
        """Read path from app on peer (GET) and hold the whole answer; for
        answers of any size, :meth:`stream`. A read is safe: Delta may retry
        it on a fresh road, resume it, or serve a cached answer marked
        ``stale``. ``timeout`` is how long the owner app may take to begin
        its answer, in seconds (X-Delta-Timeout); 0: the owner app's own,
        else Delta's 30 s. It never bounds the body once it has begun.
        Raises :class:`Unavailable` (or a kind of it), :class:`Cut`,
        :class:`BadInput`, :class:`DeltaDown`."""
        with self.stream(peer, app, path, route=route, timeout=timeout, headers=headers, progress=progress) as r:
            return r.answer(r.read())

    def stream(self, peer: str, app: str, path: str, *, route: str = "", timeout: float = 0,
               headers: Optional[Mapping[str, str]] = None, progress: Optional[Progress] = None) -> Response:
        """Read path from app on peer as :meth:`get` does, and return the
        answer with its body still to read: nothing is held whole. While
        this computer's Delta is down, the read goes directly to the peer
        with the read ticket Delta left (direct.json); a call never does."""
        h = self._headers(headers, route, timeout)
        if not path.startswith("/"):
            path = "/" + path
        try:
            resp, conn = self._send("GET", _peer_path(peer, app, path), h, pooled=True)
        except DeltaDown as down:
            from .direct import read_direct
            resp, dconn, road = read_direct(self, down, peer, app, path, h)
            return _stream_or_raise(resp, dconn, None, "", progress, direct=True, road=road)
        except _HandedOver as e:
            raise Unavailable(f"the read was handed to this computer's Delta and no answer came back ({e}); a read is safe to make again",
                              outcome="unavailable", status=0, peer=peer) from None
        return _stream_or_raise(resp, conn, self, "", progress)

    # -- calls ----------------------------------------------------------

    def call(self, peer: str, app: str, method: str, path: str, body: Body = b"", *, request_id: str = "",
             timeout: float = 0, route: str = "", headers: Optional[Mapping[str, str]] = None,
             size: int = -1, progress: Optional[Progress] = None) -> Answer:
        """Send method to path of app on peer, at most once, on a
        connection of its own. ``body`` is bytes, a str (UTF-8), a binary
        file (streamed: its size from ``size``, else from the file, else
        sent chunked) or an iterable of bytes (chunked): a body of any size
        is never held whole. Mint ``request_id`` yourself
        (:func:`new_request_id`) and keep it before calling when the app
        must find the call again after a crash.

        Returns the owner app's :class:`Answer` (any status), or raises:
        :class:`NothingSent` / :class:`NotCarriedOut` (safe to make again),
        :class:`OutcomeUnknown` (Delta reconciles it: :meth:`wait_settled`),
        :class:`Conflict`, :class:`BadInput`, :class:`DeltaDown`."""
        method = method.upper()
        if method in wire.READ_METHODS or method in ("", "CONNECT", "TRACE"):
            raise BadInput(f"{method!r} is not a call's method; reads (safe methods) go through get or stream; nothing was sent")
        rid = request_id or wire.new_request_id()
        wire.check_request_id(rid)
        h = self._headers(headers, route, timeout)
        h[wire.REQUEST_ID] = rid
        data: Any = body
        if isinstance(body, str):
            data = body.encode()
        if isinstance(data, (bytes, bytearray, memoryview)):
            h["Content-Length"] = str(len(data))
            if progress:
                total = len(data)
                data = _Counting(io.BytesIO(bytes(data)), total, progress)
        elif data is None:
            h["Content-Length"] = "0"
        elif hasattr(data, "read"):
            if size < 0:
                size = _file_size(data)
            if size >= 0:
                h["Content-Length"] = str(size)
            if progress:
                data = _Counting(data, size, progress)
        elif size >= 0:
            h["Content-Length"] = str(size)
        if "Content-Length" not in h:
            data = _chunked(data)  # http.client sends a generator chunked
        try:
            resp, conn = self._send(method, _peer_path(peer, app, path), h, body=data, pooled=False)
        except DeltaDown as e:
            e.request_id = rid
            raise
        except _HandedOver as e:
            raise OutcomeUnknown(
                f"the call was handed to this computer's Delta and no answer came back from it ({e}); Delta may have sent it: "
                f"wait_settled({rid!r}) tells", request_id=rid, peer=peer) from None
        r = _stream_or_raise(resp, conn, None, rid, None)
        try:
            return r.answer(r.read())
        except Cut as e:
            raise OutcomeUnknown(
                f"the owner's answer was recorded, but reading it from the local Delta failed ({e}): wait_settled({r.request_id!r}) has it",
                request_id=r.request_id, peer=peer) from None
        finally:
            r.close()

    def wait_settled(self, request_id: str, timeout: Optional[float] = None) -> wire.CallRecord:
        """Wait until call request_id's outcome is known for good or needs a
        person, and return its record: carried_out (with the owner's
        answer), not_carried_out, needs_person, or, for a call that was
        not unknown, answered or unavailable. Raises TimeoutError when
        timeout seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = 600.0
            if deadline is not None:
                wait = min(wait, max(deadline - time.monotonic(), 1.0))
            rec = self._record("GET", wire.path("call", id=request_id) + f"?wait={wait:.0f}")
            if not rec.waiting:
                return rec
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"call {request_id} is still {rec.state} after {timeout} s: {rec.detail}")

    # -- the calls journal and Delta's own API --------------------------

    def call_record(self, request_id: str) -> wire.CallRecord:
        """Call request_id's record, with its attempts and history."""
        return self._record("GET", wire.path("call", id=request_id))

    def calls(self, state: str = "") -> list[wire.CallRecord]:
        """The calls this computer made, newest first: state "" for all,
        "unsettled", "dismissed", or a call state."""
        q = "?state=" + _q(state) if state else ""
        return [wire.CallRecord.from_json(c) for c in self._api("GET", wire.path("calls") + q).get("calls") or []]

    def ask(self, request_id: str) -> wire.CallRecord:
        """Make Delta ask the owner about an unsettled call now."""
        return self._record("POST", wire.path("call_action", id=request_id, action="ask"))

    def dismiss(self, request_id: str) -> wire.CallRecord:
        """Set an unsettled call aside: hidden from the menu, still asked about."""
        return self._record("POST", wire.path("call_action", id=request_id, action="dismiss"))

    def forget(self, request_id: str) -> wire.CallRecord:
        """Drop what a call sent (its kept headers and body); its record stays."""
        return self._record("POST", wire.path("call_action", id=request_id, action="forget"))

    def settle(self, request_id: str, state: str, note: str = "") -> wire.CallRecord:
        """Record a person's settlement of an unknown or needs_person call:
        state "carried_out" or "not_carried_out", with what they saw. Delta
        then stops asking the owner."""
        if state not in ("carried_out", "not_carried_out"):
            raise BadInput(f"state {state!r} is not carried_out or not_carried_out; nothing was sent")
        return self._record("POST", wire.path("call_action", id=request_id, action="settle"), {"state": state, "note": note})

    def receipts(self, state: str = "") -> list[dict[str, Any]]:
        """What this computer's apps received in the last 7 days."""
        q = "?state=" + _q(state) if state else ""
        return self._api("GET", wire.path("receipts") + q).get("receipts") or []

    def status(self) -> dict[str, Any]:
        """This computer's Delta's status (GET /v1/status)."""
        return self._api("GET", wire.path("status"))

    def register_app(self, name: str, url: str) -> dict[str, Any]:
        """Register (or re-point) the owner app name at url
        ("http://127.0.0.1:PORT"); the answer's "secret" is the forward
        secret the app checks (:mod:`delta_kit.owner`)."""
        return self._api("PUT", wire.path("app", name=name), {"url": url})

    def apps(self) -> list[dict[str, Any]]:
        """The registered owner apps."""
        return self._api("GET", wire.path("apps")).get("apps") or []

    def listening(self) -> list[dict[str, Any]]:
        """The ports programs on this computer listen on that an app could
        be shared at, each with its program where the OS tells and the app
        already shared at it (GET /v1/listening; Linux and macOS)."""
        return self._api("GET", wire.path("listening")).get("ports") or []

    def peer_apps(self, peer: str) -> list[dict[str, Any]]:
        """The apps peer shares with this computer, as it says now over
        the pinned road (a Delta tells its paired peers, and no one
        else), each with this computer's forward to it ("forward") when
        there is one."""
        return self._api("GET", wire.path("peer_apps", peer=peer)).get("apps") or []

    def pairing(self) -> dict[str, Any]:
        """Static mode's pairing (GET /v1/pairing): this computer ("self",
        its "id"), the computers asking to pair with it ("requests") and
        the peers it paired ("peers"), each with its "state": "paired"
        once the peer has paired this computer too."""
        return self._api("GET", wire.path("pairing"))

    def pair(self, name: str, id: str, address: str, road: str = "") -> dict[str, Any]:
        """A person's yes here to the computer id at address (its peer
        API, HOST:PORT), known here as name. It is asked at once, and
        paired when a person there says yes too (the answer's "state")."""
        body = {"id": id, "address": address}
        if road:
            body["road"] = road
        return self._api("PUT", wire.path("pair", name=name), body)

    def unpair(self, name: str) -> None:
        """Forget peer name: its door admits it no more."""
        self._api("DELETE", wire.path("pair", name=name))

    def accept_pair(self, id: str, name: str = "") -> dict[str, Any]:
        """Accept the request to pair of the computer id, known here as
        name (if empty, the name it gave)."""
        return self._api("POST", wire.path("pair_request", id=id, action="accept"), {"name": name} if name else {})

    def ignore_pair(self, id: str) -> None:
        """Ignore the request to pair of the computer id: it is not shown
        again until Delta restarts."""
        self._api("POST", wire.path("pair_request", id=id, action="ignore"))

    def rename(self, name: str) -> dict[str, Any]:
        """Give this computer a new name (PUT /v1/name; static mode): its
        peers know it by the names they chose, which do not change."""
        return self._api("PUT", wire.path("name"), {"name": name})

    def remove_app(self, name: str) -> None:
        """Unregister an owner app."""
        self._api("DELETE", wire.path("app", name=name))

    def forward(self, peer: str, app: str, listen: str = "", token: bool = False) -> dict[str, Any]:
        """Open (or change) this computer's forward to app on peer: a
        loopback URL ("url") that carries every request to that app, with
        no prefix and no token. listen is a loopback address ("" keeps the
        forward's, or takes a free port); token asks for the local token."""
        body: dict[str, Any] = {}
        if listen:
            body["listen"] = listen
        if token:
            body["token"] = True
        return self._api("PUT", wire.path("forward", peer=peer, app=app), body)

    def forwards(self) -> list[dict[str, Any]]:
        """This computer's forwards."""
        return self._api("GET", wire.path("forwards")).get("forwards") or []

    def remove_forward(self, peer: str, app: str) -> None:
        """Close and forget the forward to app on peer."""
        self._api("DELETE", wire.path("forward", peer=peer, app=app))

    def _record(self, method: str, path: str, body: Any = None) -> wire.CallRecord:
        return wire.CallRecord.from_json(self._api(method, path, body))

    def _api(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        h = {"Content-Type": "application/json", "Content-Length": str(len(data or b""))}
        try:
            resp, conn = self._send(method, path, h, body=data, pooled=True)
        except _HandedOver as e:
            raise DeltaError(f"Delta took {method} {path} and no answer came back ({e})") from None
        r = Response(resp, conn, self)
        try:
            raw = r.read()
        except Cut as e:
            raise DeltaError(f"Delta's answer to {method} {path} broke off: {e}") from None
        finally:
            r.close()
        outcome = resp.headers.get(wire.OUTCOME, "")
        if not outcome:
            raise DeltaError(f"{self.url} answered {method} {path} with {resp.status} and no {wire.OUTCOME}: it is not Delta's local API")
        if resp.status // 100 != 2:
            eb = wire.ErrorBody.parse(raw)
            raise APIError(eb.detail or f"Delta answered {method} {path} with {resp.status}", status=resp.status, outcome=outcome)
        if not raw.strip():
            return {}
        try:
            v = json.loads(raw)
        except ValueError as e:
            raise DeltaError(f"Delta's answer to {method} {path} is not the JSON expected: {e}") from None
        return v if isinstance(v, dict) else {"value": v}

    def _headers(self, headers: Optional[Mapping[str, str]], route: str, timeout: float) -> dict[str, str]:
        h = dict(headers or {})
        low = {k.lower() for k in h}
        if wire.APP.lower() not in low and self.app:
            h[wire.APP] = self.app
        if route:
            h[wire.ROUTE] = route
        if timeout and timeout > 0:
            h[wire.TIMEOUT] = f"{min(timeout, 600):.3f}"
        return h


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _peer_path(peer: str, app: str, path: str) -> str:
    if not path.startswith("/"):
        path = "/" + path
    return wire.path("peer", peer=peer, app=app) + path


def _file_size(f: Any) -> int:
    try:
        st = os.fstat(f.fileno())
        if os.path.isfile(getattr(f, "name", "")) or st.st_size > 0:
            return int(st.st_size - f.tell())
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        pass
    return -1


def _chunked(data: Any) -> Iterator[bytes]:
    """A body of unknown length, as http.client's chunked encoding takes it."""
    if hasattr(data, "read"):
        while True:
            b = data.read(_CHUNK)
            if not b:
                return
            yield b
    else:
        for b in data:
            if b:
                yield bytes(b)


def _stream_or_raise(resp: http.client.HTTPResponse, conn: Optional[http.client.HTTPConnection], client: Optional[Client],
                     request_id: str, progress: Optional[Progress], *, direct: bool = False, road: str = "") -> Response:
    """A local API answer as a Response whose body streams, or the typed
    outcome (reading, and closing, Delta's own JSON)."""
    outcome = resp.headers.get(wire.OUTCOME, "")
    if outcome in ("answered", "stale"):
        return Response(resp, conn, client, request_id=request_id, progress=progress, direct=direct, road=road)
    try:
        raw = resp.read(1 << 20)
    except (OSError, http.client.HTTPException):
        raw = b""
    finally:
        resp.close()
        if conn is not None:
            conn.close()
    if not outcome:
        raise DeltaError(f"the answer ({resp.status} {resp.reason}) has no {wire.OUTCOME}: it is not Delta's")
    raise wire.error_for(resp.status, resp.reason, resp.headers, raw, request_id)
