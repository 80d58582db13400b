"""What the kit reads of Delta: the state folder's files, the local proof,
and Delta's answers turned into outcomes. No I/O beyond files and one
socket; everything here is a plain function."""

from __future__ import annotations

import enum
import hashlib
import hmac
import http.client
import json
import os
import re
import secrets
import socket
import sys
import urllib.parse
import uuid
from dataclasses import dataclass, field
from email.message import Message
from typing import Any, Callable, Mapping, Optional

from .errors import (BadInput, Conflict, DeltaError, NotCarriedOut, NotDelta, NothingSent, OutcomeUnknown,
                     Unavailable)

LOCAL_JSON = "local.json"
TOKEN_FILE = "local-token"
DIRECT_FILE = "direct.json"

# The local API's paths (kit/contract/paths.json, held to it by
# test_paths): the one place this kit spells them. path() fills one in.
PATHS = {
    "peer": "/v1/peers/{peer}/{app}",
    "calls": "/v1/calls",
    "call": "/v1/calls/{id}",
    "call_action": "/v1/calls/{id}/{action}",
    "receipts": "/v1/receipts",
    "receipt": "/v1/receipts/{id}",
    "receipt_action": "/v1/receipts/{id}/{action}",
    "apps": "/v1/apps",
    "app": "/v1/apps/{name}",
    "forwards": "/v1/forwards",
    "forward": "/v1/forwards/{peer}/{app}",
    "status": "/v1/status",
    "proof": "/v1/proof",
    "login_link": "/v1/login-link",
    "ping": "/v1/ping/{peer}",
    "listening": "/v1/listening",
    "peer_apps": "/v1/peer-apps/{peer}",
    "pairing": "/v1/pairing",
    "pair": "/v1/pairs/{name}",
    "pair_request": "/v1/pair-requests/{id}/{action}",
    "name": "/v1/name",
    "metrics": "/metrics",
}
ACTIONS = ("ask", "dismiss", "settle", "forget", "check")
PROOF_PATH = PATHS["proof"]


def path(which: str, /, **params: str) -> str:
    """The local API's path called which, each parameter escaped as one
    path segment."""
    p = PATHS[which]
    for k, v in params.items():
        p = p.replace("{" + k + "}", urllib.parse.quote(v, safe=""))
    if "{" in p:
        raise ValueError(f"the local API's path {which} ({PATHS[which]}) needs more than {sorted(params)}")
    return p

# Headers of Delta's local API (docs/protocol.md).
OUTCOME = "X-Delta-Outcome"
REQUEST_ID = "X-Delta-Request-Id"
TIMEOUT = "X-Delta-Timeout"
ROUTE = "X-Delta-Route"
APP = "X-Delta-App"
REPLAYED = "X-Delta-Replayed"
STALE = "X-Delta-Stale"
CALLER = "X-Delta-Caller"
SECRET = "X-Delta-Forward-Secret"
DIRECT = "X-Delta-Direct"

# The safe methods: reads, never calls (docs/protocol.md §2).
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PROPFIND", "REPORT", "SEARCH", "QUERY"})
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._~:-]{1,128}$")


def default_state_dir() -> str:
    """The state folder for this OS (docs/design.md §7): ``DELTA_STATE_DIR`` when set;
    macOS ``~/Library/Application Support/Delta``; elsewhere
    ``$XDG_STATE_HOME/delta`` or ``~/.local/state/delta``."""
    d = os.environ.get("DELTA_STATE_DIR")
    if d:
        return d
    home = os.path.expanduser("~")
    if home == "~":
        return ""
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "Delta")
    x = os.environ.get("XDG_STATE_HOME")
    if x:
        return os.path.join(x, "delta")
    return os.path.join(home, ".local", "state", "delta")


def new_request_id() -> str:
    """A request id: a random UUID (version 4). Mint it and keep it before
    a call leaves, so that the app can find the call again after a crash."""
    return str(uuid.uuid4())


