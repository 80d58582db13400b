"""Two real Deltas as processes, laptop and studio, in static mode on
loopback, for the kit's tests: configs written by `delta init --static`
and `delta pair`, as a person writes them (every road TLS pinned to the
computers' IDs), and each Delta started with `delta --headless`."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def delta_bin() -> str:
    """The delta binary: DELTA_BIN, else the repository's bin/delta (make
    build writes it)."""
    b = os.environ.get("DELTA_BIN") or os.path.join(REPO, "bin", "delta")
    if not os.access(b, os.X_OK):
        raise RuntimeError(f"no delta binary at {b}: run make build (or set DELTA_BIN)")
    return b


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what: str, cond: Callable[[], bool], timeout: float = 20.0) -> None:
    """Wait until cond() holds, polling; fail naming what did not happen."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.02)


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["TS_NO_LOGS_NO_SUPPORT"] = "true"
    e["DELTA_DISCOVERY"] = "off"  # no announcements on the machine's networks
    e.pop("DELTA_STATE_DIR", None)
    return e


class Delta:
    """One Delta process on a state folder."""

    def __init__(self, name: str, state_dir: str, log: str) -> None:
        self.name = name
        self.dir = state_dir
        self.log = log
        self.proc: Optional[subprocess.Popen[bytes]] = None

    def start(self) -> None:
        try:
            os.remove(os.path.join(self.dir, "local.json"))
        except FileNotFoundError:
            pass
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([delta_bin(), "--headless", "--state-dir", self.dir, "--listen", "127.0.0.1:0"],
                                         stdout=out, stderr=subprocess.STDOUT, env=env())
        wait_for(f"{self.name}'s Delta writes local.json (log {self.log})",
                 lambda: os.path.exists(os.path.join(self.dir, "local.json")) or self.proc.poll() is not None)
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.name}'s Delta exited {self.proc.returncode}: {open(self.log).read()[-2000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop it (SIGTERM: a clean stop, which keeps direct.json) and
        wait for it."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def cli(self, *args: str) -> str:
        """Run the command line against this Delta."""
        out = subprocess.run([delta_bin(), *args, "--state-dir", self.dir], env=env(), capture_output=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"delta {' '.join(args)}: exit {out.returncode}: {out.stderr.decode()}")
        return out.stdout.decode()

    def rss_kib(self) -> int:
        """Its peak resident memory (VmHWM), KiB."""
        assert self.proc
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0


class Pair:
    """laptop and studio, each knowing the other on the lan road."""

    def __init__(self) -> None:
        self.root = tempfile.mkdtemp(prefix="delta-kit-")
        pa, pb = free_port(), free_port()
        self.laptop = Delta("laptop", os.path.join(self.root, "laptop"), os.path.join(self.root, "laptop.log"))
        self.studio = Delta("studio", os.path.join(self.root, "studio"), os.path.join(self.root, "studio.log"))
        b = delta_bin()

        def run(*args: str) -> str:
            return subprocess.run([b, *args], env=env(), check=True, capture_output=True).stdout.decode().strip()

        # As a person pairs them: laptop's init, studio's init naming
        # laptop's ID, then laptop told studio's ID (delta pair). Every road
        # is TLS pinned to the IDs.
        run("init", "--static", "--state-dir", self.laptop.dir, "--name", "laptop",
            "--peer-listen", f"127.0.0.1:{pa}", "--peer", f"studio=127.0.0.1:{pb}")
        laptop_id = run("id", "--state-dir", self.laptop.dir)
        run("init", "--static", "--state-dir", self.studio.dir, "--name", "studio",
            "--peer-listen", f"127.0.0.1:{pb}", "--peer", f"laptop={laptop_id}@127.0.0.1:{pa}")
        run("pair", f"studio={run('id', '--state-dir', self.studio.dir)}@127.0.0.1:{pb}", "--state-dir", self.laptop.dir)
        try:
            self.laptop.start()
            self.studio.start()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.laptop.stop()
        self.studio.stop()
        if os.environ.get("DELTA_KEEP"):
            print("kept", self.root)
        else:
            shutil.rmtree(self.root, ignore_errors=True)
