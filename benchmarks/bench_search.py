"""Full-domain search + recoding on adult and fars, next to ARX's figures and anjana.

Run from the repository root (the data lives in ../shared/data):

    python benchmarks/bench_search.py                  # every case, median of 5 runs
    python benchmarks/bench_search.py --runs 3 --only adult
    BLENDIN_ANJANA_PYTHON=/path/to/venv/bin/python python benchmarks/bench_search.py

Data and roles (hierarchies: the ARX CSV files next to the data):

- adult (30,162 rows): QIs age, education, marital-status, native-country, race,
  salary-class, sex, workclass (lattice 4,320 nodes); sensitive occupation.
- fars (100,937 rows): QIs iage, ideathday, ideathmon, ihispanic, iinjury, irace, isex
  (lattice 5,184 nodes); sensitive istatenum.

Cases (suppression limit as a share of the records):

1. 2-anonymity, 0%              2. 5-anonymity, 0%              3. 5-anonymity, 5%
4. 5-anonymity + distinct 3-diversity, 5%
5. 5-anonymity + entropy 3-diversity, 5%
6. 5-anonymity + recursive (4,3)-diversity, 5%
7. 5-anonymity + 0.2-closeness, equal distance, 5%
8. 5-anonymity + 0.2-closeness, hierarchical distance (the sensitive attribute's ARX
   hierarchy), 5%

The l-diversity and t-closeness cases use 5% suppression, as ARX's benchmark does: without
it a single class with one occupation forces most QIs to the top.

"search+recode" is what the figure of ARX measures, done in process on a warm interpreter:
``find`` (optimal search, loss metric) on the frequency table plus applying the chosen node
to every row (one gather per QI, suppression); the frequency table is built once beforehand.
It is the median of ``--runs`` runs after one warm-up. "anonymize()" is the whole library
call from an in-memory pyarrow table of text columns: frequency table, hierarchies, search,
release and the independent checker (median of the same runs).

ARX reference (same data, same hierarchies, ARX's benchmark on a desktop JVM, warm):
adult k=5 0% ~ 17 ms, adult k=5 5% ~ 270 ms, fars k=5 0% ~ 45 ms, fars k=5 5% ~ 600 ms,
fars k=5 + 0.2-closeness 5% ~ 2.9 s.

anjana (PyPI ``anjana``, optional) is run on adult with k = 5 at 0% and 5% suppression with
the same hierarchies: its ``k_anonymity`` is a greedy generalization (the QI with the most
distinct values first), so blendin's greedy ``datafly`` is timed next to it as well as the
optimal search. anjana pins its own numpy/pandas versions, so it may live in another
environment: set BLENDIN_ANJANA_PYTHON to that interpreter (else the current one is tried);
if it cannot be imported the script says so and skips it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

import arx_data
import pyarrow as pa

from blendin.anonymize import anonymize, prepare
from blendin.engines.kernels import recode_all
from blendin.hierarchy.arx import from_csv
from blendin.io import Source
from blendin.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)
from blendin.plan import plan_node
from blendin.search import find
from blendin.spec import Spec

#: (dataset, case) -> ARX's time in seconds
ARX = {("adult", "k=5, 0%"): 0.017, ("adult", "k=5, 5%"): 0.270,
       ("fars", "k=5, 0%"): 0.045, ("fars", "k=5, 5%"): 0.600,
       ("fars", "k=5 + t=0.2 equal, 5%"): 2.9}


def cases(sensitive: str) -> list[tuple[str, list, float]]:
    """(name, models, max_suppression) of every case."""
    k5 = KAnonymity(5)
    return [
        ("k=2, 0%", [KAnonymity(2)], 0.0),
        ("k=5, 0%", [k5], 0.0),
        ("k=5, 5%", [k5], 0.05),
        ("k=5 + distinct l=3, 5%", [k5, DistinctLDiversity(sensitive, 3)], 0.05),
        ("k=5 + entropy l=3, 5%", [k5, EntropyLDiversity(sensitive, 3)], 0.05),
        ("k=5 + recursive (4,3), 5%", [k5, RecursiveCLDiversity(sensitive, 4, 3)], 0.05),
        ("k=5 + t=0.2 equal, 5%", [k5, TCloseness(sensitive, 0.2, "equal")], 0.05),
        ("k=5 + t=0.2 hierarchical, 5%",
         [k5, TCloseness(sensitive, 0.2, "hierarchical")], 0.05),
    ]


def make_spec(name: str, models: list, limit: float) -> Spec:
    _, qis, sens = arx_data.SETS[name]

    def arx(column: str):
        return from_csv(arx_data.hierarchy_file(name, column), delimiter=";")

    return Spec(quasi_identifiers={q: arx(q) for q in qis}, sensitive=[sens], models=models,
                max_suppression=limit, sensitive_hierarchies={sens: arx(sens)})


@dataclass
class Row:
    dataset: str
    case: str
    search_recode: float
    recode: float
    whole: float
    nodes: int
    lattice: int
    levels: tuple
    suppressed: int
    loss: float


def median_time(fn, runs: int) -> tuple[float, object]:
    out = fn()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def bench_case(name: str, table: pa.Table, case: str, models: list, limit: float,
               runs: int, algorithm: str = "optimal") -> Row:
    spec = make_spec(name, models, limit)
    prepared = prepare(Source(table), spec)
    ft = prepared.ft

    recode_times = []

    def search_and_recode():
        solution = find(ft, models, max_suppression=limit, metric="loss", algorithm=algorithm)
        start = time.perf_counter()
        recoding = plan_node(ft, solution.levels, models)
        release = recode_all(table.to_batches(), recoding)
        recode_times.append(time.perf_counter() - start)
        return solution, release

    seconds, (solution, release) = median_time(search_and_recode, runs)
    recode = statistics.median(recode_times[1:])
    whole, result = median_time(lambda: anonymize(table, spec, algorithm=algorithm), runs)
    assert result.check.passed and tuple(result.levels.values()) == tuple(solution.levels)
    lattice = 1
    for h in ft.heights:
        lattice *= h
    return Row(name, case if algorithm == "optimal" else f"{case} [{algorithm}]", seconds,
               recode, whole, solution.nodes_checked, lattice, tuple(solution.levels),
               table.num_rows - release.num_rows, result.utility["loss"])


ANJANA_SCRIPT = r"""
import json, statistics, sys, time
import pandas as pd
from anjana.anonymity import k_anonymity
folder, qis, k, supp, runs = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), \
    float(sys.argv[4]), int(sys.argv[5])
