"""Search algorithms: optimal agrees with exhaustive, binary finds the k-minimal nodes,
datafly climbs greedily; a worked example with answers known by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_lattice import brute_check
from test_search_tables import tables

import blendin.codes as codes_module
import blendin.lattice as lattice_module
from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.hierarchy.core import Hierarchy
from blendin.lattice import Checker
from blendin.metrics import METRICS, utility_of_node
from blendin.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)
from blendin.search import POLICIES, find
from blendin.search.common import Context


@st.composite
def cases(draw):
    """A random table, models, suppression limit, metric, policy and weights."""
    t = draw(tables(max_records=30))
    n = len(t.records)
    models = [KAnonymity(draw(st.integers(1, min(5, n))))]
    secrets = len(set(t.secret))
    extra = draw(st.sampled_from(["none", "none", "distinct", "entropy", "recursive",
                                  "equal", "ordered"]))
    if extra == "distinct" and secrets >= 2:
        models.append(DistinctLDiversity("s", 2))
    elif extra == "entropy" and secrets >= 2:
        models.append(EntropyLDiversity("s", 1.5))
    elif extra == "recursive" and secrets >= 2:
        models.append(RecursiveCLDiversity("s", 2.0, 2))
    elif extra in ("equal", "ordered"):
        models.append(TCloseness("s", draw(st.sampled_from([0.2, 0.4])), extra))
    max_sup = draw(st.sampled_from([0.0, 0.0, 0.1, 0.25, 0.5]))
    metric = draw(st.sampled_from(list(METRICS)))
    policy = draw(st.sampled_from([None, *POLICIES]))
    weights = draw(st.one_of(st.none(), st.fixed_dictionaries(
        {name: st.integers(1, 3) for name in t.names})))
    return t, models, max_sup, metric, policy, weights


def run(ft, models, max_sup, metric, policy, weights, algorithm):
    try:
        return find(ft, models, max_suppression=max_sup, metric=metric, policy=policy,
                    weights=weights, algorithm=algorithm)
    except BlendinError as e:
        assert "no generalization" in str(e)
        return None


@settings(max_examples=300, deadline=None)
@given(cases())
def test_optimal_agrees_with_exhaustive(case):
    agree(*case)


@pytest.fixture(params=["intermediate nodes", "roll-ups sorted"])
def checker_path(request, monkeypatch):
    """The checker's other ways to a node's classes: every source counting as large, so
    that it groups intermediate nodes (a step below the node, the meet of the nodes a layer
    of the sweep announces) wherever it may; or every roll-up grouped by a sort, as large
    ones whose keys come mostly in order are (classes in key order)."""
    if request.param == "intermediate nodes":
        monkeypatch.setattr(lattice_module, "_LADDER_MIN", 0)
        return
    monkeypatch.setattr(lattice_module, "_DENSE_FACTOR", 0)
    monkeypatch.setattr(lattice_module, "_DENSE_SLACK", 0)
    monkeypatch.setattr(codes_module, "SORTED_GROUPS_ROWS", 1)
    monkeypatch.setattr(codes_module, "RUN_SHARE", 0)


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cases())
def test_optimal_agrees_with_exhaustive_along_the_checkers_other_paths(checker_path, case):
    agree(*case)


@settings(max_examples=120, deadline=None)
@given(t=tables(max_records=30), k=st.integers(1, 4), close=st.sampled_from([0.1, 0.2, 0.3]),
       max_sup=st.sampled_from([0.1, 0.25, 0.5]), metric=st.sampled_from(list(METRICS)))
def test_optimal_agrees_with_exhaustive_t_closeness_with_suppression(t, k, close, max_sup,
                                                                     metric):
    """The case where pruning rests on the bound of records t-closeness makes go."""
    models = [KAnonymity(min(k, len(t.records))), TCloseness("s", close)]
    agree(t, models, max_sup, metric, None, None)


@settings(max_examples=150, deadline=None)
@given(t=st.one_of(tables(min_qis=1, max_qis=1, max_records=12), tables(max_records=1),
                   tables(max_records=6, max_height=2)),
       k=st.integers(1, 6), extra=st.sampled_from(["none", "distinct", "equal"]),
       max_sup=st.sampled_from([0.0, 0.5, 1.0]), metric=st.sampled_from(list(METRICS)),
       policy=st.sampled_from([None, *POLICIES]))
def test_optimal_agrees_with_exhaustive_on_small_tables(t, k, extra, max_sup, metric, policy):
    """A single QI, one record, ties everywhere (two levels, few records), all suppressed."""
    models = [KAnonymity(min(k, len(t.records)))]
    if extra == "distinct" and len(set(t.secret)) >= 2:
        models.append(DistinctLDiversity("s", 2))
    elif extra == "equal":
        models.append(TCloseness("s", 0.3))
    agree(t, models, max_sup, metric, policy, None)


def optimal_as_exhaustive(ft, models, max_sup, metric, policy=None, weights=None):
    """The optimal search's solution and its suppressed tuples, checked to be exhaustive
    search's (score, node, suppressed records), or ``None`` when neither finds one."""
    want = run(ft, models, max_sup, metric, policy, weights, "exhaustive")
    got = run(ft, models, max_sup, metric, policy, weights, "optimal")
    assert (got is None) == (want is None)
    if want is None:
        return None
    assert got.score == pytest.approx(want.score, rel=1e-9, abs=1e-12)
    assert got.levels == want.levels  # ties go to the same policy in both
    assert got.nodes_checked <= want.nodes_checked
    # the check the search hands on (the release is planned from it) is the chosen node's
    fresh = Checker(ft, models, max_sup).check(got.levels)
    assert got.check.levels == got.levels and got.check.acceptable
    assert (got.check.n_suppressed, got.check.n_classes) == (fresh.n_suppressed,
                                                             fresh.n_classes)
    suppressed = Checker(ft, models, max_sup).suppressed_tuples(got.levels)
    assert got.n_suppressed == int(ft.counts[suppressed].sum())
    return got, suppressed


