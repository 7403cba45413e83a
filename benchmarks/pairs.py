"""Pairs: this tree's blendin against an earlier commit's, whole processes taken in turn
on the same files, for changes whose effect is a few percent.

    python benchmarks/pairs.py 0d9c4a1 /tmp/blendin-scale/adult10000000-csv/adult.csv
    python benchmarks/pairs.py HEAD~1 A.parquet B.csv --runs 7 --cores 2

Each file is released with the ``release.toml`` beside it (``bench_scale.py`` writes both:
``bench_scale.prepare(rows, "csv")``), to Parquet, by ``blendin anonymize --quiet``; the
two trees alternate, the earlier first in odd rounds, after one untimed run of each. Shown
per file: each side's median wall time and peak memory (``ru_maxrss``), and the median of
the ratios pair by pair with their range. Ratios, not absolute times: a machine's speed
drifts from minute to minute, a pair's two runs a few seconds apart.

Both trees are compiled first (``compileall``): where ``PYTHONDONTWRITEBYTECODE`` is set,
a tree without bytecode caches compiles blendin's modules in every run (0.1-0.2 s on the
2-core machine), which a pair would count against it.
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_scale import measure, pinned

HERE = Path(__file__).resolve().parent


def tree_of(commit: str, folder: Path) -> Path:
    """The ``src`` folder of ``commit``, extracted into ``folder``."""
    archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", commit, "src"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder / "src"


def release(src: Path, data: Path, cores: str) -> list[str]:
    """The command that releases ``data`` with the tree ``src`` (on ``cores``)."""
    return [*pinned(cores), "env", f"PYTHONPATH={src}", sys.executable, "-c",
            "from blendin.cli import main; main()", "anonymize", str(data), "--spec",
            str(data.parent / "release.toml"), "-o", str(data.parent / "pairs-out.parquet"),
            "--force", "--quiet"]


def pairs(before: Path, after: Path, data: Path, runs: int, cores: str) -> dict:
    """``runs`` pairs on ``data``: wall seconds and peak MiB of each side, in turn."""
    for src in (before, after):  # untimed: the file in the page cache, both trees warm
        measure(release(src, data, cores))
    seen: dict[str, list] = {"before": [], "after": []}
    for i in range(runs):
        order = [("before", before), ("after", after)]
        for side, src in order if i % 2 == 0 else order[::-1]:
            seconds, mib, _, _ = measure(release(src, data, cores))
            seen[side].append((seconds, mib))
    ratios = [a[0] / b[0] for a, b in zip(seen["after"], seen["before"])]
    return {side: (statistics.median(s for s, _ in runs_),
                   statistics.median(m for _, m in runs_)) for side, runs_ in seen.items()
            } | {"ratio": (statistics.median(ratios), min(ratios), max(ratios))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commit", help="the earlier commit (any name git knows)")
    parser.add_argument("files", nargs="+", type=Path,
                        help="data files, each with its release.toml beside it")
    parser.add_argument("--runs", type=int, default=5, help="pairs per file (default 5)")
    parser.add_argument("--cores", default="all",
                        help="run on this many cores, by taskset (default: all)")
    args = parser.parse_args()
    missing = [f for f in args.files if not (f.is_file() and
                                             (f.parent / "release.toml").is_file())]
    if missing:
        parser.error(f"no data file with a release.toml beside it: {missing[0]} "
                     "(write one with bench_scale.prepare(rows, 'csv'))")
    after = HERE.parent / "src"
    with tempfile.TemporaryDirectory() as folder:
        before = tree_of(args.commit, Path(folder))
        for src in (before, after):
            compileall.compile_dir(src, quiet=1)
        print(f"{'file':<40} {'before s':>9} {'after s':>8} {'after / before':>22} "
              f"{'before MiB':>11} {'after MiB':>10}")
        for data in args.files:
            got = pairs(before, after, data, args.runs, args.cores)
            ratio, low, high = got["ratio"]
            print(f"{str(data)[-40:]:<40} {got['before'][0]:>9.2f} {got['after'][0]:>8.2f} "
                  f"{ratio:>8.2f} ({low:.2f}-{high:.2f}) {got['before'][1]:>11.0f} "
                  f"{got['after'][1]:>10.0f}", flush=True)


if __name__ == "__main__":
    main()
