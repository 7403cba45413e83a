"""Fault injection: ``blendin anonymize`` killed (SIGKILL, SIGTERM, SIGINT) at random moments
and in the middle of writing leaves the target absent or complete and valid, the input
unchanged, and nothing else behind; after SIGKILL the next run removes the stale temporary
file.

Runs are forked from the test process, which has imported blendin already, so each kill
point costs the run, not the interpreter's start.
"""

import hashlib
import os
import random
import signal
import sys
import time
from pathlib import Path

import pytest

from blendin.datasets import hospital
from blendin.demo import demo_spec

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


class _Run:
    """``blendin anonymize`` in a child forked from this process (blendin already
    imported, so a run costs its own work only), as the shell would run it."""

    def __init__(self, folder: Path) -> None:
        from blendin.cli import main

        argv = ["anonymize", str(folder / "h.csv"), "--spec", str(folder / "s.toml"),
                "-o", str(folder / "r.xlsx"), "-q", "--shuffle-seed", "7"]
        self.pid = os.fork()
        if self.pid == 0:  # the child: run the command, never return into pytest
            code = 1
            try:
                main(argv)
            except SystemExit as end:
                code = end.code if isinstance(end.code, int) else 1
            finally:
                os._exit(code)
        self.status = None

    def is_alive(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
        return self.status is None

    def join(self) -> int | None:
        if self.status is None:
            self.status = os.waitpid(self.pid, 0)[1]
        return os.waitstatus_to_exitcode(self.status)


def _values(path: Path) -> list:
    from openpyxl import load_workbook

    return [[c.value for c in row] for row in load_workbook(path).active.iter_rows()]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("interrupt")
    hospital(1500, seed=5).to_csv(folder / "h.csv", index=False)
    (folder / "s.toml").write_text(demo_spec().to_toml())
    started = time.perf_counter()
    assert _Run(folder).join() == 0
    took = time.perf_counter() - started
    expected = _values(folder / "r.xlsx")
    (folder / "r.xlsx").unlink()
    return folder, expected, took


def _kill_when(process, folder: Path, delay: float | None, sig: int) -> bool:
    """Kill after ``delay`` seconds, or (None) as soon as the temporary file exists; say
    whether the run was writing then."""
    deadline = time.perf_counter() + 60
    if delay is not None:
        time.sleep(delay)
    else:
        while not list(folder.glob(".r.xlsx.*.tmp")) and process.is_alive():
            if time.perf_counter() > deadline:
                break
            time.sleep(0.002)
    writing = bool(list(folder.glob(".r.xlsx.*.tmp")))
    if process.is_alive():
        os.kill(process.pid, sig)
    process.join()
    return writing


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_killed_runs_leave_no_trace(setup, sig):
    folder, expected, took = setup
    data_digest = _digest(folder / "h.csv")
    rng = random.Random(sig)
    for delay in (None, rng.uniform(0.0, took)):  # mid-write, and a random moment
        process = _Run(folder)
        writing = _kill_when(process, folder, delay, sig)
        assert writing or delay is not None  # the first kill lands in the middle of the write
        assert _digest(folder / "h.csv") == data_digest  # the input is never touched
        left = {p.name for p in folder.iterdir()} - {"h.csv", "s.toml"}
        if (folder / "r.xlsx").exists():  # renamed before the signal landed: complete
            assert _values(folder / "r.xlsx") == expected
            left.discard("r.xlsx")
            (folder / "r.xlsx").unlink()
        if sig == signal.SIGKILL and left:
            # nothing can clean up after SIGKILL: the next run removes what it left
            assert all(name.startswith(".r.xlsx.") and name.endswith(".tmp") for name in left)
            assert _Run(folder).join() == 0
            assert _values(folder / "r.xlsx") == expected
            (folder / "r.xlsx").unlink()
            left = {p.name for p in folder.iterdir()} - {"h.csv", "s.toml"}
        assert left == set(), (sig, delay, left)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_run_exits_with_the_shells_code_for_its_signal(setup, sig, code):
    # Ctrl-C was click's "Aborted!" and exit code 1: the code `blendin check` gives a table
    # that breaks its models, and what a script takes for a failed run, not a stopped one
    folder = setup[0]
    process = _Run(folder)
    assert _kill_when(process, folder, None, sig)  # in the middle of the write
    assert process.join() == code
    assert {p.name for p in folder.iterdir()} == {"h.csv", "s.toml"}
