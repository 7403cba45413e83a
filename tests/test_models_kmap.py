"""k-map with an estimated population: the derived class size by hand, the search, errors."""

from __future__ import annotations

import math
import tempfile

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_search import agree, optimal_as_exhaustive
from test_search_tables import tables

import blendin as bl
from blendin.anonymize import prepare
from blendin.check import check
from blendin.errors import BlendinError
from blendin.frequency import Classes, FrequencyTable
from blendin.hierarchy.core import Hierarchy
from blendin.lattice import Checker
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


# -- k-map against a population table -------------------------------------------------------

AGE = Hierarchy.from_rows([[str(a), f"{a // 2 * 2}-{a // 2 * 2 + 1}", "*"] for a in range(4)])


def write_population(path, ages):
    pd.DataFrame({"age": [str(a) for a in ages], "other": "x"}).to_csv(path, index=False)
    return str(path)


def test_people_counted_by_hand(tmp_path):
    # population: ages 0 x3, 1 x1, 2 x5, 3 x2; the sample: one record of each age
    people = write_population(tmp_path / "pop.csv", [0] * 3 + [1] + [2] * 5 + [3] * 2)
    sample = pd.DataFrame({"age": ["0", "1", "2", "3"]})
    model = KMap(3, population=people)
    assert model.needs_population and model.monotone and model.monotone_with_suppression
    spec = Spec(quasi_identifiers={"age": AGE}, models=[model])
    # level 0: 3, 1, 5, 2 people; level 1: 0-1 has 4, 2-3 has 7 -> both >= 3
    result = bl.anonymize(sample, spec)
    assert result.levels == {"age": 1} and result.check.models[0].figure == 4
    spec = Spec(quasi_identifiers={"age": AGE}, models=[KMap(3, population=people)],
                max_suppression=0.5)  # ages 1 and 3 (1 and 2 people) suppressed at level 0
    plan = prepare(sample, spec)  # (its own models, the population bound to them)
    node = Checker(plan.ft, plan.spec.models, 0.5).check((0,))
    assert node.acceptable and node.n_suppressed == 2
    spec = Spec(quasi_identifiers={"age": AGE}, models=[KMap(12, population=people)])
    with pytest.raises(BlendinError, match="no generalization"):  # 11 people in all
        bl.anonymize(sample, spec)


def test_table_edge_cases():
    model = KMap(2, population="p.csv")
    single = Classes(np.array([4]), {}, {}, population=np.array([9]))
    assert model.holds(single).tolist() == [True] and model.figure(single) == 9
    unique = Classes(np.ones(3, int), {}, {}, population=np.array([1, 2, 0]))
    assert model.holds(unique).tolist() == [False, True, False]
    empty = Classes(np.zeros(0, int), {}, {}, population=np.zeros(0, int))
    assert model.holds(empty).tolist() == [] and np.isnan(model.figure(empty))


def test_checker_counts_the_population_table(tmp_path):
    people = write_population(tmp_path / "pop.csv", [0] * 3 + [1] + [2] * 5 + [3] * 2)
    spec = Spec(quasi_identifiers={"age": AGE}, models=[KMap(3, population=people)])
    release = pd.DataFrame({"age": ["0-1", "0-1", "2-3"]})
    assert check(release, spec).passed
    report = check(pd.DataFrame({"age": ["0", "1", "2-3"]}), spec)  # age 1: one person
    assert not report.passed and report.models[0].violating_records == 1
    assert report.models[0].figure == 1


@st.composite
def table_cases(draw):
    t = draw(tables(max_records=25))
    extra = draw(st.lists(st.integers(0, 10**6), min_size=1, max_size=25))
    rows = {name: [r[0] for r in t.rows[name]] for name in t.names}
    population = [tuple(rows[name][(seed >> (3 * i)) % len(rows[name])]
                        for i, name in enumerate(t.names)) for seed in extra]
    if draw(st.booleans()):  # the sample is part of the population
        population += t.records
    models = [KMap(draw(st.integers(1, 6)), population="people.csv")]
    if draw(st.booleans()):
        models.append(KAnonymity(draw(st.integers(1, min(3, len(t.records))))))
    return (t, population, models, draw(st.sampled_from([0.0, 0.1, 0.3])),
            draw(st.sampled_from(["loss", "arx-loss"])))


@settings(max_examples=80, deadline=None)
@given(table_cases())
def test_optimal_agrees_with_exhaustive_against_a_table(case):
    t, population, models, max_sup, metric = case
    with tempfile.TemporaryDirectory() as folder:
        pd.DataFrame(population, columns=t.names).to_csv(f"{folder}/people.csv",
                                                         index=False)
        spec = Spec(quasi_identifiers=dict(t.hierarchies), sensitive=["s"], models=models,
                    max_suppression=max_sup, base_dir=folder)
        plan = prepare(t.frame(), spec)

    optimal_as_exhaustive(plan.ft, plan.spec.models, max_sup, metric)


def test_table_errors_name_the_fix(tmp_path):
    with pytest.raises(BlendinError, match="do not apply") as info:
        KMap(5, population="census.csv", estimator="zero-truncated-poisson")
    assert info.value.fix
    with pytest.raises(BlendinError, match="do not apply"):
        model_from_toml({"model": "k-map", "k": 5, "population": "c.csv",
                         "sampling_fraction": 0.1})
    sample = pd.DataFrame({"age": ["0", "1"]})
    spec = Spec(quasi_identifiers={"age": AGE}, models=[KMap(2, population="nowhere.csv")],
                base_dir=tmp_path)
    with pytest.raises(BlendinError, match="does not exist"):
        bl.anonymize(sample, spec)
    pd.DataFrame({"years": [1, 2]}).to_csv(tmp_path / "bad.csv", index=False)
    spec = Spec(quasi_identifiers={"age": AGE}, models=[KMap(2, population="bad.csv")],
                base_dir=tmp_path)
    with pytest.raises(BlendinError, match=r"has no column\(s\) 'age'") as info:
        bl.anonymize(sample, spec)
    assert "years" in info.value.fix
    people = write_population(tmp_path / "pop.csv", [0, 1, 1])
    spec = Spec(quasi_identifiers={"age": AGE}, models=[KMap(1, population=people)])
    with pytest.raises(BlendinError, match="mondrian cannot enforce k-map"):
        bl.anonymize(sample, spec, algorithm="mondrian")


def test_table_toml_round_trip():
    table = {"model": "k-map", "k": 5, "population": "census.csv"}
    assert model_from_toml(table).to_dict() == table
