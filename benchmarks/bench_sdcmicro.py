"""blendin beside sdcMicro (R), in the same run: figures and times of each method.

    bash ../shared/peers/sdcmicro/build.sh /path/to/sdcMicro   # once (R and sdcMicro)
    python benchmarks/bench_sdcmicro.py

Methods so far: ``risk`` (individual risk with sampling weights, global risk, expected
re-identifications, household risk) on sdcMicro's ``testdata`` (4,580 persons in
households, the 7 keys of its documentation), ``suda2`` (special uniques) on testdata
and on adult (30,162 records, 8 keys), local (cell) suppression to k = 3 on testdata and
adult's first 5 keys (``localSuppression`` beside ``suppression = "cells"``), and MDAV
microaggregation of testdata's expend, income and savings (k = 3, 5, 10; sdcMicro's harness
names its IL1 ``il1s``). sdcMicro's time is the median of the method's call
(``createSdcObj``, ``suda2``, ``localSuppression``) over ``--runs`` runs inside R, the file
already read; blendin's the median of the whole ``bl.risk`` (``bl.anonymize``) call on the
CSV file (reading included) over as many, after a warm-up.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import arx_data
import pyarrow.csv as pcsv

import blendin as bl

HARNESS = arx_data.DATA.parent / "peers" / "sdcmicro" / "SdcBench.R"
#: sdcMicro's pram, which the shared harness does not run
PRAM = Path(__file__).resolve().parent / "sdcmicro" / "Pram.R"
TESTDATA = arx_data.DATA / "sdcmicro" / "testdata.csv"
KEYS = "urbrur,roof,walls,water,electcon,relat,sex"
#: (blendin figure, sdcMicro figure) of the risk method
RISK = (("average", "global_risk"), ("expected", "expected_reident"),
        ("household_average", "hier_risk"), ("household_expected", "hier_expected_reident"),
        ("highest", "indiv_risk_max"))


def sdcmicro(method: str, runs: int, data: Path = TESTDATA, keys: str = KEYS,
             timeout: float = 3600, **options: str) -> dict | None:
    """sdcMicro's figures and time (None when it did not finish within ``timeout``)."""
    command = ["Rscript", str(HARNESS), str(data), method, keys, f"runs={runs}",
               *(f"{k}={v}" for k, v in options.items())]
    return _rscript(command, timeout)


def _rscript(command: list[str], timeout: float) -> dict | None:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"{command[1]} failed: {(proc.stderr or proc.stdout).strip()[-600:]}")
    return json.loads(lines[-1])


def adult_csv(folder: str) -> Path:
    """adult as sdcMicro's harness reads it (commas, names without "-"), in ``folder``."""
    adult = arx_data.read("adult")
    path = Path(folder) / "adult.csv"
    pcsv.write_csv(adult.rename_columns([c.replace("-", "_") for c in adult.column_names]),
                   path)
    return path


def timed(work, runs: int):
    work()  # warm-up: imports, first read
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return result, 1000 * statistics.median(times)


def risk(runs: int) -> None:
    theirs = sdcmicro("risk", runs, w="sampling_weight", hh="ori_hid")
    report, ms = timed(lambda: bl.risk(str(TESTDATA), KEYS, weights="sampling_weight",
                                       household="ori_hid"), runs)
    ours = report.individual
    print(f"risk on testdata ({theirs['rows']:,} records, keys {KEYS}), weights and "
          "households")
    print(f"  {'figure':<22} {'blendin':>20} {'sdcMicro':>20} {'|diff|':>10}")
    worst = 0.0
    for mine, other in RISK:
        a, b = getattr(ours, mine), theirs[other]
        worst = max(worst, abs(a - b))
        print(f"  {mine:<22} {a:20.15g} {b:20.15g} {abs(a - b):10.1e}")
    print(f"  largest difference {worst:.1e}; time blendin {ms:.1f} ms, sdcMicro "
          f"{theirs['ms']:.0f} ms (blendin/sdcMicro {ms / theirs['ms']:.2f}x)")