def check_request_id(rid: str) -> None:
    """Raise :class:`BadInput` unless rid is 1–128 of ``A-Z a-z 0-9 . _ ~ : -``,
    not only dots (Delta's rule)."""
    if not _REQUEST_ID.match(rid) or set(rid) == {"."}:
        raise BadInput(f"request id {rid!r} is not 1-128 of A-Z a-z 0-9 . _ ~ : - (and not only dots); nothing was sent")


def read_local(state_dir: str) -> dict[str, Any]:
    """local.json: where the running Delta listens (``url``, ``pid``).
    Raises FileNotFoundError when no Delta runs on the folder."""
    path = os.path.join(state_dir, LOCAL_JSON)
    with open(path, "rb") as f:
        raw = f.read()
    try:
        lf = json.loads(raw)
    except ValueError as e:
        raise ValueError(f"{path} is not Delta's local.json ({e})") from None
    if not isinstance(lf, dict) or not lf.get("url"):
        raise ValueError(f"{path} is not Delta's local.json (it names no url)")
    return lf


def read_token(state_dir: str) -> str:
    """The local API's token (local-token, 0600)."""
    with open(os.path.join(state_dir, TOKEN_FILE), encoding="utf-8") as f:
        return f.read().strip()


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (signal 0); another user's
    process counts as alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return True
    return True


def left_behind(state_dir: str, lf: Mapping[str, Any]) -> bool:
    """Whether local.json names a Delta that is no longer running (a crash
    or SIGKILL left it); if so it is removed, unless a new Delta has
    written another meanwhile."""
    pid = lf.get("pid") or 0
    if not isinstance(pid, int) or pid <= 0 or pid_alive(pid):
        return False
    try:
        if read_local(state_dir).get("pid") == pid:
            os.remove(os.path.join(state_dir, LOCAL_JSON))
    except (OSError, ValueError):
        pass  # a file that cannot be removed is still not believed
    return True


def proof(token: str, nonce: str) -> str:
    """The proof of holding token for nonce: hex(HMAC-SHA256(token,
    "delta-local-proof/1" NUL nonce)), as Delta answers it."""
    return hmac.new(token.encode(), b"delta-local-proof/1\x00" + nonce.encode(), hashlib.sha256).hexdigest()


