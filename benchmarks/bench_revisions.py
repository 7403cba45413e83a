"""blendin against an earlier revision of itself, case by case, in alternating processes.

Run from the repository root (data in ../shared/data):

    python benchmarks/bench_revisions.py 9a90a7b                      # adult b, e and fars e
    python benchmarks/bench_revisions.py HEAD~3 --case adult:d_ent --rounds 5

The revision is checked out in a temporary git worktree. Each round runs one process per
revision (the earlier one first), which times ``--calls`` calls of ``bl.anonymize()`` on one
in-memory table after a warm-up with ``bench_arx.py``'s ``time_blendin`` (which times first
calls on new Tables of its rows between them; only the calls on the one Table are reported),
and prints their median; the
table shows the median of the rounds and the ratio of this tree's time to the revision's.
Alternating whole processes spreads the machine's slow spells over both sides.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: one process: the median (ms) of CALLS calls on one case, with blendin from SRC
TIMED = r"""
import sys
here, src, case, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path[:0] = [src, here]
import arx_data, bench_arx
import blendin
assert blendin.__file__.startswith(src), blendin.__file__  # not an installed copy
dataset, name = case.split(":")
spec = bench_arx.make_spec(dataset, name, "arx-loss")
print(bench_arx.time_blendin(arx_data.read(dataset), spec, calls)[0])
"""


def timed(src: Path, case: str, calls: int) -> float:
    """Median ms of ``calls`` calls on ``case`` with blendin imported from ``src`` (and the
    revision's own benchmark helpers beside it: its modules may have other names)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    here = src.parent / "benchmarks"
    done = subprocess.run([sys.executable, "-c", TIMED, str(here), str(src), case, str(calls)],
                          capture_output=True, text=True, env=env)
    if done.returncode:
        raise RuntimeError(f"{case} with {src} failed: {done.stderr.strip()[-500:]}")
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision", help="the earlier revision (a commit, tag or HEAD~n)")
    parser.add_argument("--case", action="append",
                        help="DATASET:CASE as in bench_arx.py (repeatable; default adult:b, "
                        "adult:e and fars:e)")
    parser.add_argument("--rounds", type=int, default=3, help="processes per revision and case")
    parser.add_argument("--calls", type=int, default=15, help="timed calls per process")
    args = parser.parse_args()
    cases = args.case or ["adult:b", "adult:e", "fars:e"]
    with tempfile.TemporaryDirectory(prefix="blendin-revision-") as scratch:
        tree = Path(scratch) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet",
                        str(tree), args.revision], check=True)
        try:
            print(f"{'case':<14}{args.revision + ' ms':>16}{'this tree ms':>14}{'ratio':>8}")
            for case in cases:
                times = {"old": [], "new": []}
                for _ in range(args.rounds):
                    times["old"].append(timed(tree / "src", case, args.calls))
                    times["new"].append(timed(ROOT / "src", case, args.calls))
                old, new = (statistics.median(times[k]) for k in ("old", "new"))
                print(f"{case:<14}{old:>16.1f}{new:>14.1f}{new / old:>8.2f}", flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(tree)], check=False)


if __name__ == "__main__":
    main()