def suda2(runs: int) -> None:
    print("\nsuda2 (special uniques, DIS fraction 0.01)")
    print(f"  {'data':<10} {'':<9} {'records':>8} {'score sum':>10} {'max':>6} "
          f"{'DIS sum':>14} {'DIS max':>10} {'ms':>8}")
    with tempfile.TemporaryDirectory() as folder:
        # sdcMicro's harness reads commas and names without "-": adult is written so
        path = adult_csv(folder)
        adult_keys = ",".join(c.replace("-", "_") for c in arx_data.SETS["adult"][1])
        for name, data, keys in (("testdata", TESTDATA, KEYS), ("adult", path, adult_keys)):
            theirs = sdcmicro("suda2", runs, data, keys)
            report, ms = timed(lambda d=data, k=keys: bl.risk(str(d), k, suda=True), runs)
            s = report.suda
            for tool, row in (("blendin", (s.records_with_msu, s.score_sum, s.score_max,
                                           s.dis_sum, s.dis_max, ms)),
                              ("sdcMicro", (theirs["records_with_msu"], theirs["score_sum"],
                                            theirs["score_max"], theirs["dis_sum"],
                                            theirs["dis_max"], theirs["ms"]))):
                print(f"  {name:<10} {tool:<9} {row[0]:>8,} {row[1]:>10,.0f} {row[2]:>6,.0f} "
                      f"{row[3]:>14.8f} {row[4]:>10.8f} {row[5]:>8.1f}")
            print(f"  {'':<10} blendin/sdcMicro time {ms / theirs['ms']:.2f}x")


def local_suppression(runs: int, k: int = 3) -> None:
    """sdcMicro's localSuppression beside blendin's suppression = "cells" (every key as it
    is), on testdata and on adult's first keys: cells blanked and time."""
    print(f"\nlocal suppression to k = {k} (every key as it is)")
    print(f"  {'data':<10} {'':<9} {'cells':>7}  {'per key':<58} {'ms':>9}")
    with tempfile.TemporaryDirectory() as folder:
        path = adult_csv(folder)
        adult_keys = ",".join(c.replace("-", "_") for c in arx_data.SETS["adult"][1][:5])
        for name, data, keys in (("testdata", TESTDATA, KEYS), ("adult", path, adult_keys)):
            names = keys.split(",")
            spec = bl.Spec(quasi_identifiers={q: bl.as_is() for q in names},
                           models=[bl.KAnonymity(k)], max_suppression=1, suppression="cells")
            theirs = sdcmicro("localsupp", runs, data, keys, k=str(k))
            result, ms = timed(lambda d=data, s=spec: bl.anonymize(str(d), s), runs)
            assert result.check.passed
            for tool, per_key, took in (("blendin", result.cells, ms),
                                        ("sdcMicro", theirs["per_key"], theirs["ms"])):
                shown = ", ".join(f"{q} {int(n)}" for q, n in per_key.items() if n)
                print(f"  {name:<10} {tool:<9} {int(sum(per_key.values())):>7,}  "
                      f"{shown[:58]:<58} {took:>9.1f}")
            print(f"  {'':<10} blendin/sdcMicro cells "
                  f"{sum(result.cells.values()) / theirs['suppressed_cells']:.2f}x, "
                  f"time {ms / theirs['ms']:.2f}x (blendin: the whole anonymize call)")


def pram(runs: int) -> None:
    """PRAM of one column (invariant, pd 0.8, alpha 0.5): values changed and time, the
    column already in memory on both sides."""
    import numpy as np

    from blendin.transform.pram import Pram

    print("\npram (invariant, pd 0.8, alpha 0.5)")
    print(f"  {'data':<22} {'':<9} {'records':>9} {'changed':>9} {'ms':>9}")
    with tempfile.TemporaryDirectory() as folder:
        path = adult_csv(folder)
        for name, data, column in (("testdata hhcivil", TESTDATA, "hhcivil"),
                                   ("adult occupation", path, "occupation")):
            theirs = _rscript(["Rscript", str(PRAM), str(data), column, f"runs={runs}"], 3600)
            values = np.asarray(pcsv.read_csv(data).column(column).to_pylist()).astype(str)
            (after, _, _), ms = timed(lambda v=values: Pram(pd=0.8, seed=1).apply(v), runs)
            changed = int((after != values).sum())
            for tool, row in (("blendin", (len(values), changed, ms)),
                              ("sdcMicro", (theirs["rows"], theirs["changed"], theirs["ms"]))):
                print(f"  {name:<22} {tool:<9} {row[0]:>9,} {row[1]:>9,} {row[2]:>9.1f}")
            print(f"  {'':<22} blendin/sdcMicro time {ms / theirs['ms']:.2f}x")


