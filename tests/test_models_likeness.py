"""β-likeness and δ-disclosure privacy: definitions by hand, a plain-Python recomputation,
the search against exhaustive search, the checker, errors."""

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
from blendin.frequency import Classes, SensitiveDomain
from blendin.hierarchy.core import Hierarchy
from blendin.models import BetaLikeness, DeltaDisclosure, KAnonymity, model_from_toml
from blendin.spec import Spec


def table(overall, *rows) -> Classes:
    labels = np.array([f"v{i}" for i in range(len(overall))], dtype=object)
    hist = np.array(rows, dtype=np.int64)
    return Classes(hist.sum(axis=1), {"s": hist},
                   {"s": SensitiveDomain("s", labels, np.array(overall))})


def test_beta_likeness_by_hand():
    # q = (0.5, 0.3, 0.2); a class (0.2, 0.2, 0.6): v2 gains (0.6 - 0.2) / 0.2 = 2
    classes = table([50, 30, 20], [1, 1, 3])
    assert BetaLikeness("s", 2, "basic").holds(classes).tolist() == [True]
    assert BetaLikeness("s", 1.9, "basic").holds(classes).tolist() == [False]
    # enhanced: the bound of v2 is min(beta, -ln 0.2 = 1.609): 2 > 1.609 fails at any beta
    assert BetaLikeness("s", 5).holds(classes).tolist() == [False]
    assert BetaLikeness("s", 5).figure(classes) == pytest.approx(2.0)
    # a class like the table gains nothing; a single class is the table itself
    assert BetaLikeness("s", 0.01).holds(table([50, 30, 20], [5, 3, 2])).all()
    assert BetaLikeness("s", 0.01).figure(table([5, 3, 2], [5, 3, 2])) == pytest.approx(0)


def test_delta_disclosure_by_hand():
    # q = (0.5, 0.25, 0.25); a class (0.25, 0.75, 0): |log2(0.5)| = 1, log2(3) = 1.585
    classes = table([2, 1, 1], [1, 3, 0])
    assert DeltaDisclosure("s", 1.6).holds(classes).tolist() == [True]
    assert DeltaDisclosure("s", math.log2(3)).holds(classes).tolist() == [False]  # strict
    assert DeltaDisclosure("s", 2).figure(classes) == pytest.approx(math.log2(3))
    # the absent value is not checked; a class equal to the table has 0
    assert DeltaDisclosure("s", 0.001).holds(table([2, 1, 1], [4, 2, 2])).all()


def brute(model, hist, overall) -> bool:
    q = [c / sum(overall) for c in overall]
    n = sum(hist)
    for count, qs in zip(hist, q):
        if not count:
            continue
        p = count / n
        if isinstance(model, DeltaDisclosure):
            if abs(math.log2(p / qs)) >= model.delta:
                return False
        else:
            bound = model.beta if model.variant == "basic" else min(model.beta, -math.log(qs))
            if (p - qs) / qs > bound + 1e-9:
                return False
    return True


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.lists(st.integers(0, 6), min_size=3, max_size=3).filter(any),
                     min_size=1, max_size=6),
       model=st.sampled_from([BetaLikeness("s", 0.5), BetaLikeness("s", 2, "basic"),
                              DeltaDisclosure("s", 0.7), DeltaDisclosure("s", 2)]))
def test_every_class_matches_the_definition(rows, model):
    overall = np.array(rows).sum(axis=0)
    if (overall == 0).any():
        overall = overall + 1  # values of the table that no class holds
    classes = table(overall.tolist(), *rows)
    assert model.holds(classes).tolist() == [brute(model, r, overall.tolist()) for r in rows]


@st.composite
def likeness_cases(draw):
    t = draw(tables(max_records=30))
    models = [draw(st.sampled_from([BetaLikeness("s", 1.0), BetaLikeness("s", 0.5, "basic"),
                                    DeltaDisclosure("s", 1.0), DeltaDisclosure("s", 2.0)]))]
    if draw(st.booleans()):
        models.append(KAnonymity(draw(st.integers(1, min(3, len(t.records))))))
    return t, models, draw(st.sampled_from([0.0, 0.1, 0.3])), draw(st.sampled_from(
        ["loss", "arx-loss", "discernibility"])), None, None


@settings(max_examples=150, deadline=None)
@given(likeness_cases())
def test_optimal_agrees_with_exhaustive(case):
    agree(*case)


def test_the_checker_recomputes_both():
    flat = Hierarchy.from_rows([["x", "*"]])
    release = pd.DataFrame({"age": ["20-29"] * 4 + ["30-39"] * 4,
                            "dx": ["flu"] * 4 + ["flu", "flu", "hiv", "hiv"]})
    spec = Spec(quasi_identifiers={"age": flat}, sensitive=["dx"],
                models=[BetaLikeness("dx", 1.0, "basic"), DeltaDisclosure("dx", 1.0)])
    report = check(release, spec)
    beta, delta = report.models
    assert beta.passed and beta.figure == pytest.approx(1.0)  # hiv: (0.5 - 0.25) / 0.25
    assert not delta.passed and delta.figure == pytest.approx(1.0)  # log2(2) = 1, not < 1


@pytest.mark.parametrize(("table_", "message"), [
    ({"model": "beta-likeness", "attribute": "s", "beta": 0}, "beta must be > 0"),
    ({"model": "beta-likeness", "attribute": "s", "beta": 1, "variant": "strong"},
     "unknown variant"),
    ({"model": "beta-likeness", "beta": 1}, "missing attribute"),
    ({"model": "delta-disclosure", "attribute": "s", "delta": -1}, "delta must be > 0"),
    ({"model": "delta-disclosure", "attribute": "s", "delta": "2"}, "delta must be a number"),
])
def test_bad_parameters_are_named_with_the_fix(table_, message):
    with pytest.raises(BlendinError, match=message) as info:
        model_from_toml(table_)
    assert info.value.fix


def test_toml_round_trip():
    for t in [{"model": "beta-likeness", "attribute": "s", "beta": 3.0, "variant": "enhanced"},
              {"model": "delta-disclosure", "attribute": "s", "delta": 2.0}]:
        assert model_from_toml(t).to_dict() == t
