"""A client of the notes app on another computer, in Python: it adds a
note (a call, sent at most once) and lists the notes (a read).

    python3 notes_client.py [--state-dir DIR] PEER add "text"
    python3 notes_client.py [--state-dir DIR] PEER list

Each outcome of a call is told apart, as an app must: the owner's answer;
not carried out (safe to make again); outcome unknown (never resent here:
Delta asks the owner by the request id, and this waits for its word).
While Delta is down, "list" still reads directly from the peer.
"""

from __future__ import annotations

import argparse
import json
import sys

from delta_kit import (BadInput, Client, DeltaDown, DeltaError, NotCarriedOut, NothingSent, OutcomeUnknown,
                       new_request_id)


def add(c: Client, peer: str, text: str, wait: float) -> int:
    rid = new_request_id()
    # A real app keeps rid with the note before the call leaves, so that a
    # crash here still knows which call to ask Delta about.
    try:
        a = c.call(peer, "notes", "POST", "/notes", json.dumps({"text": text}), request_id=rid,
                   headers={"Content-Type": "application/json"})
    except NothingSent as e:
        print(f"nothing was sent ({e.detail}); the note can be added again later")
        return 2
    except NotCarriedOut as e:
        print(f"not carried out ({e.detail}); the note can be added again later")
        return 2
    except OutcomeUnknown as e:
        print(f"outcome unknown for call {e.request_id}: {e.what_delta_does}")
        rec = c.wait_settled(rid, timeout=wait)
        print(f"settled: {rec.state}")
        return 0 if rec.state == "carried_out" else 3
    except DeltaDown as e:
        print(f"Delta is down: {e}")
        return 2
    if a.status != 201:
        print(f"{peer}'s notes answered {a.status}: {a.body.decode(errors='replace').strip()}")
        return 1
    note = json.loads(a.body)
    print(f"added note {note['id']} on {peer} (call {rid}{', replayed' if a.replayed else ''})")
    return 0


def list_notes(c: Client, peer: str) -> int:
    r = c.get(peer, "notes", "/notes")
    how = f"directly on the {r.road} road, Delta being down" if r.direct else (
        "from Delta's cache, stale" if r.stale else "through Delta")
    notes = json.loads(r.body)
    print(f"{len(notes)} note(s) on {peer}, read {how}:")
    for n in notes:
        print(f"  {n['id']}. {n['text']}  (from {n.get('from') or '?'}, call {n.get('request_id') or '-'})")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description="Add and list notes on another of your computers, through Delta.")
    ap.add_argument("--state-dir", default=None, help="this computer's Delta's state folder")
    ap.add_argument("--wait", type=float, default=60, help="how long to wait for an unknown outcome to settle, seconds")
    ap.add_argument("peer")
    ap.add_argument("verb", choices=["add", "list"])
    ap.add_argument("text", nargs="?")
    args = ap.parse_args()
    try:
        with Client(args.state_dir, app="notes-client") as c:
            if args.verb == "add":
                if not args.text:
                    ap.error("add needs the note's text")
                return add(c, args.peer, args.text, args.wait)
            return list_notes(c, args.peer)
    except (BadInput, DeltaError, TimeoutError) as e:
        print(f"notes: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