def large(runs: int, rows: int = 1_000_000, timeout: float = 900) -> None:
    """A 1M-row adult-like table with sampling weights and households: risk, SUDA2 and
    local suppression beside sdcMicro, each where sdcMicro finishes within ``timeout``."""
    import adult_like
    import numpy as np
    import pyarrow as pa

    with tempfile.TemporaryDirectory() as folder:
        table = pa.concat_tables(adult_like.chunks(rows))
        rng = np.random.default_rng(0)
        table = table.rename_columns([c.replace("-", "_") for c in table.column_names])
        table = table.append_column("w", pa.array(rng.choice([50.0, 100.0, 200.0], rows)))
        table = table.append_column("hid", pa.array(np.arange(rows) // 3))
        path = Path(folder) / "adult1m.csv"
        pcsv.write_csv(table, path)
        keys = ",".join(c.replace("-", "_") for c in arx_data.SETS["adult"][1][:5])
        print(f"\n{rows:,}-row adult-like table (keys {keys}; weights, households of 3)")
        print(f"  {'method':<18} {'blendin':>12} {'sdcMicro':>14} {'ratio':>7}  figures")
        theirs = sdcmicro("risk", 1, path, keys, timeout, w="w", hh="hid")
        report, ms = timed(lambda: bl.risk(str(path), keys, weights="w", household="hid"), 1)
        _row("risk", ms, theirs, f"global risk {report.individual.average:.6g}" + (
            f" (sdcMicro {theirs['global_risk']:.6g})" if theirs else ""))
        theirs = sdcmicro("suda2", 1, path, keys, timeout)
        report, ms = timed(lambda: bl.risk(str(path), keys, suda=True), 1)
        _row("suda2", ms, theirs, f"records with an MSU {report.suda.records_with_msu:,}" + (
            f" (sdcMicro {theirs['records_with_msu']:,})" if theirs else ""))
        spec = bl.Spec(quasi_identifiers={q: bl.as_is() for q in keys.split(",")},
                       models=[bl.KAnonymity(3)], max_suppression=1, suppression="cells")
        theirs = sdcmicro("localsupp", 1, path, keys, timeout, k="3")
        result, ms = timed(lambda: bl.anonymize(str(path), spec), 1)
        _row("local suppression", ms, theirs, f"cells {sum(result.cells.values()):,}" + (
            f" (sdcMicro {theirs['suppressed_cells']:,})" if theirs else ""))


def _row(method: str, ms: float, theirs: dict | None, figures: str) -> None:
    other = f"{theirs['ms']:>12,.0f}ms" if theirs else f"{'(> timeout)':>14}"
    ratio = f"{ms / theirs['ms']:>6.2f}x" if theirs else f"{'':>7}"
    print(f"  {method:<18} {ms:>10,.0f}ms {other} {ratio}  {figures}")


def microaggregation(runs: int) -> None:
    import numpy as np
    import pyarrow.csv as csv

    from blendin.transform.microaggregation import Loss, aggregated, mdav

    columns = ["expend", "income", "savings"]
    table = csv.read_csv(TESTDATA)
    x = np.stack([table.column(c).to_numpy().astype(float) for c in columns], axis=1)
    print(f"\nMDAV on testdata ({', '.join(columns)})")
    print(f"  {'k':>3} {'':<9} {'groups':>7} {'IL1':>18} {'squared error':>16} {'ms':>8}")
    for k in (3, 5, 10):
        theirs = sdcmicro("mdav", runs, keys="urbrur", num=",".join(columns), k=str(k))
        group, ms = timed(lambda k=k: mdav(x, k), runs)
        loss = Loss.of(x, aggregated(x, group))
        print(f"  {k:>3} {'blendin':<9} {group.max() + 1:>7,} {loss.il1:>18.6f} "
              f"{loss.squared_error:>16.6e} {ms:>8.1f}")
        print(f"  {'':>3} {'sdcMicro':<9} {theirs['groups']:>7,} {theirs['il1s']:>18.6f} "
              f"{theirs['sse']:>16.6e} {theirs['ms']:>8.1f}   "
              f"(blendin/sdcMicro time {ms / theirs['ms']:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--large", type=int, default=0, metavar="ROWS",
                        help="also an adult-like table of ROWS rows (e.g. 1000000)")
    parser.add_argument("--timeout", type=float, default=900,
                        help="seconds sdcMicro may take on the large table, per method")
    args = parser.parse_args()
    if shutil.which("Rscript") is None or not HARNESS.is_file():
        sys.exit("sdcMicro skipped: no Rscript or no harness (bash "
                 "../shared/peers/sdcmicro/build.sh /path/to/sdcMicro)")
    if not TESTDATA.is_file():
        sys.exit(f"no data at {TESTDATA}")
    risk(args.runs)
    suda2(args.runs)
    local_suppression(args.runs)
    microaggregation(args.runs)
    pram(args.runs)
    if args.large:
        large(args.runs, args.large, args.timeout)


if __name__ == "__main__":
    main()
