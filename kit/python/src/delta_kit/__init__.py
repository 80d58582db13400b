"""delta_kit: what a Python app uses to talk to its computer's Delta.

Delta carries an app's requests to the person's other computers over the
best road at the moment, and sends writes ("calls") at most once. This
kit gives a Python app what the Go kit gives a Go app (docs/kits.md):

    from delta_kit import Client, new_request_id, NothingSent, NotCarriedOut, OutcomeUnknown

    c = Client()                      # the default state folder, or DELTA_STATE_DIR
    notes = c.get("studio", "notes", "/notes").body
    rid = new_request_id()
    save_outbox(rid, note)            # the id is known before the call leaves: keep it first
    try:
        a = c.call("studio", "notes", "POST", "/notes", note, request_id=rid)
        print("studio's notes answered", a.status)       # its own answer, any status
    except NotCarriedOut as e:                           # NothingSent is a kind of it
        print("not carried out:", e.detail)              # safe to make again later
    except OutcomeUnknown as e:
        print(e.what_delta_does)
        rec = c.wait_settled(rid)                        # Delta asks studio until it knows
        print("settled:", rec.state)                     # carried_out, not_carried_out or needs_person

Owner apps check the forward secret with :mod:`delta_kit.owner`.
"""

from .client import Answer, Client, Response, program_name
from .errors import (APIError, BadInput, Conflict, Cut, DeltaDown, DeltaError, NotCarriedOut, NotDelta, NothingSent,
                     OutcomeUnknown, Unavailable)
from .owner import DeltaOwner, DeltaOwnerASGI, Incoming
from .wire import CallRecord, State, StoredAnswer, default_state_dir, new_request_id, outcome_type

__version__ = "0.1.0"

__all__ = [
    "Client", "Answer", "Response", "CallRecord", "State", "StoredAnswer", "new_request_id", "default_state_dir",
    "program_name", "outcome_type",
    "DeltaError", "Unavailable", "NotCarriedOut", "NothingSent", "OutcomeUnknown", "Conflict", "BadInput",
    "DeltaDown", "NotDelta", "Cut", "APIError",
    "DeltaOwner", "DeltaOwnerASGI", "Incoming",
]
