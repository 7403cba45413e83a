"""blendin utility beside ARX's: the same release measured by both tools.

ARX anonymizes the set (k-anonymity, suppression limit, its default metric, Flash) and
prints its quality measures and classification statistics (``benchmarks/arx/ArxUtility``);
blendin then measures ARX's own release file against the input with ``bl.utility``, so
both tools look at the same records. Per column (granularity, non-uniform entropy,
attribute-level squared error, generalization intensity) and per table (ambiguity, AECS,
SSE/SST, record-level squared error, discernibility) the two figures and their
difference are printed; a difference above 1e-6 is flagged, except where the definitions
differ: ARX also ranks text columns by their hierarchy's rows for the squared errors and
SSE/SST, blendin measures numbers only (docs/utility.md). On fars every QI is a number.
The classification figures are printed side by side with each tool's protocol (they
differ: see docs/utility.md).

    benchmarks/arx/build_utility.sh                # once: compiles the harness against ARX
    python benchmarks/bench_utility_arx.py         # adult and fars, no random forest
    python benchmarks/bench_utility_arx.py --set adult --models lr,nb,rf

ARX's random forest (500 trees, 10 folds, twice) takes about 9 minutes on adult on two
cores; it runs only when asked (``--models ...,rf``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import arx_data
import pyarrow.csv as pcsv

import blendin as bl

CP_FILE = Path(os.environ.get("BLENDIN_ARX_UTILITY_CP", "/tmp/arx-build/utility-cp.txt"))
#: set -> (target, numeric QIs): the columns typed as numbers in both tools (fars holds
#: codes only: every QI a number, so every measure has one definition in both tools)
CASES = {"adult": ("salary-class", ["age"]),
         "fars": ("iinjury", ["iage", "irace", "ideathmon", "ideathday", "isex", "ihispanic",
                              "istatenum"])}
#: measures ARX also computes over text columns, ranked by their hierarchy's rows
RANKED = {"squared_error (columns)", "sse_sst", "record_squared_error"}
COLUMN_MEASURES = {"granularity": "granularity", "non_uniform_entropy": "non_uniform_entropy",
                   "squared_error": "attribute_level_squared_error",
                   "generalization_intensity": "generalization_intensity"}
TABLE_MEASURES = {"ambiguity": "ambiguity", "aecs": "aecs", "sse_sst": "sse_sst",
                  "record_squared_error": "record_level_squared_error",
                  "discernibility": "discernibility"}
MODELS = {"lr": ("logistic regression", "logistic_regression"),
          "nb": ("naive bayes", "naive_bayes"), "rf": ("random forest", "random_forest")}
TOLERANCE = 1e-6


def run_arx(cp: str, name: str, k: int, suppression: float, out: Path, models: str) -> dict:
    target, numeric = CASES[name]
    command = ["java", f"-Dmodels={models}", "-cp", cp, "ArxUtility", str(arx_data.DATA), name,
               target, str(k), str(suppression), str(out), ",".join(numeric)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"ArxUtility failed: {(proc.stderr or proc.stdout).strip()[-600:]}")
    return json.loads(lines[-1])


def spec_of(name: str, qis: list[str], table) -> bl.Spec:
    """The QIs with ARX's hierarchy files; numbers only where ARX types them INTEGER."""
    numeric = CASES[name][1]
    built = arx_data.hierarchies(name, table, qis)
    for q in qis:
        if q not in numeric:
            built[q] = dataclasses.replace(built[q], kind="categorical", numbers=None)
    return bl.Spec(quasi_identifiers={q: built[q] for q in qis}, models=[bl.KAnonymity(2)])


def read_text(path: Path):
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().strip().split(";")
    return pcsv.read_csv(path, parse_options=pcsv.ParseOptions(delimiter=";"),
                         convert_options=pcsv.ConvertOptions(
                             column_types={c: "string" for c in header}))


