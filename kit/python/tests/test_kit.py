"""The Python kit against two real Deltas as processes (tests/lab.py):
every outcome type, a real outcome_unknown reconciled and waited for,
200 MiB both ways with flat memory, the squatter, reads around a down
Delta, the owner middleware, forwards."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import resource
import socket
import tempfile
import threading
import unittest
import urllib.error
import urllib.request

from delta_kit import (APIError, BadInput, Client, Conflict, Cut, DeltaDown, DeltaOwnerASGI, NotCarriedOut, NotDelta, NothingSent,
                       OutcomeUnknown, State, Unavailable, new_request_id, outcome_type)

import lab
from ownerapp import OwnerApp, pattern, pattern_sha256


class WithPair(unittest.TestCase):
    pair: lab.Pair
    app: OwnerApp
    c: Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.pair = lab.Pair()
        cls.app = OwnerApp()
        owner = Client(cls.pair.studio.dir, app="kit-test-owner")
        cls.app.set_secret(owner.register_app("notes", cls.app.url)["secret"])
        owner.close()
        cls.c = Client(cls.pair.laptop.dir, app="kit-test")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.c.close()
        cls.app.close()
        cls.pair.close()


class Outcomes(WithPair):
    def test_answer_replay_and_read(self) -> None:
        rid = new_request_id()
        a = self.c.call("studio", "notes", "POST", "/notes", "water the plants", request_id=rid)
        self.assertEqual((a.status, a.body, a.request_id, a.road, a.replayed), (201, b"water the plants", rid, "lan", False))
        again = self.c.call("studio", "notes", "POST", "/notes", "water the plants", request_id=rid)
        self.assertTrue(again.replayed)
        self.assertEqual(self.app.effects[rid], 1, "the call was carried out twice")
        r = self.c.get("studio", "notes", "/notes")
        self.assertEqual(r.status, 200)
        self.assertIn("water the plants", json.loads(r.body))
        self.assertFalse(r.stale or r.direct)
        # What requests and httpx users reach for.
        self.assertEqual((r.status_code, r.json(), r.content), (200, json.loads(r.body), r.body))
        self.assertEqual(a.text, "water the plants")
        self.assertEqual(r.headers["content-type"], "application/json")
        inc = json.loads(self.c.call("studio", "notes", "POST", "/incoming", b"").body)
        self.assertEqual((inc["caller"], inc["caller_app"]), ("laptop", "kit-test"))
        rec = self.c.call_record(rid)
        self.assertEqual((rec.state, rec.caller_app), ("answered", "kit-test"))
        self.assertTrue(rec.settled and rec.attempts[0]["first_byte_written"])

    def test_nothing_sent_and_not_carried_out(self) -> None:
        with self.assertRaises(NothingSent) as cm:
            self.c.call("studio-nowhere", "notes", "POST", "/notes", "x")
        e = cm.exception
        self.assertEqual((e.outcome, e.status, outcome_type(e)), ("not_found", 404, "nothing_sent"))
        self.assertTrue(e.nothing_sent and e.not_carried_out)
        with self.assertRaises(NotCarriedOut) as cm2:
            self.c.call("studio", "nobody", "POST", "/x", "x")
        self.assertNotIsInstance(cm2.exception, NothingSent)
        self.assertEqual((outcome_type(cm2.exception), cm2.exception.peer), ("not_carried_out", "studio"))
        with self.assertRaises(Unavailable):  # a read of an app studio does not have
            self.c.get("studio", "nobody", "/x")

    def test_bad_input(self) -> None:
        with self.assertRaises(BadInput) as cm:
            self.c.call("studio", "notes", "POST", "/notes", "x", request_id="not an id")
        self.assertEqual(cm.exception.status, 0)  # the kit's own check
        with self.assertRaises(BadInput):
            self.c.call("studio", "notes", "GET", "/notes")
        with self.assertRaises(BadInput) as cm:  # Delta's
            self.c.call("studio", "notes", "POST", "/notes", "x", headers={"X-Delta-Timeout": "soon"})
        self.assertEqual((cm.exception.status, outcome_type(cm.exception)), (400, "bad_input"))
        self.assertIn("nothing was sent", cm.exception.detail)
        self.assertIsInstance(cm.exception, ValueError)

    def test_conflict(self) -> None:
        rid = new_request_id()
        self.c.call("studio", "notes", "POST", "/notes", "one", request_id=rid)
        with self.assertRaises(Conflict) as cm:
            self.c.call("studio", "notes", "POST", "/notes", "two", request_id=rid)
        self.assertEqual(cm.exception.request_id, rid)

    def test_outcome_unknown_reconciled(self) -> None:
        rid = new_request_id()
        with self.assertRaises(OutcomeUnknown) as cm:
            self.c.call("studio", "notes", "POST", "/hold/a", "late", request_id=rid, timeout=0.3)
        e = cm.exception
        self.assertEqual((e.request_id, e.peer, outcome_type(e)), (rid, "studio", "outcome_unknown"))
        self.assertIn("never sends it again", e.what_delta_does)
        self.assertIn(rid, [r.request_id for r in self.c.calls("unsettled")])
        self.assertTrue(self.c.dismiss(rid).dismissed)
        with self.assertRaises(TimeoutError):
            self.c.wait_settled(rid, timeout=1)
        self.app.release("a")
        rec = self.c.wait_settled(rid, timeout=60)
        self.assertEqual(rec.state, State.CARRIED_OUT)
        self.assertTrue(rec.settled)
        self.assertEqual(rec.answer.body if rec.answer else None, b"late")
        # The kept answer is shaped as an Answer: case-insensitive headers, text.
        assert rec.answer is not None
        self.assertEqual((rec.answer.headers["content-type"], rec.answer.text, rec.answer.status_code), ("text/plain", "late", 201))
        self.assertEqual(self.app.effects[rid], 1)
        # A person settles one the owner is still holding.
        rid2 = new_request_id()
        with self.assertRaises(OutcomeUnknown):
            self.c.call("studio", "notes", "POST", "/hold/b", "x", request_id=rid2, timeout=0.3)
        self.assertEqual(self.c.ask(rid2).request_id, rid2)
        rec2 = self.c.settle(rid2, "not_carried_out", "I looked: nothing there")
        self.assertEqual((rec2.state, rec2.settled_by), ("not_carried_out", "a person"))
        self.app.release("b")

    def test_unknown_length_goes_chunked(self) -> None:
        a = self.c.call("studio", "notes", "PUT", "/sink", iter([b"abc", b"def"]))
        self.assertEqual(json.loads(a.body), {"size": 6, "sha256": hashlib.sha256(b"abcdef").hexdigest()})

    def test_cut(self) -> None:
        with self.assertRaises(Cut) as cm:
            self.c.get("studio", "notes", "/broken")
        self.assertEqual((cm.exception.read, cm.exception.total), (10, 1000))
        self.assertEqual(outcome_type(cm.exception), "cut")

    def test_status_apps_forwards(self) -> None:
        st = self.c.status()
        self.assertIn("studio", json.dumps(st))
        self.assertEqual(self.c.peer_apps("studio"), [{"app": "notes"}])
        f = self.c.forward("studio", "notes")
        self.assertTrue(f["open"], f)
        shared = self.c.peer_apps("studio")
        self.assertEqual((shared[0]["app"], shared[0]["forward"]["url"]), ("notes", f["url"]), shared)
        self.assertIsInstance(self.c.listening(), list)
        self.c.call("studio", "notes", "POST", "/notes", "through a forward?")
        with urllib.request.urlopen(f["url"].rstrip("/") + "/notes", timeout=30) as r:
            self.assertIn("through a forward?", json.loads(r.read()))
        self.assertIn(("studio", "notes"), [(x["peer"], x["app"]) for x in self.c.forwards()])
        self.c.remove_forward("studio", "notes")
        self.assertEqual(self.c.forwards(), [])

    def test_pairing(self) -> None:
        p = self.c.pairing()
        self.assertEqual([x["name"] for x in p["peers"]], ["studio"], p)
        self.assertTrue(p["self"]["id"], p)
        self.assertEqual(p["requests"], [], p)
        with self.assertRaises(APIError) as cm:
            self.c.pair("me", p["self"]["id"], "127.0.0.1:1")
        self.assertEqual(cm.exception.outcome, "bad_request")
        self.assertIn("own ID", str(cm.exception))
        with self.assertRaises(APIError) as cm:
            self.c.rename("not a name")
        self.assertEqual(cm.exception.outcome, "bad_request")

    def test_owner_refuses_without_the_secret(self) -> None:
        for hdr, why in (({}, "has no X-Delta-Forward-Secret"), ({"X-Delta-Forward-Secret": "guess"}, "does not match")):
            req = urllib.request.Request(self.app.url + "/notes", headers=hdr)
            with self.assertRaises(urllib.error.HTTPError) as cm:
                urllib.request.urlopen(req, timeout=10)
            self.assertEqual(cm.exception.code, 403)
            self.assertIn(why, json.loads(cm.exception.read())["detail"])
        req = urllib.request.Request(self.app.url + "/notes", headers={"X-Delta-Forward-Secret": self.app.secret})
        with urllib.request.urlopen(req, timeout=10) as r:
            self.assertEqual(r.status, 200)

    def test_big_both_ways_flat_memory(self) -> None:
        n = int(os.environ.get("DELTA_KIT_MB", "200")) << 20
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        h, got, seen = hashlib.sha256(), 0, []
        with self.c.stream("studio", "notes", f"/big?n={n}", progress=lambda d, t: seen.append(t)) as r:
            self.assertEqual(r.total, n)
            for b in r:
                h.update(b)
                got += len(b)
        self.assertEqual((got, h.hexdigest()), (n, pattern_sha256(n)))

        class Gen:  # a file-like body made as it is read, never whole
            def __init__(self) -> None:
                self.it = pattern(n)

            def read(self, _k: int = -1) -> bytes:
                return next(self.it, b"")

        sent = []
        a = self.c.call("studio", "notes", "PUT", "/sink", Gen(), size=n, progress=lambda d, t: sent.append(d))
        self.assertEqual(json.loads(a.body), {"size": n, "sha256": pattern_sha256(n)})
        self.assertEqual(sent[-1], n)
        grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        note = (f"{n >> 20} MiB read and {n >> 20} MiB call: this process's peak RSS grew {grew:.1f} MiB; "
                f"peak RSS of laptop's Delta {self.pair.laptop.rss_kib() / 1024:.1f} MiB, studio's {self.pair.studio.rss_kib() / 1024:.1f} MiB")
        print("\nnote:", note)
        self.assertLess(grew, 64, note)  # a body held whole would be 200 MiB


class Squatter(unittest.TestCase):
    """A listener on a dead Delta's port gets no token and no request."""

    def test_squatter_gets_nothing(self) -> None:
        d = tempfile.mkdtemp()
        for answer in (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
                       b'HTTP/1.1 200 OK\r\nX-Delta-Outcome: answered\r\nContent-Length: 15\r\n\r\n{"proof": "00"}'):
            got: list[bytes] = []
            ln = socket.create_server(("127.0.0.1", 0))

            def serve() -> None:
                while True:
                    try:
                        conn, _ = ln.accept()
                    except OSError:
                        return
                    with conn:
                        conn.settimeout(2)
                        try:
                            got.append(conn.recv(65536))
                            conn.sendall(answer)
                            got.append(conn.recv(65536))
                        except OSError:
                            pass

            t = threading.Thread(target=serve, daemon=True)
            t.start()
            with open(os.path.join(d, "local.json"), "w") as f:
                json.dump({"url": f"http://127.0.0.1:{ln.getsockname()[1]}", "pid": os.getpid()}, f)
            with open(os.path.join(d, "local-token"), "w") as f:
                f.write("the-secret-token")
            c = Client(d)
            with self.assertRaises(NotDelta) as cm:
                c.call("studio", "notes", "POST", "/notes", "for Delta only")
            self.assertIsInstance(cm.exception, DeltaDown)
            self.assertTrue(cm.exception.request_id)
            ln.shutdown(socket.SHUT_RDWR)  # wakes the accept (close alone does not, on Linux)
            ln.close()
            t.join()
            seen = b"".join(got)
            self.assertIn(b"/v1/proof?nonce=", seen)
            for secret in (b"the-secret-token", b"Bearer", b"for Delta only"):
                self.assertNotIn(secret, seen)


