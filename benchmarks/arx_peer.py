"""ARX as a peer: run one case of the harness in ../shared/peers/arx and read its JSON line.

The harness (``ArxBench``) is built by ``../shared/peers/arx/build.sh``, which writes its
classpath to ``/tmp/arx-build/cp.txt``; ``BLENDIN_ARX_CP`` names another classpath file.
When neither exists, :func:`classpath` returns None and the benchmarks skip ARX with a message.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import arx_data

CP_FILE = Path(os.environ.get("BLENDIN_ARX_CP", "/tmp/arx-build/cp.txt"))
HOW_TO_BUILD = ("ARX skipped: no harness build at {file} (build it with "
                "../shared/peers/arx/build.sh /path/to/arx, or set BLENDIN_ARX_CP)")


def classpath() -> str | None:
    """The harness's Java classpath, or None when ARX has not been built here."""
    if not CP_FILE.is_file():
        return None
    return CP_FILE.read_text().strip()


def skip_message() -> str:
    return HOW_TO_BUILD.format(file=CP_FILE)


def run(cp: str, dataset: str, case: str, runs: int, algorithm: str = "optimal",
        steps: int | None = None, *, node: Mapping[str, int] | None = None,
        properties: Mapping[str, str] | None = None, timeout: float = 1800) -> dict:
    """One ``ArxBench`` run: median/min time of ``runs`` warm runs, ARX's node and Loss.

    ``node`` also asks ARX whether that node (another tool's choice) is anonymous, and its Loss.
    """
    props = dict(properties or {})
    if node is not None:
        props["node"] = ",".join(f"{q}={lv}" for q, lv in node.items())
    command = ["java", *(f"-D{k}={v}" for k, v in props.items()), "-cp", cp, "ArxBench",
               str(arx_data.DATA), dataset, case, str(runs), algorithm]
    if steps is not None:
        command.append(str(steps))
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"ArxBench {dataset} {case} failed: {' | '.join(tail)}")
    return json.loads(lines[-1])


def levels_text(levels: Mapping[str, int], order: Sequence[str]) -> str:
    """A node as its levels in a fixed QI order, e.g. ``[4,1,1,2,0,0,0,1]``."""
    return "[" + ",".join(str(levels[q]) for q in order) + "]"
