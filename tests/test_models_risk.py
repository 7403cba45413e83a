"""Risk thresholds (average risk, sample uniqueness): definitions by hand, the least
suppression by brute force, the search against exhaustive search, the checker, errors."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_search import agree
from test_search_tables import tables

from blendin.check import check
from blendin.errors import BlendinError
from blendin.frequency import Classes
from blendin.hierarchy.core import Hierarchy
from blendin.lattice import Checker
from blendin.models import AverageRisk, KAnonymity, SampleUniqueness, model_from_toml
from blendin.plan import plan_node
from blendin.search import find
from blendin.search.mondrian import mondrian
from blendin.spec import Spec


def classes(*sizes: int) -> Classes:
    return Classes(np.array(sizes, dtype=np.int64), {}, {})


# ---- definitions, by hand ----------------------------------------------------------------

def test_average_risk_by_hand():
    # 3 classes over 10 records: mean risk (1 + 4 * 1/4 + 5 * 1/5) / 10 = 3 / 10
    assert AverageRisk(0.3).figure(classes(1, 4, 5)) == pytest.approx(0.3)
    assert AverageRisk(0.3).holds(classes(1, 4, 5)).all()
    # at 0.25: the unique goes (2 classes / 9 records = 0.222)
    assert AverageRisk(0.25).holds(classes(4, 1, 5)).tolist() == [True, False, True]
    # at 0.2: 2 / 9 is still too high, the class of 4 goes too: 1 / 5
    assert AverageRisk(0.2).holds(classes(4, 1, 5)).tolist() == [False, False, True]


def test_average_risk_edge_cases():
    assert AverageRisk(0.1).figure(classes(10)) == pytest.approx(0.1)  # a single class
    assert AverageRisk(0.1).holds(classes(10)).tolist() == [True]
    assert AverageRisk(0.05).holds(classes(10)).tolist() == [False]  # all must go
    assert AverageRisk(1.0).holds(classes(1, 1, 1)).all()  # all unique, threshold 1
    assert AverageRisk(0.5).figure(classes(1, 1, 1)) == 1.0
    assert not AverageRisk(0.5).holds(classes(1, 1, 1)).any()
    assert np.isnan(AverageRisk(0.5).figure(classes()))  # an empty release
    assert AverageRisk(0.5).holds(classes()).tolist() == []


def test_average_risk_with_highest_and_records_at_risk():
    # highest 0.2: classes under 5 records are at risk; 3 + 1 of 24 records = 16.7%
    model = AverageRisk(0.5, highest=0.2, records_at_risk=0.1)
    assert model.smallest_safe == 5
    assert model.at_risk(classes(3, 1, 20)) == pytest.approx(4 / 24)
    # mean risk 3 / 24 is fine, but 16.7% > 10% at risk: the unique goes (3 / 23 = 13%),
    # then the class of 3 (0%)
    assert model.holds(classes(3, 1, 20)).tolist() == [False, False, True]
    assert AverageRisk(0.5, highest=0.2, records_at_risk=0.2).holds(classes(3, 1, 20)).all()
    # highest 1/3 exactly: a class of 3 is not at risk (ARX's effective threshold)
    assert AverageRisk(0.5, highest=1 / 3, records_at_risk=0.0).holds(classes(3, 3)).all()


def test_sample_uniqueness_by_hand():
    assert SampleUniqueness(0.5).figure(classes(1, 1, 8)) == pytest.approx(0.2)
    assert SampleUniqueness(0.2).holds(classes(1, 1, 8)).all()
    assert SampleUniqueness(0.12).holds(classes(1, 8, 1)).tolist() == [False, True, True]
    assert SampleUniqueness(0.05).holds(classes(1, 8, 1)).tolist() == [False, True, False]
    # all unique: only the empty release holds under 100%
    assert not SampleUniqueness(0.5).holds(classes(1, 1)).any()
    assert SampleUniqueness(1.0).holds(classes(1, 1)).all()
    assert SampleUniqueness(0.01).figure(classes(7)) == 0.0  # a single class


# ---- the least suppression, against every subset -----------------------------------------

def least_suppression(model, sizes) -> int:
    """Fewest records whose suppression (whole classes) makes the release meet the model."""
    best = sum(sizes)
    for r in range(len(sizes) + 1):
        for gone in itertools.combinations(range(len(sizes)), r):
            kept = [s for i, s in enumerate(sizes) if i not in gone]
            records = sum(kept)
            if records == 0:
                ok = True
            elif isinstance(model, AverageRisk):
                ok = len(kept) / records <= model.threshold + 1e-9
            else:
                ok = sum(1 for s in kept if s == 1) / records <= model.threshold + 1e-9
            if ok:
                best = min(best, sum(sizes) - records)
    return best


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(1, 8), min_size=1, max_size=8),
       threshold=st.sampled_from([0.05, 0.1, 0.2, 0.25, 1 / 3, 0.5, 1.0]),
       kind=st.sampled_from([AverageRisk, SampleUniqueness]))
def test_the_suppression_is_the_least_that_meets_the_bound(sizes, threshold, kind):
    model = kind(threshold)
    keep = model.holds(classes(*sizes))
    assert int(np.array(sizes)[~keep].sum()) == least_suppression(model, sizes)
    kept = classes(*np.array(sizes)[keep])
    assert not len(kept) or model.figure(kept) <= threshold + 1e-9


# ---- the search: node checks against a brute force, optimal against exhaustive -----------

def brute_acceptable(t, levels, k, model, limit) -> tuple[bool, int]:
    """Group the records by label, drop classes under k, then the least release suppression."""
    sizes = Counter(tuple(t.label(i, r[i], lv) for i, lv in enumerate(levels))
                    for r in t.records)
    small = [s for s in sizes.values() if s < k]
    kept = [s for s in sizes.values() if s >= k]
    if len(kept) > 9:  # the subsets get many: the sorted order is exact (see the module)
        keep = model.holds(classes(*kept))
        gone = sum(small) + int(np.array(kept)[~keep].sum())
    else:
        gone = sum(small) + least_suppression(model, kept)
    return gone <= limit, gone


@settings(max_examples=60, deadline=None)
@given(t=tables(max_records=25), k=st.integers(1, 3),
       threshold=st.sampled_from([0.1, 0.25, 0.4, 0.6]),
       kind=st.sampled_from([AverageRisk, SampleUniqueness]),
       max_sup=st.sampled_from([0.0, 0.1, 0.3]))
def test_every_node_check_matches_a_brute_force(t, k, threshold, kind, max_sup):
    ft = t.frequency_table()
    k = min(k, len(t.records))
    checker = Checker(ft, [kind(threshold), KAnonymity(k)], max_sup)
    for node in checker.lattice.nodes():
        got = checker.check(node)
        ok, gone = brute_acceptable(t, [int(v) for v in node], k, kind(threshold),
                                    checker.limit)
        assert got.acceptable == ok
        if ok:
            assert got.n_suppressed == gone
            # the release suppresses what the node check did
            assert plan_node(ft, node, checker.models).suppressed_records == gone


@st.composite
def risk_cases(draw):
    t = draw(tables(max_records=30))
    models = [draw(st.sampled_from([
        AverageRisk(draw(st.sampled_from([0.1, 0.2, 0.34, 0.5]))),
        SampleUniqueness(draw(st.sampled_from([0.0001, 0.05, 0.2]))),
        AverageRisk(0.5, highest=0.34, records_at_risk=draw(st.sampled_from([0.0, 0.1]))),
    ]))]
    if draw(st.booleans()):
        models.append(KAnonymity(draw(st.integers(1, min(3, len(t.records))))))
    max_sup = draw(st.sampled_from([0.0, 0.0, 0.1, 0.25, 0.5]))
    metric = draw(st.sampled_from(["loss", "arx-loss", "discernibility", "gcp", "aecs"]))
    return t, models, max_sup, metric, None, None


@settings(max_examples=200, deadline=None)
@given(risk_cases())
def test_optimal_agrees_with_exhaustive(case):
    agree(*case)


# ---- the independent checker, parameters, Mondrian -----------------------------------------

FLAT = Hierarchy.from_rows([["x", "*"]])


def test_the_checker_recomputes_the_bound_from_released_values():
    release = pd.DataFrame({"age": ["20-29"] * 4 + ["30-39"] * 5 + ["40-49", "*"],
                            "sex": ["m"] * 4 + ["f"] * 5 + ["m", "*"]})
    spec = Spec(quasi_identifiers={"age": FLAT, "sex": FLAT},
                models=[AverageRisk(0.3), SampleUniqueness(0.05)])
    report = check(release, spec)
    # 3 classes over 10 released records (the * row is suppressed, not a class)
    risk, uniques = report.models
    assert risk.passed and risk.figure == pytest.approx(0.3)
    assert not uniques.passed and uniques.figure == pytest.approx(0.1)
    assert uniques.violating_classes == 1 and uniques.violating_records == 1
    assert not report.passed
    assert report.problems[0].values == {"age": "40-49", "sex": "m"}


def test_an_anonymized_release_passes_the_checker():
    from blendin import anonymize

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"age": rng.integers(20, 60, 300).astype(str),
                       "sex": rng.choice(["m", "f"], 300)})
    from blendin import flat, intervals
    spec = Spec(quasi_identifiers={"age": intervals(5, 10, 20), "sex": flat()},
                models=[AverageRisk(0.05), SampleUniqueness(0.01)], max_suppression=0.02)
    result = anonymize(df, spec)
    assert result.check.passed
    released = check(result.data, spec)
    assert released.models[0].figure <= 0.05


@pytest.mark.parametrize(("table", "message"), [
    ({"model": "average-risk", "threshold": 0}, r"threshold must be in \(0, 1\]"),
    ({"model": "average-risk", "threshold": 1.5}, r"threshold must be in \(0, 1\]"),
    ({"model": "average-risk", "threshold": "5%"}, "threshold must be a number"),
    ({"model": "average-risk", "threshold": True}, "threshold must be a number"),
    ({"model": "average-risk", "threshold": 0.1, "highest": 0}, "highest must be in"),
    ({"model": "average-risk", "threshold": 0.1, "records-at-risk": 0.1},
     "records-at-risk is given without highest"),
    ({"model": "average-risk", "threshold": 0.1, "highest": 0.2, "records-at-risk": -1},
     r"records-at-risk must be in \[0, 1\]"),
    ({"model": "average-risk"}, "missing threshold"),
    ({"model": "sample-uniqueness", "threshold": 2}, r"threshold must be in \(0, 1\]"),
    ({"model": "sample-uniqueness", "threshold": 0.1, "k": 2}, "unknown key"),
])
def test_bad_parameters_are_named_with_the_fix(table, message):
    with pytest.raises(BlendinError, match=message) as info:
        model_from_toml(table)
    assert info.value.fix


def test_toml_round_trip():
    for table in [{"model": "average-risk", "threshold": 0.05},
                  {"model": "average-risk", "threshold": 0.05, "highest": 0.2,
                   "records-at-risk": 0.01},
                  {"model": "sample-uniqueness", "threshold": 0.01}]:
        assert model_from_toml(table).to_dict() == table


def test_mondrian_says_it_cannot_enforce_a_release_bound():
    t = pd.DataFrame({"x": ["1", "2", "3", "4"]})
    from blendin.frequency import FrequencyTable
    h = Hierarchy.from_rows([[v, "*"] for v in "1234"], kind="numeric", numbers=[1, 2, 3, 4])
    ft = FrequencyTable.from_table(t, {"x": h})
    with pytest.raises(BlendinError, match="mondrian cannot enforce average-risk") as info:
        mondrian(ft, [AverageRisk(0.5)])
    assert "optimal" in info.value.fix
    # the full-domain search can: 1 class of 4 records meets 0.5
    assert find(ft, [AverageRisk(0.5)]).levels == (1,)


def test_the_report_speaks_to_the_risk_bounds():
    from blendin import anonymize, flat, intervals
    from blendin.report.html import report_context

    rng = np.random.default_rng(5)
    df = pd.DataFrame({"age": rng.integers(20, 60, 400).astype(str),
                       "sex": rng.choice(["m", "f"], 400)})
    spec = Spec(quasi_identifiers={"age": intervals(5, 10, 20), "sex": flat()},
                models=[KAnonymity(2), AverageRisk(0.05), SampleUniqueness(0.01)],
                max_suppression=0.02)
    result = anonymize(df, spec)
    lines = report_context(result)["risk_models"]
    released = check(result.data, spec)
    # the checker's own figures on the release, against the bounds
    assert lines == [f"average risk {100 * released.models[1].figure:.1f}% ≤ 5.0%",
                     f"share of sample uniques {100 * released.models[2].figure:.1f}% ≤ 1.0%"]


@settings(max_examples=40, deadline=None)
@given(risk_cases(), st.sampled_from(["binary", "datafly"]))
def test_the_other_full_domain_algorithms_return_acceptable_nodes(case, algorithm):
    t, models, max_sup, metric, _, _ = case
    ft = t.frequency_table()
    try:
        got = find(ft, models, max_suppression=max_sup, metric=metric, algorithm=algorithm)
    except BlendinError as e:
        assert "no generalization" in str(e)
        return
    assert Checker(ft, models, max_sup).check(got.levels).acceptable