def compare(name: str, arx: dict, report) -> list[str]:
    """Print each measure of both tools; return the ones that differ by more than 1e-6."""
    quality = arx["quality"]
    differ = []
    print(f"\n{name}: ARX levels {arx['levels']}, {arx['suppressed']:,} of {arx['rows']:,} "
          "records suppressed")
    print(f"  {'measure':<34} {'blendin':>12} {'ARX':>12} {'|diff|':>10}")

    text = any(c.squared_error is None for c in report.columns)

    def row(label: str, ours, theirs) -> None:
        if ours is None and theirs is None:
            return
        if ours is None or theirs is None:
            print(f"  {label:<34} {'-' if ours is None else f'{ours:.8f}':>12} "
                  f"{'-' if theirs is None else f'{theirs:.8f}':>12}  (ARX only: a text "
                  "column ranked by its hierarchy's rows)")
            return
        diff = abs(ours - theirs)
        flag = ""
        if diff > TOLERANCE and text and label in RANKED:
            flag = "  (ARX adds the text columns, ranked)"
        elif diff > TOLERANCE:
            flag = "  DIFFERS"
            differ.append(label)
        print(f"  {label:<34} {ours:12.8f} {theirs:12.8f} {diff:10.2e}{flag}")

    for column in report.columns:
        for ours, theirs in COLUMN_MEASURES.items():
            row(f"{column.name}: {ours}", getattr(column, ours),
                quality[theirs]["per_attribute"].get(column.name))
    for ours, theirs in COLUMN_MEASURES.items():
        row(f"{ours} (columns)", report.overall.get(ours), quality[theirs]["overall"])
    for ours, theirs in TABLE_MEASURES.items():
        row(ours, report.table.get(ours), quality[theirs]["value"])
    return differ


def classification(arx: dict, report, models: list[str]) -> None:
    c = report.classification
    print(f"  classification of {c.target!r}: accuracy (Brier, AUC); blendin {c.folds}-fold "
          f"over {c.records:,} records, ARX 10-fold over up to 100,000")
    print(f"  {'':<30} {'zero rule':>24} {'input':>24} {'release':>24}")
    for key in models:
        ours, theirs = MODELS[key]
        found = arx["classification"].get(theirs, {})
        if "accuracy" not in found:
            continue
        for tool, (base, before, after) in (
                ("blendin", (c.baseline, c.original[ours], c.released[ours])),
                ("ARX", tuple(_arx_scores(found, side) for side in
                              ("zeror", "original", "output")))):
            cells = [f"{s.accuracy:.4f} ({s.brier:.3f}, {s.auc:.3f})"
                     for s in (base, before, after)]
            print(f"  {ours + ', ' + tool:<30} {cells[0]:>24} {cells[1]:>24} {cells[2]:>24}")


def _arx_scores(found: dict, side: str):
    from blendin.utility import Scores

    return Scores(found["accuracy"][side], found["brier"][side],
                  found["roc_auc_mean"][side])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(CASES), action="append",
                        help="data set (repeatable; default both)")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--suppression", type=float, default=0.05)
    parser.add_argument("--models", default="lr,nb",
                        help="classifiers of both tools: lr, nb, rf (comma-separated)")
    args = parser.parse_args()
    if not CP_FILE.is_file():
        sys.exit(f"no ARX utility harness at {CP_FILE}: run benchmarks/arx/build_utility.sh "
                 "(after ../shared/peers/arx/build.sh)")
    cp = CP_FILE.read_text().strip()
    keys = [m.strip() for m in args.models.split(",") if m.strip()]
    differ = {}
    for name in args.set or sorted(CASES):
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / f"{name}_arx.csv"
            started = time.perf_counter()
            arx = run_arx(cp, name, args.k, args.suppression, out, args.models)
            arx_seconds = time.perf_counter() - started
            table = arx_data.read(name)
            spec = spec_of(name, arx["qis"], table)
            started = time.perf_counter()
            report = bl.utility(table, read_text(out), spec, target=CASES[name][0],
                                models=[MODELS[k][0] for k in keys])
            ours_seconds = time.perf_counter() - started
        differ[name] = compare(name, arx, report)
        classification(arx, report, keys)
        print(f"  time: blendin utility {ours_seconds:.1f} s; ARX quality "
              f"{arx['seconds']['quality']:.1f} s + classification "
              f"{arx['seconds']['classification']:.1f} s (whole run {arx_seconds:.1f} s)")
    print("\nmeasures differing by more than 1e-6: " + (
        "; ".join(f"{n}: {', '.join(d)}" for n, d in differ.items() if d) or "none"))


if __name__ == "__main__":
    main()
