"""The shared contract tables: every recorded answer of Delta's becomes
the outcome kit/contract/outcomes.json says, and every operation, option,
state, outcome type and answer field has the name and unit
kit/contract/operations.json says, as in the Go and TypeScript kits."""

import email.message
import http.client
import inspect
import io
import json
import os
import re
import unittest

import delta_kit
from delta_kit import client, outcome_type, wire
from delta_kit.errors import DeltaError

TABLE = os.path.join(os.path.dirname(__file__), "..", "..", "contract", "outcomes.json")
OPERATIONS = os.path.join(os.path.dirname(__file__), "..", "..", "contract", "operations.json")
PATHS = os.path.join(os.path.dirname(__file__), "..", "..", "contract", "paths.json")


class _Sock:
    def __init__(self, raw: bytes) -> None:
        self._f = io.BytesIO(raw)

    def makefile(self, *_a, **_k):
        return self._f


def recorded(case: dict) -> http.client.HTTPResponse:
    """The case's answer as http.client reads it off a connection."""
    body = case["body"]
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    head = f"HTTP/1.1 {case['status']} {http.client.responses.get(case['status'], 'X')}\r\n"
    for k, v in case["headers"].items():
        head += f"{k}: {v}\r\n"
    head += f"Content-Length: {len(raw)}\r\n\r\n"
    r = http.client.HTTPResponse(_Sock(head.encode() + raw))  # type: ignore[arg-type]
    r.begin()
    return r


class ContractTest(unittest.TestCase):
    def test_table(self) -> None:
        with open(TABLE, encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 15)
        for case in cases:
            with self.subTest(case["name"]):
                e = case["expect"]
                try:
                    r = client._stream_or_raise(recorded(case), None, None, case.get("request_id", ""), None)
                except DeltaError as err:
                    self.assertEqual(outcome_type(err), e["type"], str(err))
                    self.assertEqual(getattr(err, "status", case["status"]), e["status"])
                    for k in ("outcome", "request_id", "peer", "road"):
                        if k in e:
                            self.assertEqual(getattr(err, k, None), e[k], k)
                    self.assertIn(e.get("detail_contains", ""), err.detail)
                    for k in ("nothing_sent", "not_carried_out"):
                        if k in e:
                            self.assertEqual(getattr(err, k, None), e[k], k)
                    continue
                self.assertEqual(e["type"], "answer")
                a = r.answer(r.read())
                self.assertEqual(a.status, e["status"])
                want = {"body": "body", "request_id": "request_id", "road": "road", "replayed": "replayed",
                        "stale": "stale", "stale_reason": "stale_reason"}
                for k, attr in want.items():
                    if k in e:
                        got = getattr(a, attr)
                        self.assertEqual(got.decode() if isinstance(got, bytes) else got, e[k], k)
                if "age_seconds" in e:
                    self.assertEqual(a.age, e["age_seconds"])


class OperationsTest(unittest.TestCase):
    def test_operations(self) -> None:
        with open(OPERATIONS, encoding="utf-8") as f:
            tab = json.load(f)
        self.assertGreaterEqual(len(tab["operations"]), 20)
        for op in tab["operations"]:
            with self.subTest(op["op"]):
                name = op["python"]
                if name is None:
                    self.assertTrue(op.get("why"), "no Python name and no why")
                    continue
                fn = getattr(delta_kit.Client, name, None) or getattr(delta_kit, name, None)
                self.assertTrue(callable(fn), f"the kit has no {name}")
                sig = inspect.signature(fn.__init__ if inspect.isclass(fn) else fn)
                want = op.get("result", {}).get("python")
                if want and not inspect.isclass(fn):
                    got = str(sig.return_annotation).replace("wire.", "")
                    self.assertEqual(got, want, f"{name} returns {got}")
                for o in op.get("options", []):
                    if o["python"] is None:
                        self.assertTrue(o.get("why"), f"option {o['option']}: no Python name and no why")
                        continue
                    self.assertIn(o["python"], sig.parameters, f"{name} has no option {o['python']}")
                    unit = o["unit"].get("python") if isinstance(o["unit"], dict) else None
                    if unit:
                        self.assertIn(unit, str(sig.parameters[o["python"]].annotation), f"{name}'s {o['python']}")
        for s in tab["states"]:
            self.assertEqual(getattr(delta_kit.State, s.upper()), s)
        for kind, names in tab["outcomes"].items():
            self.assertTrue(inspect.isclass(getattr(delta_kit, names["python"], None)), f"outcome {kind}: no {names['python']}")
        for f, names in tab["answer_fields"].items():
            if isinstance(names, dict) and names.get("python"):
                for cls in (delta_kit.Answer, delta_kit.StoredAnswer):
                    self.assertTrue(hasattr(cls, names["python"]) or names["python"] in cls.__dataclass_fields__,
                                    f"answer field {f}: {cls.__name__} has no {names['python']}")


class PathsTest(unittest.TestCase):
    def test_paths(self) -> None:
        """The kit's one table of the local API's paths, actions and
        headers is kit/contract/paths.json's, and no other /v1/ path is
        spelled in its sources."""
        with open(PATHS) as f:
            table = json.load(f)
        self.assertEqual(wire.PATHS, table["paths"])
        self.assertEqual(list(wire.ACTIONS), table["actions"])
        spelled = {wire.OUTCOME, wire.REQUEST_ID, wire.TIMEOUT, wire.ROUTE, wire.APP, wire.REPLAYED, wire.STALE,
                   wire.CALLER, wire.SECRET}
        self.assertLessEqual(spelled, set(table["headers"].values()))
        self.assertEqual(wire.path("call_action", id="r 1/x", action="ask"), "/v1/calls/r%201%2Fx/ask")
        with self.assertRaisesRegex(ValueError, "needs more"):
            wire.path("forward", peer="studio")
        src = os.path.dirname(delta_kit.__file__)
        for name in sorted(os.listdir(src)):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(src, name)) as f:
                text = f.read()
            for m in re.finditer(r"""[f]?["'](/v1/[^"']*)["']""", text):
                self.assertTrue(name == "wire.py" and m.group(1) in table["paths"].values(),
                                f"{name} spells the local API path {m.group(1)!r}: wire.path() does")


if __name__ == "__main__":
    unittest.main()
