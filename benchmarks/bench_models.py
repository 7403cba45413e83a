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
    dd2   k = 5 + delta-disclosure, 2     pres       k = 5 + delta-presence in [0, 0.5]
                                                     for the subset of every 10th row
    kmt   k-map, k = 5, against a population table: the data file itself (each class's
          people are its records), compared with ARX's k-anonymity (b)
    dp    (epsilon 2, delta 1e-6)-differential privacy by SafePub, the node fixed at half of
          every hierarchy (ARX's MEDIUM); dpdd: the node chosen by the exponential
          mechanism (ARX's search budget 0.1 of epsilon = 5%, 300 steps). Both random:
          the Loss of each tool over ``--seeds`` runs (mean and spread), not nodes.

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
import numpy as np
import pyarrow as pa
from bench_search import make_spec, median_time

from blendin.anonymize import prepare
from blendin.check import check
from blendin.engines.kernels import recode_all
from blendin.io import Source
from blendin.lattice import Checker
from blendin.metrics import utility_of_node
from blendin.models import (
    AverageRisk,
    BetaLikeness,
    DeltaDisclosure,
    DeltaPresence,
    DifferentialPrivacy,
    KAnonymity,
    KMap,
    PopulationUniqueness,
    SampleUniqueness,
)
from blendin.models.dp import find_dp, node_score
from blendin.plan import plan_node
from blendin.search import find

CLASSPATH = Path("/tmp/arx-build/cp.txt")
#: the random cases: compared on utility over many runs
RANDOM = ("dp", "dpdd")
#: blendin's cases that ArxBench runs under another name (the same release)
ARX_CASE = {"kmt": "b"}
#: the 0/1 column of the research subset (case pres): 0-based row index % 10 == 0
SUBSET = "research_subset"


def models_of(case: str, rows: int, sensitive: str, name: str = "adult") -> list:
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
        "pres": [k5, DeltaPresence(0.0, 0.5, SUBSET)],
        "kmt": [KMap(5, population=str(arx_data.path(name)))],
    }[case]


def released_batches(prepared):
    """The rows blendin releases: the research subset's (pres), the sample's (dp, dpdd)."""
    from blendin.models.dp import sampled
    from blendin.models.presence import subset_rows

    batches = prepared.source.batches()
    if prepared.sample is not None:
        return sampled(batches, prepared.sample)
    return batches if prepared.subset is None else subset_rows(batches, prepared.subset)


def with_subset(table: pa.Table) -> pa.Table:
    """The table with ArxBench's research subset marked (every 10th row, from row 0)."""
    marks = (np.arange(table.num_rows) % 10 == 0).astype(np.int8)
    return table.append_column(SUBSET, pa.array(marks))


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


def bench_dp(name: str, table: pa.Table, case: str, seeds: int) -> dict:
    """SafePub (``dp``, ``dpdd``) over ``seeds`` runs of each tool: blendin's Loss
    (``arx-loss``) and score at its node, and ARX's figure (its Loss for ``dp``; for
    ``dpdd`` ArxBench prints the node's score). ARX's node of run i is also measured on
    blendin's sample i, so that both choices are compared on the same records."""
    runs = [a for a in (arx(name, case, 1.0, 1, None) for _ in range(seeds))
            if a is not None and a.get("levels")]
    ours, scores, arx_nodes, times = [], [], [], []
    for seed in range(seeds):
        model = DifferentialPrivacy(2.0, 1e-6, 0.05 if case == "dpdd" else 0.0, seed=seed)
        spec = make_spec(name, [model], 1.0)
        started = time.perf_counter()
        prepared = prepare(Source(table), spec)
        checker = Checker(prepared.ft, [model], 1.0)
        levels = find_dp(model, checker, model.records_in_input)
        recoding = plan_node(prepared.ft, levels, [model])
        recode_all(released_batches(prepared), recoding)
        times.append(time.perf_counter() - started)
        ours.append(utility_of_node(prepared.ft, levels, recoding.suppressed_tuples)[
            "arx-loss"])
        scores.append(node_score(model, checker, levels, model.records_in_input))
        if seed < len(runs):
            theirs = [runs[seed]["levels"][q] for q in prepared.ft.qi_names]
            suppressed = plan_node(prepared.ft, theirs, [model]).suppressed_tuples
            arx_nodes.append(utility_of_node(prepared.ft, theirs, suppressed)["arx-loss"])

    def spread(values) -> tuple[float | None, float | None]:
        return (float(np.mean(values)), float(np.std(values))) if len(values) else (None, None)

    return {"set": name, "case": case, "supp": 1.0, "seeds": seeds,
            "seconds": float(np.median(times)), "loss": spread(ours), "score": spread(scores),
            "arx_node_loss": spread(arx_nodes),
            "arx_figure": spread([float(a["loss"]) for a in runs]), "arx_runs": len(runs),
            "arx_ms": float(np.median([a["median_ms"] for a in runs])) if runs else None}


def passes_checker(prepared, models, levels: dict) -> bool:
    """Does blendin's independent checker pass the release of ``levels``?"""
    spec, ft = prepared.spec, prepared.ft
    node = [levels[q] for q in ft.qi_names]
    recoding = plan_node(ft, node, models, identifiers=prepared.removed)
    if recoding.suppressed_records > int(spec.max_suppression * ft.n_records + 1e-9):
        return False
    release = recode_all(released_batches(prepared), recoding, suppressed="keep")
    return check(release, spec, population=prepared.source).passed


def bench(name: str, table: pa.Table, case: str, supp: float, runs: int) -> dict:
    sensitive = arx_data.SETS[name][2]
    models = models_of(case, table.num_rows, sensitive, name)
    spec = make_spec(name, models, supp)
    spec.delimiter = ";"  # the population table of kmt is ARX's file
    prepared = prepare(Source(with_subset(table) if case == "pres" else table), spec)
    ft = prepared.ft

    def search_and_recode():
        solution = find(ft, models, max_suppression=supp, metric="arx-loss")
        recoding = plan_node(ft, solution.levels, models, identifiers=prepared.removed)
        recode_all(released_batches(prepared), recoding)
        return solution

    seconds, solution = median_time(search_and_recode, runs)
    ours = solution.named_levels
    theirs = arx(name, ARX_CASE.get(case, case), supp, runs, ours)
    row = {"set": name, "case": case, "supp": supp, "seconds": seconds,
           "loss": solution.score, "levels": ours, "suppressed": solution.n_suppressed,
           "checked": solution.nodes_checked, "arx": theirs}
    if theirs is not None and theirs.get("levels"):
        row["arx_accepts_ours"] = theirs["other"]["anonymity"] == "ANONYMOUS"
        row["ours_no_worse"] = solution.score <= float(theirs["loss"]) * (1 + 1e-9) + 1e-12
        row["checker_passes_arx"] = passes_checker(prepared, models, theirs["levels"])
    return row


def show_dp(rows: list[dict]) -> None:
    def pm(pair) -> str:
        return "-" if pair[0] is None else f"{pair[0]:.4f} ± {pair[1]:.4f}"

    print(f"{'set':<6} {'case':<5} {'runs':>4} {'blendin ms':>10} {'ARX ms':>7} "
          f"{'blendin arx-loss':>17} {'ARX node, same':>17} {'blendin score':>17} "
          f"{'ARX Loss / score':>19}")
    for r in rows:
        print(f"{r['set']:<6} {r['case']:<5} {r['seeds']:>4} {1000 * r['seconds']:>10.1f} "
              f"{r['arx_ms'] or float('nan'):>7.0f} {pm(r['loss']):>17} "
              f"{pm(r['arx_node_loss']):>17} {pm(r['score']):>17} {pm(r['arx_figure']):>19}")


def show(rows: list[dict]) -> None:
    head = (f"{'set':<6} {'case':<5} {'supp':>4} {'blendin ms':>10} {'ARX ms':>8} "
            f"{'ARX/bl':>6} {'arx-loss':>9} {'ARX Loss':>9} {'node':>5} {'ARX ok':>6} "
            f"{'chk ok':>6}")
    print(head)
    print("-" * len(head))
    for r in rows:
        a = r["arx"] or {}
        arx_ms = a.get("median_ms")
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
    parser.add_argument("--seeds", type=int, default=20,
                        help="runs of the random cases (dp, dpdd) for each tool")
    args = parser.parse_args()
    if args.data:
        arx_data.DATA = Path(args.data)
    if not CLASSPATH.is_file():
        print("ARX is not built (/tmp/arx-build): blendin's figures only", file=sys.stderr)
    rows, random_rows = [], []
    started = time.perf_counter()
    for name in [args.only] if args.only else list(arx_data.SETS):
        table = arx_data.read(name)
        for case in ("b", "r05", "r20", "su01", "pu01", "km5", "kmt", "bl3", "dd2", "pres"):
            for supp in (0.0, 0.05):
                rows.append(bench(name, table, case, supp, args.runs))
                print(f"  {name} {case} {supp:.0%} done", file=sys.stderr)
        for case in RANDOM:  # SafePub suppresses freely: one limit
            random_rows.append(bench_dp(name, table, case, args.seeds))
            print(f"  {name} {case} done", file=sys.stderr)
    show(rows)
    show_dp(random_rows)
    rows += random_rows
    print(f"({time.perf_counter() - started:.0f} s in all, {os.cpu_count()} cores)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
