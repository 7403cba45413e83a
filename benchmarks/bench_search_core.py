"""Time the full-domain search alone (``find`` on a ready frequency table) on adult and fars.

Run from the repository root (the data lives in ../shared/data):

    python benchmarks/bench_search_core.py              # optimal, 7 runs per case
    python benchmarks/bench_search_core.py --runs 3 --algorithm binary --metric gcp

Roles (ARX's benchmark): adult QIs age, education, marital-status, native-country, race,
salary-class, sex, workclass (lattice 4,320 nodes), sensitive occupation; fars QIs iage,
ideathday, ideathmon, ihispanic, iinjury, irace, isex (5,184 nodes), sensitive istatenum.
Hierarchies are ARX's CSV files, read as rows split on ';' (a row repeated verbatim, as in
fars' iage file, is read once).

Every case is run once to warm up, then ``--runs`` times; the table shows the fastest and the
median wall-clock time, the CPU time of the fastest run, the nodes checked, the chosen levels
and the figure of the metric. ARX's figures (same data and hierarchies, ARX's own benchmark on
a desktop JVM) are printed alongside where known.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import arx_data

from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.models import KAnonymity, TCloseness
from blendin.search import find

# (label, k, suppression, t or None) -> ARX's time in ms where known
CASES = [("k=2, 0%", 2, 0.0, None), ("k=5, 0%", 5, 0.0, None), ("k=5, 5%", 5, 0.05, None),
         ("k=5 + t=0.2, 5%", 5, 0.05, 0.2)]
ARX_MS = {("adult", "k=5, 0%"): 17, ("adult", "k=5, 5%"): 270, ("fars", "k=5, 0%"): 45,
          ("fars", "k=5, 5%"): 600, ("fars", "k=5 + t=0.2, 5%"): 2900}


def load(name: str) -> FrequencyTable:
    """The frequency table of a benchmark set, with ARX's hierarchies."""
    _, qis, sensitive = arx_data.SETS[name]
    table = arx_data.read(name)
    sensitives = [sensitive] if sensitive else []  # (the sets of QIs alone have none)
    return FrequencyTable.from_table(table.select([*qis, *sensitives]),
                                     arx_data.hierarchies(name, table), sensitives)


def time_case(ft, models, suppression, algorithm, metric, runs):
    find(ft, models, max_suppression=suppression, algorithm=algorithm, metric=metric)
    walls, cpus, solution = [], [], None
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        solution = find(ft, models, max_suppression=suppression, algorithm=algorithm,
                        metric=metric)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    fastest = min(range(runs), key=walls.__getitem__)
    return min(walls), statistics.median(walls), cpus[fastest], solution


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--algorithm", default="optimal")
    parser.add_argument("--metric", default="loss")
    parser.add_argument("--only", choices=list(arx_data.SETS))
    args = parser.parse_args(argv)
    if not arx_data.DATA.is_dir():
        print(f"benchmark data not found at {arx_data.DATA}; nothing to do")
        return 0
    print(f"algorithm {args.algorithm}, metric {args.metric}, {args.runs} runs per case\n")
    header = (f"{'set':6} {'case':17} {'fastest':>9} {'median':>9} {'cpu':>9} {'ARX':>8} "
              f"{'checked':>8}  levels / figure")
    print(header)
    print("-" * len(header))
    for name in [args.only] if args.only else list(arx_data.SETS):
        ft = load(name)
        sensitive = arx_data.SETS[name][2]
        for label, k, suppression, t in CASES:
            if t and not sensitive:
                continue
            models = [KAnonymity(k)] + ([TCloseness(sensitive, t)] if t else [])
            try:
                fastest, median, cpu, sol = time_case(ft, models, suppression, args.algorithm,
                                                      args.metric, args.runs)
            except BlendinError as error:  # (a lattice too large for an exact search)
                print(f"{name:6} {label:17} not run: {error.problem}")
                continue
            arx = ARX_MS.get((name, label))
            arx_text = f"{arx:,} ms" if arx else "-"
            print(f"{name:6} {label:17} {fastest * 1e3:7.1f}ms {median * 1e3:7.1f}ms "
                  f"{cpu * 1e3:7.1f}ms {arx_text:>8} {sol.nodes_checked:8,}  "
                  f"{sol.levels} {sol.score:.6g}")
        print(f"{'':6} ({len(ft.counts):,} distinct tuples of {ft.n_records:,} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
