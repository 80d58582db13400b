"""The outcomes of a request that got no answer from the owner's app.

Each is an exception, one type per thing that can have happened, so that
an app never reads Delta's guarantee back from a sentence:

* :class:`NothingSent`: nothing of the request left this computer (no
  road, a connect that failed, an unknown peer, a wrong token). Safe to
  make again.
* :class:`NotCarriedOut`: it reached the owner, whose Delta proved its app
  did not act (the app was not listening, is not registered, the door
  refused). Safe to make again. ``NothingSent`` is a kind of it.
* :class:`Unavailable`: no answer and no promise either way; only a read
  (which is safe to ask again) is ever told this. Both above are kinds of
  it.
* :class:`OutcomeUnknown`: a call left and no answer came. Delta never
  sends it again; it asks the owner by the request id until it knows, and
  :meth:`delta_kit.Client.wait_settled` waits for that.
* :class:`Conflict`: the request id is in use for another request; nothing
  was sent.
* :class:`BadInput`: the request was malformed (Delta's ``bad_request``,
  or the kit's own check); nothing was sent. Also a :class:`ValueError`.
* :class:`DeltaDown`: this computer's Delta is not running, or the
  listener where it should be is not it (:class:`NotDelta`); nothing was
  sent.
* :class:`Cut`: an answer broke off before its end; what came is not the
  whole answer.
* :class:`APIError`: Delta refused a request of its own API (the calls
  journal, apps, forwards, status).
"""

from __future__ import annotations

__all__ = [
    "DeltaError", "Unavailable", "NotCarriedOut", "NothingSent", "OutcomeUnknown",
    "Conflict", "BadInput", "DeltaDown", "NotDelta", "Cut", "APIError",
]


class DeltaError(Exception):
    """The base of every outcome that is not the owner's answer."""

    detail: str

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class Unavailable(DeltaError):
    """No answer came from the owner's app (Delta's ``unavailable``,
    ``not_found``, ``forbidden``, ``timeout``, ``app_error``, …).

    ``outcome`` is Delta's ``X-Delta-Outcome``, ``status`` its HTTP
    status. ``nothing_sent`` and ``not_carried_out`` are Delta's
    guarantee fields (``"sent": false``, ``"carried_out": false``): the
    subclasses :class:`NothingSent` and :class:`NotCarriedOut` are raised
    when they hold.
    """

    def __init__(self, detail: str, *, outcome: str, status: int, request_id: str = "", peer: str = "",
                 road: str = "", nothing_sent: bool = False, not_carried_out: bool = False) -> None:
        super().__init__(detail)
        self.outcome = outcome
        self.status = status
        self.request_id = request_id
        self.peer = peer
        self.road = road
        self.nothing_sent = nothing_sent
        self.not_carried_out = not_carried_out or nothing_sent

    def __str__(self) -> str:
        return f"{self.outcome}: {self.detail}"


class NotCarriedOut(Unavailable):
    """It was certainly not carried out: the owner's Delta proved its app
    did not act, or nothing was sent. Safe to make again."""


class NothingSent(NotCarriedOut):
    """Nothing of the request left this computer. Safe to make again."""


class OutcomeUnknown(DeltaError):
    """The call left and no complete answer came, so nobody knows yet
    whether the owner acted. Delta never sends it again: it has written it
    to its journal and asks the owner by ``request_id`` until it knows
    (``what_delta_does`` says so in words). ``Client.wait_settled(id)``
    waits for that."""

    def __init__(self, detail: str, *, request_id: str, peer: str = "") -> None:
        super().__init__(detail)
        self.request_id = request_id
        self.peer = peer
        who = peer or "the owner"
        self.what_delta_does = (
            f"Delta never sends it again; it keeps the call in its journal and asks {who} by request id "
            f"{request_id} until it knows whether it was carried out, or until a person settles it "
            f"(delta show {request_id})")

    def __str__(self) -> str:
        return f"outcome unknown (request id {self.request_id}): {self.detail}"


class Conflict(DeltaError):
    """The request id is in use on this computer for another request
    (another method, path or body). Nothing was sent."""

    def __init__(self, detail: str, *, request_id: str) -> None:
        super().__init__(detail)
        self.request_id = request_id
        self.nothing_sent = True

    def __str__(self) -> str:
        return f"conflict (request id {self.request_id}): {self.detail}"


class BadInput(DeltaError, ValueError):
    """The request was malformed: Delta refused it (``bad_request``: a
    request id, timeout, path, Host or size it does not take), or the kit
    did before asking Delta (``status`` 0). It was not carried out.
    ``nothing_sent`` is true unless some of it had left: a streamed call
    whose body grew past this computer's max_call_bytes is cut there, after
    its first bytes left and before its owner could have given it to its
    app (413)."""

    def __init__(self, detail: str, *, status: int = 0, outcome: str = "bad_request", request_id: str = "",
                 nothing_sent: bool = True) -> None:
        super().__init__(detail)
        self.status = status
        self.outcome = outcome
        self.request_id = request_id
        self.nothing_sent = nothing_sent
        self.not_carried_out = True

    def __str__(self) -> str:
        return f"bad input: {self.detail}"


class DeltaDown(DeltaError):
    """This computer's Delta is not running (or did not take the
    connection). Nothing was sent. ``state_dir`` is the folder looked in,
    ``url`` where Delta was looked for, ``request_id`` the call's id when a
    call was refused so."""

    def __init__(self, detail: str, *, state_dir: str = "", url: str = "", request_id: str = "") -> None:
        super().__init__(detail)
        self.state_dir = state_dir
        self.url = url
        self.request_id = request_id
        self.nothing_sent = True

    def __str__(self) -> str:
        where = f"state folder {self.state_dir}" if self.state_dir else "no state folder"
        if self.url:
            where += f", at {self.url}"
        return f"Delta is not running ({where}): {self.detail}; nothing was sent"


class NotDelta(DeltaDown):
    """The listener named in local.json is not this folder's Delta (a
    process that took a dead Delta's port): it could not prove it holds the
    folder's token, so neither the token nor the request was sent to it."""

    def __init__(self, addr: str, why: str, *, state_dir: str = "") -> None:
        super().__init__(
            f"the listener at {addr} is not this folder's Delta ({why}); the token and the request were not sent to it",
            state_dir=state_dir, url=f"http://{addr}")
        self.addr = addr
        self.why = why


class Cut(DeltaError):
    """An answer broke off before its end and could not be continued: the
    ``read`` bytes that came are not the whole answer (``total`` is its
    length, -1 if it was not announced)."""

    def __init__(self, read: int, total: int, cause: str) -> None:
        if total >= 0:
            msg = f"the answer broke off after {read} of its {total} bytes: {cause}; what came is not the whole answer"
        else:
            msg = f"the answer broke off after {read} bytes: {cause}; what came is not the whole answer"
        super().__init__(msg)
        self.read = read
        self.total = total


class APIError(DeltaError):
    """Delta refused a request of its own API: ``outcome`` and ``detail``
    say why (``not_found``, ``conflict``, ``bad_request``, …)."""

    def __init__(self, detail: str, *, status: int, outcome: str) -> None:
        super().__init__(detail)
        self.status = status
        self.outcome = outcome

    def __str__(self) -> str:
        return f"{self.outcome}: {self.detail}"
