"""Mondrian on adult (30k rows) and adult replicated to 1M rows, next to anonypy and umbra-k.

Run from the repository root (the data lives in ../shared/data/adult):

    python benchmarks/bench_mondrian.py               # blendin on 30k and 1M, others on 30k
    python benchmarks/bench_mondrian.py --others-1m   # also anonypy/umbra-k on 1M (very slow)

QIs: age (numeric) and education, marital-status, native-country, race, salary-class, sex,
workclass (ARX hierarchies); sensitive: occupation. Models: k = 5, and k = 5 with distinct
3-diversity (umbra-k has no l-diversity). Every tool's groups are scored the same way here,
from the groups of the rows: GCP with sets for categories (values in the group / values of the
attribute, 0 for one value; anonypy and umbra-k release sets) and range / whole range for age;
discernibility = sum of squared group sizes. blendin's own release shows hierarchy ancestors
by default: its GCP for that form is the "gcp (hierarchy)" column.

Replicating adult repeats every distinct tuple at least 33 times, so at k = 5 each distinct
tuple can stand alone (GCP 0); the large table measures scale, and 3-diversity keeps it honest.

blendin's time covers, from a pandas DataFrame: the frequency table, the partitioning, the
labels and the release table (rows in source order); best of 3 after one warm-up run. The
others run once (each takes many seconds).
"""

from __future__ import annotations

import argparse
import time

import arx_data
import numpy as np
import pandas as pd

from blendin.engines.kernels import group_of_rows, mondrian_release
from blendin.frequency import FrequencyTable
from blendin.hierarchy.core import Hierarchy
from blendin.models import DistinctLDiversity, KAnonymity
from blendin.search.mondrian import mondrian, mondrian_utility

_, QIS, SENSITIVE = arx_data.SETS["adult"]


def load() -> tuple[pd.DataFrame, dict[str, Hierarchy]]:
    table = arx_data.read("adult")
    return table.to_pandas(), arx_data.hierarchies("adult", table)


def score(df: pd.DataFrame, group: np.ndarray, hierarchies: dict[str, Hierarchy]) -> dict:
    """GCP (sets for categories) and discernibility of a grouping of the rows."""
    frame = df[QIS].copy()
    frame["age"] = frame["age"].astype(float)
    frame["_g"] = group
    by = frame.groupby("_g")
    sizes = by.size()
    total = 0.0
    for col in QIS:
        if col == "age":
            numbers = hierarchies[col].numbers
            width = (by[col].max() - by[col].min()) / (numbers.max() - numbers.min())
        else:
            distinct = by[col].nunique()
            width = np.where(distinct > 1, distinct / len(hierarchies[col].ground), 0.0)
        total += float((np.asarray(width) * sizes.to_numpy()).sum())
    return {"groups": len(sizes), "min group": int(sizes.min()),
            "gcp": total / (len(df) * len(QIS)),
            "discernibility": int((sizes.to_numpy(np.int64) ** 2).sum())}


def run_blendin(df, hierarchies, models, repeat: int = 3) -> dict:
    times = []
    for _ in range(repeat):  # best of a few runs, after the first (warm-up) call
        start = time.perf_counter()
        ft = FrequencyTable.from_table(df, hierarchies, [SENSITIVE])
        p = mondrian(ft, models)
        release = mondrian_release(df, ft, p)
        times.append(time.perf_counter() - start)
    seconds = min(times)
    assert release.num_rows == len(df)
    out = score(df, group_of_rows(df, ft, p), hierarchies)
    out["gcp (hierarchy)"] = mondrian_utility(ft, p)["gcp"]
    return {"seconds": seconds, **out}


def run_anonypy(df, hierarchies, k, l):  # noqa: E741 (the papers' name)
    from anonypy import anonypy
    from anonypy.mondrian import Mondrian

    frame = df[[*QIS, SENSITIVE]].copy()
    frame["age"] = frame["age"].astype(int)
    for col in [*QIS[1:], SENSITIVE]:
        frame[col] = frame[col].astype("category")
    start = time.perf_counter()
    m = Mondrian(frame, QIS, SENSITIVE)
    partitions = m.partition(k, l)
    anonypy.anonymize(frame, partitions, QIS, SENSITIVE)
    seconds = time.perf_counter() - start
    group = np.empty(len(frame), np.int64)
    for i, part in enumerate(partitions):  # only to score, outside the timing
        group[np.asarray(part)] = i
    return {"seconds": seconds, **score(df, group, hierarchies), "gcp (hierarchy)": None}


def run_umbra(df, hierarchies, k):
    from umbra_k import MondrianAnonymizer

    frame = df[[*QIS, SENSITIVE]].copy()
    frame["age"] = frame["age"].astype(int)
    start = time.perf_counter()
    out = MondrianAnonymizer(k=k, quasi_id=QIS).fit_transform(frame)
    seconds = time.perf_counter() - start
    group = out.groupby(QIS, sort=False).ngroup().to_numpy()
    return {"seconds": seconds, **score(df, group, hierarchies), "gcp (hierarchy)": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--others-1m", action="store_true",
                        help="also run anonypy and umbra-k on 1M rows (tens of minutes)")
    parser.add_argument("--skip-others", action="store_true", help="blendin only")
    parser.add_argument("--rows", type=int, default=1_000_000, help="size of the large table")
    args = parser.parse_args()
    df, hierarchies = load()
    run_blendin(df, hierarchies, [KAnonymity(5)], repeat=1)  # warm-up: imports, kernels
    big = df.iloc[np.arange(args.rows) % len(df)].reset_index(drop=True)
    cases = [("k=5", 5, None), ("k=5, distinct 3-div", 5, 3)]
    rows = []
    for name, data in (("adult", df), (f"adult x{args.rows / len(df):.1f}", big)):
        for label, k, l in cases:  # noqa: E741
            models = [KAnonymity(k)] + ([DistinctLDiversity(SENSITIVE, l)] if l else [])
            rows.append({"data": name, "rows": len(data), "model": label, "tool": "blendin",
                         **run_blendin(data, hierarchies, models)})
            _show(rows[-1])
            others = not args.skip_others and (data is df or args.others_1m)
            for tool, available in (("anonypy", _has("anonypy")), ("umbra-k", _has("umbra_k"))):
                if not others or not available or (tool == "umbra-k" and l):
                    continue
                figures = run_anonypy(data, hierarchies, k, l or 0) if tool == "anonypy" \
                    else run_umbra(data, hierarchies, k)
                rows.append({"data": name, "rows": len(data), "model": label, "tool": tool,
                             **figures})
                _show(rows[-1])
    table = pd.DataFrame(rows)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))


def _show(row: dict) -> None:
    print(f"{row['data']:>12} {row['model']:<20} {row['tool']:<8} {row['seconds']:9.3f} s  "
          f"groups {row['groups']:>6}  gcp {row['gcp']:.4f}", flush=True)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


if __name__ == "__main__":
    main()
