"""How long the utility report takes on many rows: matching, measures, distributions, plots.

    python benchmarks/bench_utility.py --rows 1000000

An adult-like table (age, sex, a 5-digit ZIP from 3,000 values, education; income to
predict) is released with k = 5 and 5% suppression, then ``bl.utility`` is timed without a
target, its plots drawn, and with a target on a sample of ``--sample`` records.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import blendin as bl
from blendin.report.utility_html import plot_files


def table(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 91, rows)
    education = rng.choice(["school", "college", "bachelor", "master", "doctorate"], rows,
                           p=[0.4, 0.3, 0.2, 0.08, 0.02])
    zips = rng.choice(np.arange(10000, 99999), 3000, replace=False)
    income = np.where(age + 10 * (education != "school") + rng.normal(0, 10, rows) > 55,
                      ">50K", "<=50K")
    return pd.DataFrame({"age": age.astype(str), "sex": rng.choice(["F", "M"], rows),
                         "zip": rng.choice(zips, rows).astype(str), "education": education,
                         "income": income})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--sample", type=int, default=20_000)
    args = parser.parse_args()
    df = table(args.rows)
    spec = bl.Spec(quasi_identifiers={"age": bl.intervals(5, 10, 20), "sex": bl.flat(),
                                      "zip": bl.masking(), "education": bl.flat()},
                   models=[bl.KAnonymity(5)], max_suppression=0.05)
    release = bl.anonymize(df, spec).data
    print(f"{args.rows:,} rows, released {len(release):,}")
    started = time.perf_counter()
    report = bl.utility(df, release, spec, pairs=["age,sex"])
    print(f"utility, no target: {time.perf_counter() - started:.2f} s")
    started = time.perf_counter()
    figures = plot_files(report)
    print(f"{len(figures)} plots drawn: {time.perf_counter() - started:.2f} s")
    started = time.perf_counter()
    bl.utility(df, release, spec, target="income", sample=args.sample)
    print(f"utility, target income, three models on {args.sample:,} records: "
          f"{time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