def prove(sock: socket.socket, addr: str, token: str, state_dir: str = "", timeout: float = 5.0) -> None:
    """Have the listener on sock prove it holds this folder's token before
    anything of the app's goes on the connection: it answers an HMAC of a
    fresh nonce keyed by the token, so the token itself never leaves.
    Raises :class:`NotDelta` when it cannot."""
    nonce = secrets.token_hex(16)
    old = sock.gettimeout()
    sock.settimeout(timeout)
    try:
        try:
            sock.sendall(f"GET {PROOF_PATH}?nonce={nonce} HTTP/1.1\r\nHost: {addr}\r\n\r\n".encode())
        except OSError as e:
            raise NotDelta(addr, f"it took the connection and not the question: {e}", state_dir=state_dir) from None
        buf = b""
        while b"\r\n\r\n" not in buf:
            try:
                b = sock.recv(4096)
            except OSError as e:
                raise NotDelta(addr, f"it did not answer as Delta does: {e}", state_dir=state_dir) from None
            if not b:
                raise NotDelta(addr, "it closed the connection without answering the proof", state_dir=state_dir)
            buf += b
            if len(buf) > 16 << 10:
                raise NotDelta(addr, "it did not answer as Delta does: a head over 16 KiB", state_dir=state_dir)
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise NotDelta(addr, f"it did not answer as Delta does: {lines[0][:80]!r}", state_dir=state_dir)
        status = int(parts[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        length = int(headers.get("content-length", "-1") or "-1") if headers.get("content-length", "").isdigit() else -1
        if length < 0 or length > 4096:
            raise NotDelta(addr, f"it answered the proof {status} without a length Delta gives", state_dir=state_dir)
        while len(rest) < length:
            try:
                b = sock.recv(length - len(rest))
            except OSError as e:
                raise NotDelta(addr, f"its answer broke off: {e}", state_dir=state_dir) from None
            if not b:
                raise NotDelta(addr, "its answer broke off", state_dir=state_dir)
            rest += b
        if OUTCOME.lower() not in headers:
            raise NotDelta(addr, f"it answered {status} without {OUTCOME}", state_dir=state_dir)
        if len(rest) > length:
            raise NotDelta(addr, "it sent more than the proof", state_dir=state_dir)
        try:
            got = json.loads(rest).get("proof", "") if status == 200 else None
        except (ValueError, AttributeError):
            got = None
        if not isinstance(got, str):
            raise NotDelta(addr, f"it answered the proof {status}", state_dir=state_dir)
        if not hmac.compare_digest(got.encode(), proof(token, nonce).encode()):
            raise NotDelta(addr, "it does not hold this folder's token (another folder's Delta, or another program)",
                           state_dir=state_dir)
    finally:
        sock.settimeout(old)


@dataclass
class ErrorBody:
    """Delta's JSON on an answer it makes itself."""
    error: str = ""
    detail: str = ""
    request_id: str = ""
    peer: str = ""
    road: str = ""
    sent: Optional[bool] = None
    carried_out: Optional[bool] = None

    @classmethod
    def parse(cls, body: bytes) -> "ErrorBody":
        try:
            v = json.loads(body)
        except ValueError:
            return cls()
        if not isinstance(v, dict):
            return cls()
        out = cls()
        for k in ("error", "detail", "request_id", "peer", "road"):
            if isinstance(v.get(k), str):
                setattr(out, k, v[k])
        for k in ("sent", "carried_out"):
            if isinstance(v.get(k), bool):
                setattr(out, k, v[k])
        return out


def error_for(status: int, reason: str, headers: "Mapping[str, str] | Message", body: bytes, request_id: str = "") -> DeltaError:
    """The outcome an error answer of Delta's stands for (its
    ``X-Delta-Outcome`` is neither ``answered`` nor ``stale``): the typed
    exception, with Delta's fields. A body that is not Delta's JSON still
    gets its type from the outcome and the status."""
    get = _getter(headers)
    outcome = get(OUTCOME)
    rid = get(REQUEST_ID) or request_id
    eb = ErrorBody.parse(body)
    detail = eb.detail or f"Delta answered {status} {reason} ({outcome})".replace(" )", ")")
    rid = eb.request_id or rid
    if outcome == "outcome_unknown":
        return OutcomeUnknown(detail, request_id=rid, peer=eb.peer)
    if outcome == "conflict":
        return Conflict(detail, request_id=rid)
    if outcome == "bad_request":
        return BadInput(detail, status=status, request_id=rid, nothing_sent=eb.sent is False)
    nothing_sent = eb.sent is False
    not_carried = eb.carried_out is False or nothing_sent
    kind = NothingSent if nothing_sent else NotCarriedOut if not_carried else Unavailable
    return kind(detail, outcome=outcome, status=status, request_id=rid, peer=eb.peer, road=eb.road or get(ROUTE),
                nothing_sent=nothing_sent, not_carried_out=not_carried)


def _getter(headers: "Mapping[str, str] | Message") -> Callable[[str], str]:
    """A case-blind look-up of one header ("" when absent)."""
    if isinstance(headers, Message):
        msg = headers
        return lambda k: msg.get(k, "") or ""
    low = {k.lower(): v for k, v in headers.items()}
    return lambda k: low.get(k.lower(), "")


def outcome_type(e: Optional[BaseException]) -> str:
    """An outcome in the words of the kits' shared contract table
    (kit/contract/outcomes.json): answer, nothing_sent, not_carried_out,
    unavailable, outcome_unknown, conflict, bad_input, delta_down, cut."""
    from .errors import Cut, DeltaDown
    if e is None:
        return "answer"
    for cls, name in ((OutcomeUnknown, "outcome_unknown"), (Conflict, "conflict"), (BadInput, "bad_input"),
                      (NothingSent, "nothing_sent"), (NotCarriedOut, "not_carried_out"), (Unavailable, "unavailable"),
                      (DeltaDown, "delta_down"), (Cut, "cut")):
        if isinstance(e, cls):
            return name
    return "other"


class State(enum.StrEnum):
    """A call's states, as :attr:`CallRecord.state` says them (the same
    words in every kit: kit/contract/operations.json)."""
    SENDING = "sending"
    ANSWERED = "answered"
    UNAVAILABLE = "unavailable"
    UNKNOWN = "unknown"
    CARRIED_OUT = "carried_out"
    NOT_CARRIED_OUT = "not_carried_out"
    NEEDS_PERSON = "needs_person"


class AnswerBody:
    """What users of requests and httpx reach for on an answer: its
    ``status_code``, ``content``, ``text`` and ``json()`` (the body is held
    whole already)."""
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    @property
    def status_code(self) -> int:
        """The owner app's HTTP status (``status``)."""
        return self.status

    @property
    def content(self) -> bytes:
        """The body's bytes (``body``)."""
        return self.body

    @property
    def text(self) -> str:
        """The body decoded by its Content-Type's charset (UTF-8 when it
        names none; bytes that do not decode become U+FFFD)."""
        charset = self.headers.get_content_charset() if self.headers is not None else None
        try:
            return self.body.decode(charset or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know
            return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON (``json.JSONDecodeError`` if it is not)."""
        return json.loads(self.body)


def header_message(h: Mapping[str, Any]) -> http.client.HTTPMessage:
    """A JSON header map (name: [values]) as the case-insensitive
    ``http.client.HTTPMessage`` that :class:`Answer` has too."""
    m = http.client.HTTPMessage()
    for k, vs in h.items():
        for v in vs if isinstance(vs, list) else [vs]:
            m[k] = str(v)
    return m


@dataclass
class StoredAnswer(AnswerBody):
    """An owner app's answer as a journal keeps it (a call's record),
    shaped as :class:`Answer` is: ``headers`` case-insensitive,
    ``text``, ``json()``. ``omitted``: the body was over 1 MiB and is not
    kept."""
    status: int
    headers: http.client.HTTPMessage
    body: bytes
    omitted: bool = False


@dataclass
class CallRecord:
    """A call as this computer's journal has it (GET /v1/calls/{id}).

    ``state`` is one of sending, answered, unavailable, unknown,
    carried_out, not_carried_out, needs_person. ``raw`` holds the whole
    JSON, for fields this class does not name.
    """
    request_id: str
    peer: str
    app: str
    state: str
    method: str = ""
    path: str = ""
    caller_app: str = ""
    outcome: str = ""
    detail: str = ""
    owner_state: str = ""
    asks: int = 0
    dismissed: bool = False
    digest: str = ""
    settled_by: str = ""
    settle_note: str = ""
    created_at: str = ""
    updated_at: str = ""
    attempts: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    answer: Optional[StoredAnswer] = None
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> "CallRecord":
        import base64
        ans = None
        a = v.get("answer")
        if isinstance(a, dict):
            ans = StoredAnswer(status=a.get("status", 0), headers=header_message(a.get("headers") or {}),
                               body=base64.b64decode(a.get("body_base64") or ""), omitted=bool(a.get("body_omitted")))
        names = ("request_id", "peer", "app", "state", "method", "path", "caller_app", "outcome", "detail",
                 "owner_state", "asks", "dismissed", "digest", "settled_by", "settle_note", "created_at", "updated_at")
        kw = {k: v[k] for k in names if k in v and v[k] is not None}
        kw.setdefault("request_id", "")
        kw.setdefault("peer", "")
        kw.setdefault("app", "")
        kw.setdefault("state", "")
        return cls(**kw, attempts=v.get("attempts") or [], history=v.get("history") or [], answer=ans, raw=v)

    @property
    def settled(self) -> bool:
        """Known for good: answered, unavailable, carried_out or
        not_carried_out (needs_person is not: a person must check)."""
        return self.state in ("answered", "unavailable", "carried_out", "not_carried_out")

    @property
    def waiting(self) -> bool:
        """Still to come: sending, or unknown while Delta asks the owner."""
        return self.state in ("sending", "unknown")