df = pd.read_csv(f"{folder}/adult.csv", sep=";", dtype=str)
hier = {q: dict(pd.read_csv(f"{folder}/adult_hierarchy_{q}.csv", sep=";", header=None,
                            dtype=str)) for q in qis}
times, out = [], None
for _ in range(runs):
    start = time.perf_counter()
    out = k_anonymity(df, [], qis, k, supp, {q: dict(h) for q, h in hier.items()})
    times.append(time.perf_counter() - start)
sizes = out.groupby(qis).size() if len(out) else pd.Series([0])
print(json.dumps({"seconds": statistics.median(times), "rows": len(out),
                  "min_class": int(sizes.min()), "classes": int(len(sizes))}))
"""


def anjana_python() -> str | None:
    """An interpreter that can import anjana, or None."""
    for candidate in (os.environ.get("BLENDIN_ANJANA_PYTHON"), sys.executable):
        if not candidate:
            continue
        probe = subprocess.run([candidate, "-c", "import anjana"], capture_output=True)
        if probe.returncode == 0:
            return candidate
    return None


def run_anjana(python: str, k: int, supp_percent: float, runs: int) -> dict | None:
    qis = arx_data.SETS["adult"][1]
    proc = subprocess.run(
        [python, "-c", ANJANA_SCRIPT, str(arx_data.path("adult").parent), json.dumps(qis), str(k),
         str(supp_percent), str(runs)], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"anjana failed: {proc.stderr.strip().splitlines()[-1:]}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def show(rows: list[Row]) -> None:
    head = (f"{'data':<6} {'case':<30} {'search+recode':>13} {'recode':>7} {'ARX':>7} "
            f"{'anonymize()':>11} "
            f"{'nodes':>11} {'suppressed':>10} {'loss':>7}  node")
    print(head)
    print("-" * len(head))
    for r in rows:
        arx = ARX.get((r.dataset, r.case))
        arx_text = f"{arx * 1000:.0f} ms" if arx else ""
        print(f"{r.dataset:<6} {r.case:<30} {r.search_recode * 1000:>10.1f} ms "
              f"{r.recode * 1000:>4.0f} ms {arx_text:>7} "
              f"{r.whole * 1000:>8.0f} ms {r.nodes:>5}/{r.lattice:<5} {r.suppressed:>10} "
              f"{r.loss:>7.4f}  {r.levels}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per case (median)")
    with_sensitive = [name for name, (_, _, sens) in arx_data.SETS.items() if sens]
    parser.add_argument("--only", choices=with_sensitive, help="one dataset only")
    parser.add_argument("--no-anjana", action="store_true", help="skip anjana")
    parser.add_argument("--anjana-runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start "
          "(timings on a busy machine are inflated)")
    rows = []
    for name in [args.only] if args.only else with_sensitive:
        table = arx_data.read(name)
        print(f"{name}: {table.num_rows:,} rows", flush=True)
        for case, models, limit in cases(arx_data.SETS[name][2]):
            rows.append(bench_case(name, table, case, models, limit, args.runs))
            print(f"  {case}: {rows[-1].search_recode * 1000:.1f} ms", flush=True)
    print()
    show(rows)
    if args.no_anjana or (args.only and args.only != "adult"):
        return
    print()
    python = anjana_python()
    if python is None:
        print("anjana: not importable (pip install anjana, or set BLENDIN_ANJANA_PYTHON to an "
              "interpreter that has it); skipped")
        return
    table = arx_data.read("adult")
    print(f"anjana ({python}) vs blendin on adult, k = 5, same hierarchies; median of "
          f"{args.anjana_runs} (anjana) / {args.runs} (blendin) runs, in process")
    for limit in (0.0, 0.05):
        result = run_anjana(python, 5, limit * 100, args.anjana_runs)
        if result is None:
            continue
        case = f"k=5, {limit:.0%}"
        greedy = bench_case("adult", table, case, [KAnonymity(5)], limit, args.runs,
                            algorithm="datafly")
        optimal = next(r for r in rows if r.dataset == "adult" and r.case == case) \
            if not args.only or args.only == "adult" else None
        print(f"  {case}: anjana k_anonymity {result['seconds'] * 1000:,.0f} ms "
              f"({result['rows']:,} rows kept, {result['classes']:,} classes, smallest "
              f"{result['min_class']})")
        print(f"          blendin datafly search+recode {greedy.search_recode * 1000:.1f} ms "
              f"(x{result['seconds'] / greedy.search_recode:,.0f}), anonymize() "
              f"{greedy.whole * 1000:.0f} ms (x{result['seconds'] / greedy.whole:,.0f}); "
              f"{table.num_rows - greedy.suppressed:,} rows kept, node {greedy.levels}")
        if optimal is not None:
            print(f"          blendin optimal search+recode {optimal.search_recode * 1000:.1f} "
                  f"ms (x{result['seconds'] / optimal.search_recode:,.0f}), anonymize() "
                  f"{optimal.whole * 1000:.0f} ms (x{result['seconds'] / optimal.whole:,.0f})")


if __name__ == "__main__":
    main()
