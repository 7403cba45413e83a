"""population-uniqueness: the estimate by hand, the estimators of blendin.risk, the least
suppression, the search against exhaustive search, the checker, errors."""

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
from blendin.estimators import population_uniqueness
from blendin.frequency import Classes
from blendin.hierarchy.core import Hierarchy
from blendin.models import KAnonymity, PopulationUniqueness, model_from_toml
from blendin.spec import Spec


def classes(*sizes: int) -> Classes:
    return Classes(np.array(sizes, dtype=np.int64), {}, {})


def model(*args, n: int, **kwargs) -> PopulationUniqueness:
    m = PopulationUniqueness(*args, **kwargs)
    m.validate(n, {})
    return m


def test_zayatz_by_hand():
    # classes of 1, 2 and 3 of n = 6 records from N = 1000 people: a unique of the sample
    # is a population unique with P(j=1) / sum_j P(j), P(j) = j C(N-j, n-1) / C(N, n)
    big_n, n = 1000, 6

    def p(j):
        return j * math.comb(big_n - j, n - 1) / math.comb(big_n, n)

    uniques = 1 * p(1) / (p(1) + p(2) + p(3)) / (n / big_n)
    m = model(0.05, "zayatz", population=big_n, n=n)
    assert m.figure(classes(1, 2, 3)) == pytest.approx(uniques / big_n, rel=1e-9)
    assert m.holds(classes(1, 2, 3)).all()  # 2.8% <= 5%
    assert not model(0.02, "zayatz", population=big_n, n=n).holds(classes(1, 2, 3)).all()


@pytest.mark.parametrize("sizes", [[1, 1, 2, 5], [1, 1, 1, 2, 2, 3, 8, 9], [1, 3, 3, 4, 4, 4]])
@pytest.mark.parametrize("population", [60, 2000])
def test_the_estimators_are_those_of_the_risk_report(sizes, population):
    n = sum(sizes)
    report = population_uniqueness(np.array(sizes), population)
    for name in ("zayatz", "pitman", "snb"):
        got = model(0.5, name, population=population, n=n).figure(classes(*sizes))
        want = getattr(report, name) / population
        assert got == pytest.approx(want, rel=1e-12, nan_ok=True) or math.isnan(want)
    # Dankar: Pitman up to a sampling fraction of 10% (here 2000), else min(Zayatz, SNB)
    dankar = model(0.5, population=population, n=n).figure(classes(*sizes))
    if n / population <= 0.1:
        assert dankar == pytest.approx(report.pitman / population, nan_ok=True)
    else:
        assert dankar == pytest.approx(report.dankar / population)


def test_edge_cases():
    m = model(0.01, population=100, n=10)
    assert m.figure(classes(10)) == 0.0  # a single class: no sample unique
    assert m.holds(classes(10)).all()
    assert math.isnan(m.figure(classes(1, 1, 1)))  # all unique: Pitman has no solution
    assert not m.holds(classes(1, 1, 1)).any()  # so the bound cannot be shown: all go
    assert math.isnan(m.figure(classes()))  # an empty release
    # a sampling fraction stands for the population it implies
    by_fraction = model(0.01, "zayatz", sampling_fraction=0.1, n=10)
    assert by_fraction.population_size() == 100
    assert by_fraction.figure(classes(1, 2, 7)) == model(
        0.01, "zayatz", population=100, n=10).figure(classes(1, 2, 7))


def test_suppression_with_a_budget():
    # Zayatz, N = 200: with the unique gone nothing is estimated unique
    m = model(0.001, "zayatz", population=200, n=20)
    assert m.holds(classes(1, 4, 15)).tolist() == [False, True, True]
    assert m.holds(classes(1, 4, 15), budget=1).tolist() == [False, True, True]
    assert not m.holds(classes(1, 4, 15), budget=0).any()  # over the limit: all marked


@st.composite
def pu_cases(draw):
    t = draw(tables(max_records=30))
    n = len(t.records)
    estimator = draw(st.sampled_from(["dankar", "zayatz", "pitman", "snb"]))
    population = n * draw(st.sampled_from([1, 3, 20, 100]))
    models = [PopulationUniqueness(draw(st.sampled_from([0.01, 0.05, 0.2])), estimator,
                                   population=population)]
    if draw(st.booleans()):
        models.append(KAnonymity(draw(st.integers(1, min(3, n)))))
    max_sup = draw(st.sampled_from([0.0, 0.1, 0.3]))
    metric = draw(st.sampled_from(["loss", "arx-loss", "discernibility"]))
    return t, models, max_sup, metric, None, None


@settings(max_examples=80, deadline=None)
@given(pu_cases())
def test_optimal_agrees_with_exhaustive(case):
    agree(*case)


def test_the_checker_recomputes_the_estimate():
    flat = Hierarchy.from_rows([["x", "*"]])
    release = pd.DataFrame({"age": ["20-29"] * 1 + ["30-39"] * 2 + ["40-49"] * 3 + ["*"] * 4})
    spec = Spec(quasi_identifiers={"age": flat},
                models=[PopulationUniqueness(0.05, "zayatz", sampling_fraction=0.01)])
    report = check(release, spec)
    # 6 released records of 10 (4 suppressed); the population is 10 / 0.01 = 1000
    want = model(0.05, "zayatz", population=1000, n=10).figure(classes(1, 2, 3))
    assert report.models[0].figure == pytest.approx(want)
    assert report.passed


@pytest.mark.parametrize(("table", "message"), [
    ({"model": "population-uniqueness", "threshold": 0.01}, "population size or the sampling"),
    ({"model": "population-uniqueness", "threshold": 0.01, "population": 10,
      "sampling_fraction": 0.1}, "one of them"),
    ({"model": "population-uniqueness", "threshold": 0, "population": 10}, "threshold must"),
    ({"model": "population-uniqueness", "threshold": 0.1, "population": 10,
      "estimator": "chao"}, "unknown estimator 'chao'"),
    ({"model": "population-uniqueness", "threshold": 0.1, "sampling_fraction": 2},
     r"sampling_fraction must be in \(0, 1\]"),
    ({"model": "population-uniqueness", "threshold": 0.1, "population": 0},
     "population must be >= 1"),
])
def test_bad_parameters_are_named_with_the_fix(table, message):
    with pytest.raises(BlendinError, match=message) as info:
        model_from_toml(table)
    assert info.value.fix


def test_a_population_smaller_than_the_table_is_an_error():
    with pytest.raises(BlendinError, match=r"population \(5\) is smaller than the table"):
        PopulationUniqueness(0.1, population=5).validate(10, {})


def test_toml_round_trip():
    for table in [{"model": "population-uniqueness", "threshold": 0.01, "estimator": "dankar",
                   "population": 3016200},
                  {"model": "population-uniqueness", "threshold": 0.01, "estimator": "snb",
                   "sampling_fraction": 0.01}]:
        assert model_from_toml(table).to_dict() == table


@settings(max_examples=40, deadline=None)
@given(t=tables(max_records=25), max_sup=st.sampled_from([0.0, 0.1, 0.3]))
def test_the_release_suppresses_what_the_node_check_did(t, max_sup):
    from blendin.lattice import Checker
    from blendin.plan import plan_node

    ft = t.frequency_table()
    models = [PopulationUniqueness(0.05, "zayatz", population=3 * len(t.records)),
              KAnonymity(min(2, len(t.records)))]
    checker = Checker(ft, models, max_sup)
    for node in checker.lattice.nodes():
        got = checker.check(node)
        if got.acceptable:
            assert plan_node(ft, node, models).suppressed_records == got.n_suppressed