class NoDelta(unittest.TestCase):
    def test_client_is_made_and_the_first_request_says_delta_is_down(self) -> None:
        # As httpx.Client() and fetch: making one never fails; a request does.
        with tempfile.TemporaryDirectory() as d:
            c = Client(os.path.join(d, "no-such-folder"))
            with self.assertRaises(DeltaDown) as cm:
                c.call("studio", "notes", "POST", "/notes", "x")
            self.assertIn("nothing was sent", str(cm.exception))
            with self.assertRaises(DeltaDown):
                c.get("studio", "notes", "/notes")
            self.assertEqual(c.url, "")


class WhileDown(WithPair):
    def test_read_goes_around_and_call_is_refused(self) -> None:
        self.c.call("studio", "notes", "POST", "/notes", "before the stop")
        self.pair.laptop.stop()
        lab.wait_for("laptop's local.json goes", lambda: not os.path.exists(os.path.join(self.pair.laptop.dir, "local.json")))
        c = Client(self.pair.laptop.dir)
        r = c.get("studio", "notes", "/notes")
        self.assertTrue(r.direct)
        self.assertEqual((r.status, r.road), (200, "lan"))
        self.assertIn("before the stop", json.loads(r.body))
        rid = new_request_id()
        with self.assertRaises(DeltaDown) as cm:
            c.call("studio", "notes", "POST", "/notes", "while down", request_id=rid)
        self.assertEqual((cm.exception.request_id, outcome_type(cm.exception)), (rid, "delta_down"))
        self.assertIn("nothing was sent", str(cm.exception))
        self.assertNotIn("while down", json.loads(c.get("studio", "notes", "/notes").body))
        with self.assertRaises(DeltaDown):
            c.status()
        with self.assertRaises(DeltaDown) as cm2:
            c.get("studio", "notes", "/notes", route="tailnet")
        self.assertIn("the tailnet road lives inside Delta", str(cm2.exception))


class ASGI(unittest.TestCase):
    def test_asgi_owner(self) -> None:
        seen = []

        async def inner(scope, receive, send):  # type: ignore[no-untyped-def]
            seen.append(scope["delta.incoming"])
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})

        app = DeltaOwnerASGI(inner, "s3cret")

        async def run(headers):  # type: ignore[no-untyped-def]
            out = []

            async def send(m):  # type: ignore[no-untyped-def]
                out.append(m)

            async def receive():  # type: ignore[no-untyped-def]
                return {"type": "http.request", "body": b""}

            await app({"type": "http", "headers": headers}, receive, send)
            return out

        refused = asyncio.run(run([(b"x-delta-forward-secret", b"nope")]))
        self.assertEqual(refused[0]["status"], 403)
        self.assertEqual(seen, [])
        ok = asyncio.run(run([(b"x-delta-forward-secret", b"s3cret"), (b"x-delta-request-id", b"r1"), (b"x-delta-caller", b"laptop")]))
        self.assertEqual(ok[0]["status"], 200)
        self.assertEqual((seen[0].request_id, seen[0].caller), ("r1", "laptop"))


if __name__ == "__main__":
    unittest.main()
