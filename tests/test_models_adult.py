"""Privacy models on the Adult benchmark (ARX's hierarchies), checked against pandas and an LP.

Skips when ../shared/data is absent.
"""

import csv
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from blendin.frequency import FrequencyTable
from blendin.hierarchy.core import Hierarchy
from blendin.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult"
if not DATA.is_dir():
    pytest.skip("benchmark data (../shared/data) not available", allow_module_level=True)

optimize = pytest.importorskip("scipy.optimize")


def hierarchy(column):
    path = DATA / f"adult_hierarchy_{column}.csv"
    with path.open(newline="", encoding="utf-8") as f:
        rows = [r for r in csv.reader(f, delimiter=";") if r]
    return Hierarchy.from_rows(rows, name=path.name), rows


@pytest.fixture(scope="module")
def adult():
    df = pd.read_csv(DATA / "adult.csv", sep=";", dtype=str)
    age, _ = hierarchy("age")
    sex, _ = hierarchy("sex")
    occupation, rows = hierarchy("occupation")
    ft = FrequencyTable.from_table(df, {"age": age, "sex": sex}, ["occupation"],
                                   sensitive_hierarchies={"occupation": occupation})
    classes, _ = ft.classes_at([2, 0])  # age in 20-year bands, sex as it is
    band = df.age.map(dict(zip(age.ground, age.label_array(2))))
    groups = df.assign(band=band).groupby(["band", "sex"]).occupation
    return df, ft, classes, groups, rows


def test_l_diversity_figures_match_pandas(adult):
    df, _, classes, groups, _ = adult
    assert KAnonymity(1).figure(classes) == groups.size().min()
    assert DistinctLDiversity("occupation", 1).figure(classes) == groups.nunique().min()

    def entropy(s):
        p = s.value_counts(normalize=True)
        return float(-(p * np.log(p)).sum())

    want = math.exp(groups.apply(entropy).min())
    assert EntropyLDiversity("occupation", 1).figure(classes) == pytest.approx(want)

    def recursive(s, c=3.0):
        r = sorted(s.value_counts().tolist(), reverse=True)
        return max([j for j in range(1, len(r) + 1) if r[0] < c * sum(r[j - 1:])], default=0)

    assert RecursiveCLDiversity("occupation", 3, 2).figure(classes) == groups.apply(
        recursive).min()


def test_t_closeness_distances_match_lp(adult):
    df, ft, classes, _, rows = adult
    domain = ft.domains["occupation"]
    labels = [str(v) for v in domain.labels]
    path = {r[0]: r for r in rows}
    height = len(rows[0]) - 1  # ARX's occupation hierarchy has a single top "*"
    ground = np.array([[next(lv for lv in range(height + 1) if path[a][lv] == path[b][lv])
                        / height for b in labels] for a in labels])
    rank = np.argsort(np.argsort(np.array(labels)))  # categories: ordered by text
    ordered = np.abs(rank[:, None] - rank[None, :]) / (len(labels) - 1)
    q = domain.overall / domain.overall.sum()
    got = {d: TCloseness("occupation", 1, d).distances(classes)
           for d in ("hierarchical", "ordered", "equal")}
    m = len(labels)
    a_eq = np.vstack([np.kron(np.eye(m), np.ones(m)), np.kron(np.ones(m), np.eye(m))])
    for i, hist in enumerate(classes.histograms["occupation"]):
        p = hist / hist.sum()
        for name, cost in (("hierarchical", ground), ("ordered", ordered),
                           ("equal", 1 - np.eye(m))):
            out = optimize.linprog(cost.ravel(), A_eq=a_eq, b_eq=np.r_[p, q], bounds=(0, None),
                                   method="highs")
            assert got[name][i] == pytest.approx(out.fun, abs=1e-7), (name, i)
