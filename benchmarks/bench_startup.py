"""How long blendin takes to start, next to the interpreter alone.

Each command runs in a fresh process, ``--repeat`` times after one warm-up run (so the
file cache is warm); the median wall-clock time is printed, with the time over
``python -c pass``.

- ``python -c pass``: the floor, the interpreter starting and stopping;
- ``import blendin``: the package (lazy: no matplotlib, pandas, jinja2, openpyxl);
- ``blendin --help`` and ``blendin anonymize --help``: the command-line tool;
- ``import blendin; blendin.anonymize``: what a first anonymization loads (numpy, pyarrow,
  pandas), for comparison;
- ``import blendin.report.html``: what the report loads on top (matplotlib, jinja2).

Run: python benchmarks/bench_startup.py --repeat 15
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time

PY = sys.executable


def commands() -> list[tuple[str, list[str]]]:
    cli = shutil.which("blendin")
    runs = [
        ("python -c pass", [PY, "-c", "pass"]),
        ("import blendin", [PY, "-c", "import blendin"]),
    ]
    if cli is not None:  # the console script, as a user types it
        runs += [("blendin --help", [cli, "--help"]),
                 ("blendin anonymize --help", [cli, "anonymize", "--help"])]
    runs += [
        ("import blendin; blendin.anonymize", [PY, "-c", "import blendin; blendin.anonymize"]),
        ("import blendin.report.html", [PY, "-c", "import blendin.report.html"]),
    ]
    return runs


def timed(argv: list[str], repeat: int) -> float:
    subprocess.run(argv, capture_output=True, check=True)  # warm the file cache
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    floor = None
    print(f"{'command':<38} {'median':>8} {'over python -c pass':>20}")
    for name, argv in commands():
        seconds = timed(argv, args.repeat)
        floor = seconds if floor is None else floor
        print(f"{name:<38} {seconds:>7.3f}s {seconds - floor:>19.3f}s")


if __name__ == "__main__":
    main()