def agree(t, models, max_sup, metric, policy, weights):
    ft = t.frequency_table()
    found = optimal_as_exhaustive(ft, models, max_sup, metric, policy, weights)
    if found is None:
        return
    got, suppressed = found
    # the solution's figures, recomputed independently from the suppressed tuples
    figures = utility_of_node(ft, got.levels, suppressed, weights=weights)
    for name, value in figures.items():
        assert got.utility[name] == pytest.approx(value, rel=1e-9, abs=1e-9)
    assert got.score == pytest.approx(figures[metric], rel=1e-9, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(cases())
def test_bounds_of_the_whole_lattice_are_the_bounds_of_each_node(case):
    t, models, max_sup, metric, policy, weights = case
    ctx = Context(t.frequency_table(), models, max_suppression=max_sup, metric=metric,
                  policy=policy, weights=weights, progress=None)
    want = ctx.lower_bounds(ctx.lattice.nodes())
    assert np.array_equal(ctx.lattice_bounds(), want)  # the same figures, bit for bit


@settings(max_examples=100, deadline=None)
@given(cases())
def test_binary_returns_the_k_minimal_nodes_of_lowest_height(case):
    lowest_minimal(*case)


@settings(max_examples=100, deadline=None)
@given(t=tables(max_records=30), k=st.integers(1, 4), close=st.sampled_from([0.1, 0.2, 0.3]),
       max_sup=st.sampled_from([0.1, 0.25, 0.5]))
def test_binary_with_t_closeness_and_suppression(t, k, close, max_sup):
    """Not monotone: heights are scanned upward, failing nodes proven by counting."""
    models = [KAnonymity(min(k, len(t.records))), TCloseness("s", close)]
    lowest_minimal(t, models, max_sup, "loss", None, None)


def lowest_minimal(t, models, max_sup, metric, policy, weights):
    ft = t.frequency_table()
    checker = Checker(ft, models, max_sup)
    acceptable = [tuple(int(v) for v in node) for node in checker.lattice.nodes()
                  if checker.check(node).acceptable]
    got = run(ft, models, max_sup, metric, policy, weights, "binary")
    if not acceptable:
        assert got is None
        return
    lowest = min(sum(node) for node in acceptable)
    assert set(got.minimal) == {node for node in acceptable if sum(node) == lowest}
    assert got.levels in got.minimal


@settings(max_examples=80, deadline=None)
@given(t=tables(), k=st.integers(1, 4), max_sup=st.sampled_from([0.0, 0.1, 0.3]))
def test_datafly_climbs_the_most_varied_attribute(t, k, max_sup):
    k = min(k, len(t.records))
    ft = t.frequency_table()
    got = run(ft, [KAnonymity(k)], max_sup, "loss", None, None, "datafly")
    # the same climb, in plain Python
    levels = [0] * len(t.names)
    heights = [len(t.rows[name][0]) for name in t.names]
    while not brute_check(t, levels, k, None, max_sup)[0]:
        distinct = [len({t.label(i, r[i], lv) for r in t.records}) if lv + 1 < h else -1
                    for i, (lv, h) in enumerate(zip(levels, heights))]
        if max(distinct) < 0:  # at the top and still failing
            assert got is None
            return
        levels[distinct.index(max(distinct))] += 1
    assert got.levels == tuple(levels)
    assert got.n_suppressed == brute_check(t, levels, k, None, max_sup)[1]


# -- a worked example --------------------------------------------------------------------
# Race (asian, black, white -> person) and ZIP (94138.. -> 9413*/9414* -> 941**), k = 2.
# Violating records per node, by hand:
#   (0,0): 4 [(a,38)x2 and (b,41)x2 are the only pairs]    (1,0): 2 [(p,39), (p,42)]
#   (0,1): 1 [(b,9413*)]    (1,1), (0,2), (1,2): 0
RECORDS = [("asian", "94138")] * 2 + [("asian", "94139"), ("black", "94138")] + [
    ("black", "94141")] * 2 + [("white", "94142"), ("white", "94141")]


def worked_table() -> FrequencyTable:
    race = Hierarchy.from_rows([[r, "person"] for r in ("asian", "black", "white")])
    zips = Hierarchy.from_rows([[z, z[:4] + "*", "941**"]
                                for z in ("94138", "94139", "94141", "94142")])
    df = pd.DataFrame(RECORDS, columns=["race", "zip"])
    return FrequencyTable.from_table(df, {"race": race, "zip": zips})


@pytest.mark.parametrize(("suppressible", "minimal"), [
    (0, {(1, 1), (0, 2)}),
    (1, {(0, 1)}),
    (2, {(1, 0), (0, 1)}),
    (3, {(1, 0), (0, 1)}),
    (4, {(0, 0)}),
    (8, {(0, 0)}),
])
def test_worked_example_k_minimal_nodes(suppressible, minimal):
    ft = worked_table()
    solution = find(ft, [KAnonymity(2)], max_suppression=suppressible / 8, algorithm="binary")
    assert set(solution.minimal) == minimal


@pytest.mark.parametrize(("suppressible", "levels", "loss"), [
    # (1,1): race fully generalized (1), zip 9413* covers 2 of 4 (1/3): (1 + 1/3) / 2 = 2/3;
    # (0,2): zip fully generalized: 1/2, the best without suppression
    (0, (0, 2), 1 / 2),
    # (0,1), one record suppressed: (7 * (0 + 1/3) / 2 + 1) / 8 = 13/48
    (1, (0, 1), 13 / 48),
    # (1,0) would be (6 * 1/2 + 2) / 8 = 5/8: (0,1) stays best
    (3, (0, 1), 13 / 48),
    # (0,0) suppresses 4 records: 4/8 = 1/2, worse than (0,1) although it is lower
    (4, (0, 1), 13 / 48),
])
def test_worked_example_optimal_loss(suppressible, levels, loss):
    ft = worked_table()
    solution = find(ft, [KAnonymity(2)], max_suppression=suppressible / 8)
    assert solution.levels == levels
    assert solution.score == pytest.approx(loss)


def test_worked_example_policies():
    ft = worked_table()
    # at 2 suppressible records both (1,0) and (0,1) are k-minimal at height 1
    suppression = find(ft, [KAnonymity(2)], max_suppression=2 / 8, algorithm="binary",
                       policy="suppression")
    assert suppression.levels == (0, 1) and suppression.n_suppressed == 1
    # relative steps: race 1/1 vs zip 1/2
    relative = find(ft, [KAnonymity(2)], max_suppression=2 / 8, algorithm="binary",
                    policy="relative")
    assert relative.levels == (0, 1)
    # distribution: (1,0) keeps 2 classes (p,38), (p,41); (0,1) keeps 3
    distribution = find(ft, [KAnonymity(2)], max_suppression=2 / 8, algorithm="binary",
                        policy="distribution")
    assert distribution.levels == (0, 1) and distribution.n_classes == 3
    height = find(ft, [KAnonymity(2)], metric="height")
    assert height.score == 2 and height.levels in {(1, 1), (0, 2)}


def test_refuses_large_lattices_and_names_the_alternatives():
    ft = worked_table()
    with pytest.raises(BlendinError, match='"heuristic".*"datafly".*"mondrian"'):
        find(ft, [KAnonymity(2)], algorithm="optimal", max_nodes=5)
    auto = find(ft, [KAnonymity(2)], max_nodes=5)
    assert auto.algorithm == "heuristic" and "lattice of" in auto.reason
    assert find(ft, [KAnonymity(2)], algorithm="datafly", max_nodes=5).levels == (1, 1)


def test_bad_arguments_are_named():
    ft = worked_table()
    with pytest.raises(BlendinError, match="'fast'"):
        find(ft, [KAnonymity(2)], algorithm="fast")
    with pytest.raises(BlendinError, match="'utility'"):
        find(ft, [KAnonymity(2)], metric="utility")
    with pytest.raises(BlendinError, match="'lowest'"):
        find(ft, [KAnonymity(2)], policy="lowest")
    with pytest.raises(BlendinError, match="'age'"):
        find(ft, [KAnonymity(2)], weights={"age": 2})


def test_nothing_acceptable_says_how_much_suppression_is_needed():
    race = Hierarchy.from_rows([["a", "a"], ["b", "b"]])  # no real generalization
    ft = FrequencyTable.from_table(pd.DataFrame({"race": ["a", "a", "b"]}), {"race": race})
    with pytest.raises(BlendinError, match=r"max_suppression >= 0\.3333"):
        find(ft, [KAnonymity(2)])


def test_progress_reports_checks_and_lattice_size():
    ft = worked_table()
    calls = []
    solution = find(ft, [KAnonymity(2)], algorithm="exhaustive",
                    progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i, 6) for i in range(1, 7)]
    assert solution.nodes_checked == 6 and solution.lattice_size == 6
    assert solution.named_levels == {"race": 0, "zip": 2}


@pytest.mark.parametrize("algorithm", ["binary", "datafly", "exhaustive"])
def test_solution_figures_match_the_metrics_module(algorithm):
    ft = worked_table()
    solution = find(ft, [KAnonymity(2)], max_suppression=2 / 8, algorithm=algorithm,
                    weights={"zip": 3})
    suppressed = Checker(ft, [KAnonymity(2)], 2 / 8).suppressed_tuples(solution.levels)
    figures = utility_of_node(ft, solution.levels, suppressed, weights={"zip": 3})
    assert solution.utility == pytest.approx(figures)
    assert solution.score == pytest.approx(figures["loss"])


def test_weights_change_the_choice():
    ft = worked_table()
    # no suppression: (1,1) costs race 1 + zip 1/3, (0,2) costs zip 1; weighting zip up
    # makes generalizing race the cheaper way
    assert find(ft, [KAnonymity(2)]).levels == (0, 2)
    assert find(ft, [KAnonymity(2)], weights={"zip": 4}).levels == (1, 1)
