"""The shared contract table (kit/contract/outcomes.json): every recorded
answer of Delta's becomes the outcome the table says, as in the Go and
TypeScript kits."""

import email.message
import http.client
import io
import json
import os
import unittest

from delta_kit import client, outcome_type
from delta_kit.errors import DeltaError

TABLE = os.path.join(os.path.dirname(__file__), "..", "..", "contract", "outcomes.json")


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


if __name__ == "__main__":
    unittest.main()
