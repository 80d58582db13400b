"""The examples (examples/notes_owner.py, examples/notes_client.py) run as
a person runs them, against two real Deltas: the owner on studio, the
client on laptop. KIT_PYTHON names the Python to run them with (make
package-check: a fresh venv with the built wheel installed, and no
PYTHONPATH); by default this Python, with the kit's source on the path."""

from __future__ import annotations

import os
import subprocess
import sys
import unittest

import lab

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def example_env() -> dict[str, str]:
    e = lab.env()
    if os.environ.get("KIT_PYTHON"):
        e.pop("PYTHONPATH", None)  # the installed package, not the source tree
    else:
        e["PYTHONPATH"] = os.path.abspath(SRC)
    return e


def python() -> str:
    return os.environ.get("KIT_PYTHON") or sys.executable


class Example(unittest.TestCase):
    def setUp(self) -> None:
        self.pair = lab.Pair()
        self.addCleanup(self.pair.close)
        self.owner = subprocess.Popen([python(), os.path.join(EXAMPLES, "notes_owner.py"), "--state-dir", self.pair.studio.dir],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=example_env())
        self.addCleanup(self._stop_owner)
        line = self.owner.stdout.readline().decode()  # type: ignore[union-attr]
        self.assertIn("notes: serving on", line)

    def _stop_owner(self) -> None:
        if self.owner.poll() is None:
            self.owner.kill()
        self.owner.wait()
        self.owner.stdout.close()  # type: ignore[union-attr]

    def client(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([python(), os.path.join(EXAMPLES, "notes_client.py"), "--state-dir", self.pair.laptop.dir, *args],
                              env=example_env(), capture_output=True, text=True, timeout=60)

    def test_notes_both_ways(self) -> None:
        if os.environ.get("KIT_PYTHON"):
            # The kit the example imports is the installed one.
            where = subprocess.run([python(), "-c", "import delta_kit; print(delta_kit.__file__)"], env=example_env(),
                                   capture_output=True, text=True, check=True).stdout
            self.assertNotIn(os.path.abspath(SRC), where)
        out = self.client("studio", "add", "milk and bread")
        self.assertEqual(out.returncode, 0, out.stderr + out.stdout)
        self.assertRegex(out.stdout, r"added note 1 on studio \(call [0-9a-f-]+\)")
        out = self.client("studio", "list")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("1 note(s) on studio, read through Delta", out.stdout)
        self.assertIn("1. milk and bread  (from laptop", out.stdout)

        # Delta down on laptop: the list is read directly, the add refused.
        self.pair.laptop.stop()
        lab.wait_for("laptop's local.json goes", lambda: not os.path.exists(os.path.join(self.pair.laptop.dir, "local.json")))
        out = self.client("studio", "list")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("read directly on the lan road, Delta being down", out.stdout)
        out = self.client("studio", "add", "eggs")
        self.assertEqual(out.returncode, 2, out.stderr + out.stdout)
        self.assertIn("Delta is down", out.stdout)
        self.assertIn("nothing was sent", out.stdout)

        # The owner unregisters when stopped.
        self.assertIn("notes", self.pair.studio.cli("apps"))
        self.owner.terminate()
        self.assertEqual(self.owner.wait(20), 0, self.owner.stdout.read().decode())  # type: ignore[union-attr]
        self.assertNotIn("notes", self.pair.studio.cli("apps"))


if __name__ == "__main__":
    unittest.main()
