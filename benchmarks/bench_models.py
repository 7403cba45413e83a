"""Privacy models beyond k, l and t, side by side with ARX in one run (../shared/peers/arx).

Run from the repository root (the data lives in ../shared/data, ARX built in /tmp/arx-build):

    python benchmarks/bench_models.py                 # adult and fars, median of 5 runs
    python benchmarks/bench_models.py --runs 3 --only adult --data /path/to/shared/data

Every case of ArxBench's model list, each at 0% and 5% suppression (ArxBench's ``-Dsupp``),
with the same data, hierarchies and parameters (population 100 x the rows; ``bl3`` and
``dd2`` with k = 5 on the sensitive column), next to k-anonymity alone (``b``, k = 5):

    b     k-anonymity, k = 5              r05 / r20  average risk <= 5% / 20%
    su01  sample uniqueness <= 1%         pu01       population uniqueness <= 1% (Dankar)
    km5   k-map, k = 5 (Poisson, 0.01)    bl3        k = 5 + enhanced beta-likeness, beta 3
    dd2   k = 5 + delta-disclosure, 2     pres, dp, dpdd: not available in blendin yet

blendin runs the optimal search under ``arx-loss`` (ARX's default metric) on a frequency
table built once, then recodes every row (as ``bench_search.py``'s "search+recode"): the
median of ``--runs`` runs after a warm-up. ARX's time is ArxBench's median
``ARXAnonymizer.anonymize()`` on a warm JVM. For every case the script also checks, both
ways, that the tools agree: blendin's node is given to ARX (``-Dnode=``), which must find it
anonymous with a Loss no worse than its own optimum's; ARX's node is released by blendin
and must pass blendin's independent checker (``blendin.check``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import arx_data
import pyarrow as pa
from bench_search import make_spec, median_time

from blendin.anonymize import prepare
from blendin.check import check
from blendin.io import Source
from blendin.models import (
    AverageRisk,
    BetaLikeness,
    DeltaDisclosure,
    KAnonymity,
    KMap,
    PopulationUniqueness,
    SampleUniqueness,
)
from blendin.release import plan, recode_all
from blendin.search import find

CLASSPATH = Path("/tmp/arx-build/cp.txt")
#: ArxBench's cases that blendin cannot run yet
MISSING = ("pres", "dp", "dpdd")


def models_of(case: str, rows: int, sensitive: str) -> list:
    population = 100 * rows
    k5 = KAnonymity(5)
    return {
        "b": [k5],
        "r05": [AverageRisk(0.05)],
        "r20": [AverageRisk(0.2)],
        "su01": [SampleUniqueness(0.01)],
        "pu01": [PopulationUniqueness(0.01, "dankar", population=population)],
        "km5": [KMap(5, "poisson", population=population, significance=0.01)],
        "bl3": [k5, BetaLikeness(sensitive, 3.0, "enhanced")],
        "dd2": [k5, DeltaDisclosure(sensitive, 2.0)],
    }[case]


def arx(name: str, case: str, supp: float, runs: int, node: dict | None) -> dict | None:
    """ArxBench's JSON line, or None when ARX is not built."""
    if not CLASSPATH.is_file():
        return None
    options = [f"-Dsupp={supp}"]
    if node is not None:
        options.append("-Dnode=" + ",".join(f"{q}={lv}" for q, lv in node.items()))
    proc = subprocess.run(
        ["java", *options, "-cp", CLASSPATH.read_text().strip(), "ArxBench",
         str(arx_data.DATA), name, case, str(runs)], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"ArxBench {name} {case} failed: {proc.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def passes_checker(table: pa.Table, spec, ft, models, levels: dict) -> bool:
    """Does blendin's independent checker pass the release of ``levels``?"""
    node = [levels[q] for q in ft.qi_names]
    recoding = plan(ft, node, models)
    if recoding.suppressed_records > int(spec.max_suppression * ft.n_records + 1e-9):
        return False
    release = recode_all(table.to_batches(), recoding, suppressed="keep")
    return check(release, spec).passed


def bench(name: str, table: pa.Table, case: str, supp: float, runs: int) -> dict:
    sensitive = arx_data.SETS[name][2]
    if case in MISSING:
        theirs = arx(name, case, 1.0 if case.startswith("dp") else supp, runs, None)
        return {"set": name, "case": case, "supp": supp, "arx": theirs}
    models = models_of(case, table.num_rows, sensitive)
    spec = make_spec(name, models, supp)
    ft = prepare(Source(table), spec).ft

    def search_and_recode():
        solution = find(ft, models, max_suppression=supp, metric="arx-loss")
        recoding = plan(ft, solution.levels, models)
        recode_all(table.to_batches(), recoding)
        return solution

    seconds, solution = median_time(search_and_recode, runs)
    ours = solution.named_levels
    theirs = arx(name, case, supp, runs, ours)
    row = {"set": name, "case": case, "supp": supp, "seconds": seconds,
           "loss": solution.score, "levels": ours, "suppressed": solution.n_suppressed,
           "checked": solution.nodes_checked, "arx": theirs}
    if theirs is not None and theirs.get("levels"):
        row["arx_accepts_ours"] = theirs["other"]["anonymity"] == "ANONYMOUS"
        row["ours_no_worse"] = solution.score <= float(theirs["loss"]) * (1 + 1e-9) + 1e-12
        row["checker_passes_arx"] = passes_checker(table, spec, ft, models, theirs["levels"])
    return row


def show(rows: list[dict]) -> None:
    head = (f"{'set':<6} {'case':<5} {'supp':>4} {'blendin ms':>10} {'ARX ms':>8} "
            f"{'ARX/bl':>6} {'arx-loss':>9} {'ARX Loss':>9} {'node':>5} {'ARX ok':>6} "
            f"{'chk ok':>6}")
    print(head)
    print("-" * len(head))
    for r in rows:
        a = r["arx"] or {}
        arx_ms = a.get("median_ms")
        if "seconds" not in r:
            print(f"{r['set']:<6} {r['case']:<5} {r['supp']:>4.0%} {'n/a':>10} "
                  f"{arx_ms or float('nan'):>8.0f}   (not available in blendin)")
            continue
        ms = 1000 * r["seconds"]
        ratio = f"{arx_ms / ms:6.1f}" if arx_ms else "     -"
        arx_loss = float(a["loss"]) if a.get("loss") not in (None, "null") else float("nan")
        same = "same" if a.get("levels") == r["levels"] else ("-" if not a else "diff")
        yes = {True: "yes", False: "NO", None: "-"}
        print(f"{r['set']:<6} {r['case']:<5} {r['supp']:>4.0%} {ms:>10.1f} "
              f"{arx_ms or float('nan'):>8.0f} {ratio} {r['loss']:>9.4f} {arx_loss:>9.4f} "
              f"{same:>5} {yes[r.get('arx_accepts_ours')]:>6} "
              f"{yes[r.get('checker_passes_arx')]:>6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=list(arx_data.SETS))
    parser.add_argument("--data", help="the ARX data folder (default ../shared/data)")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    if args.data:
        arx_data.DATA = Path(args.data)
    if not CLASSPATH.is_file():
        print("ARX is not built (/tmp/arx-build): blendin's figures only", file=sys.stderr)
    rows = []
    started = time.perf_counter()
    for name in [args.only] if args.only else list(arx_data.SETS):
        table = arx_data.read(name)
        for case in ("b", "r05", "r20", "su01", "pu01", "km5", "bl3", "dd2", *MISSING):
            for supp in (0.0, 0.05):
                if case.startswith("dp") and supp:
                    continue  # SafePub suppresses freely: one run
                rows.append(bench(name, table, case, supp, args.runs))
                print(f"  {name} {case} {supp:.0%} done", file=sys.stderr)
    show(rows)
    print(f"({time.perf_counter() - started:.0f} s in all, {os.cpu_count()} cores)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
