"""k-map with an estimated population: the derived class size by hand, the search, errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_search import agree
from test_search_tables import tables

from blendin.check import check
from blendin.errors import BlendinError
from blendin.frequency import Classes, FrequencyTable
from blendin.hierarchy.core import Hierarchy
from blendin.models import KAnonymity, KMap, derived_k, model_from_toml
from blendin.search.mondrian import mondrian
from blendin.spec import Spec


def poisson_cdf(i, lam):
    return sum(math.exp(-lam) * lam**c / math.factorial(c) for c in range(i + 1))


@pytest.mark.parametrize(("k", "fraction", "alpha"), [
    (5, 0.01, 0.01), (5, 0.1, 0.01), (10, 0.3, 0.05), (3, 0.5, 0.2), (20, 0.05, 0.001),
    (2, 1.0, 0.01), (50, 0.9, 0.01)])
def test_derived_k_by_hand(k, fraction, alpha):
    lam = fraction * k
    i = next(i for i in range(10_000) if poisson_cdf(i, lam) >= 1 - alpha)
    assert derived_k(k, fraction, alpha) == min(k, i + 2)
    p0 = math.exp(-lam)
    c = next(c for c in range(1, 10_000)
             if (poisson_cdf(c, lam) - p0) / (1 - p0) >= 1 - alpha)
    assert derived_k(k, fraction, alpha, "zero-truncated-poisson") == min(k, c + 1)


def test_km5_at_one_percent_is_three():
    # ARX's case km5: population 100 x the rows, significance 0.01
    model = KMap(5, population=3_016_200)
    model.validate(30_162, {})
    assert model.derived() == 3
    sizes = Classes(np.array([1, 2, 3, 40]), {}, {})
    assert model.holds(sizes).tolist() == [False, False, True, True]
    assert model.figure(sizes) == 1.0


def test_edge_cases():
    model = KMap(5, sampling_fraction=1.0)  # the sample is the population: k-anonymity
    model.validate(3, {})
    assert model.derived() == 3  # capped at the table's size
    assert model.holds(Classes(np.array([3]), {}, {})).all()


@st.composite
def kmap_cases(draw):
    t = draw(tables(max_records=30))
    n = len(t.records)
    models = [KMap(draw(st.integers(2, 8)), draw(st.sampled_from(
        ["poisson", "zero-truncated-poisson"])), population=n * draw(st.sampled_from(
            [1, 2, 10, 100])))]
    if draw(st.booleans()):
        models.append(KAnonymity(draw(st.integers(1, min(3, n)))))
    return t, models, draw(st.sampled_from([0.0, 0.1, 0.3])), draw(st.sampled_from(
        ["loss", "arx-loss"])), None, None


@settings(max_examples=80, deadline=None)
@given(kmap_cases())
def test_optimal_agrees_with_exhaustive(case):
    agree(*case)


def test_the_checker_and_mondrian():
    flat = Hierarchy.from_rows([["x", "*"]])
    release = pd.DataFrame({"age": ["20-29"] * 3 + ["30-39"] * 2})
    spec = Spec(quasi_identifiers={"age": flat}, models=[KMap(5, population=500)])
    report = check(release, spec)  # f = 1%: classes of 3 needed, the class of 2 fails
    assert not report.passed and report.models[0].violating_records == 2
    h = Hierarchy.from_rows([[str(v), "*"] for v in range(8)], kind="numeric",
                            numbers=list(range(8)))
    ft = FrequencyTable.from_table(pd.DataFrame({"x": [str(v) for v in range(8)]}), {"x": h})
    p = mondrian(ft, [KMap(5, population=800)])  # supported: classes of 3 or more
    assert min(p.sizes(ft)) >= 3


@pytest.mark.parametrize(("table", "message"), [
    ({"model": "k-map", "k": 5}, "population size or the sampling fraction"),
    ({"model": "k-map", "k": 0, "population": 10}, "k must be a whole number"),
    ({"model": "k-map", "k": 5, "population": 10, "estimator": "exact"}, "unknown estimator"),
    ({"model": "k-map", "k": 5, "sampling_fraction": 0}, r"sampling_fraction must be in"),
    ({"model": "k-map", "k": 5, "population": 10, "significance": 1}, "significance must"),
])
def test_bad_parameters_are_named_with_the_fix(table, message):
    with pytest.raises(BlendinError, match=message) as info:
        model_from_toml(table)
    assert info.value.fix


def test_toml_round_trip():
    table = {"model": "k-map", "k": 5, "estimator": "poisson", "population": 3016200,
             "significance": 0.01}
    assert model_from_toml(table).to_dict() == table
