"""Lattice node checks against a record-by-record grouping in plain Python."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_search_tables import Table, tables

import blendin.codes as codes_module
import blendin.lattice as lattice_module
from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.hierarchy.core import Hierarchy
from blendin.lattice import Checker, Lattice, suppression_limit
from blendin.models import DistinctLDiversity, KAnonymity

# the grouping fixture only sets module constants: sharing it across examples is intended
SHARED_FIXTURE = [HealthCheck.function_scoped_fixture]


def brute_check(t: Table, levels, k: int, l_div: int | None, max_sup: float):
    """Classes by generalized labels; violating = fewer than k records or l secrets."""
    classes = defaultdict(list)
    for rec, secret in zip(t.records, t.secret):
        key = tuple(t.label(i, v, lv) for i, (v, lv) in enumerate(zip(rec, levels)))
        classes[key].append((rec, secret))
    bad = {key for key, members in classes.items()
           if len(members) < k or (l_div and len({s for _, s in members}) < l_div)}
    n_sup = sum(len(classes[key]) for key in bad)
    limit = math.floor(max_sup * len(t.records) + 1e-9)
    sup_records = {rec for key in bad for rec, _ in classes[key]}
    kept = sorted(len(m) for key, m in classes.items() if key not in bad)
    return n_sup <= limit, n_sup, kept, sup_records


def models_for(k: int, l_div: int | None):
    return [KAnonymity(k)] + ([DistinctLDiversity("s", l_div)] if l_div else [])


@pytest.fixture(params=["dense", "hashed", "sorted"])
def grouping(request, monkeypatch):
    """Run a test with dense-count grouping, with hashing and with grouping by a sort, and
    intermediate nodes."""
    if request.param != "dense":
        monkeypatch.setattr(lattice_module, "_DENSE_FACTOR", 0)
        monkeypatch.setattr(lattice_module, "_DENSE_SLACK", 0)
    if request.param == "sorted":  # however few the keys, however unordered
        monkeypatch.setattr(codes_module, "SORTED_GROUPS_ROWS", 1)
        monkeypatch.setattr(codes_module, "RUN_SHARE", 0)
    monkeypatch.setattr(lattice_module, "_LADDER_MIN", 0)
    return request.param


def test_lattice_numbering():
    lat = Lattice([3, 2, 4])
    nodes = lat.nodes()
    assert lat.size == len(nodes) == 24
    for i, node in enumerate(nodes):
        assert lat.index(node) == i and lat.levels(i) == tuple(node)
    assert lat.successors((2, 0, 1)) == [(2, 1, 1), (2, 0, 2)]
    assert lat.predecessors((2, 0, 1)) == [(1, 0, 1), (2, 0, 0)]
    assert lat.top == (2, 1, 3) and lat.max_height == 6


@given(st.lists(st.integers(1, 5), min_size=0, max_size=6))
def test_nodes_follow_the_mixed_radix_numbering(heights):
    lat = Lattice(heights)
    idx = np.arange(lat.size)
    want = (np.stack([(idx // s) % h for s, h in zip(lat.strides, heights)], axis=1)
            if heights else np.zeros((1, 0)))
    nodes = lat.nodes()
    assert nodes.dtype == np.int16 and nodes.shape == (lat.size, len(heights))
    assert np.array_equal(nodes, want)


def test_suppression_limit():
    assert suppression_limit(0.0, 100) == 0
    assert suppression_limit(0.29, 100) == 29  # 0.29 * 100 is 28.999... in floating point
    with pytest.raises(BlendinError, match="between 0 and 1"):
        suppression_limit(5, 100)
    # large tables: 0.29 * 10**8 is 28999999.999999996, past the absolute slack of 1e-9
    for n in (10**8, 3 * 10**8, 10**9):
        for percent in range(1, 100):
            assert suppression_limit(percent / 100, n) == percent * n // 100
    assert suppression_limit(0.123456789, 10**8) == 12345678  # a share's own digits count


def test_a_share_of_a_large_table_allows_every_record_it_names():
    """100 million records (counts of a frequency table): max_suppression = 0.29 allows
    29,000,000 of them, so the ground level, suppressing exactly that class, is chosen by
    every search; the limit was one record short there."""
    import pyarrow as pa

    from blendin.codes import COUNT
    from blendin.search import find

    h = Hierarchy.from_rows([["a", "*"], ["b", "*"]])
    ft = FrequencyTable.from_distinct(
        pa.table({"x": ["a", "b"], COUNT: [71_000_000, 29_000_000]}), {"x": h})
    models = [KAnonymity(30_000_000)]
    assert Checker(ft, models, 0.29).check((0,)).acceptable
    for algorithm in ("optimal", "binary", "heuristic"):
        found = find(ft, models, max_suppression=0.29, algorithm=algorithm)
        assert (found.levels, found.n_suppressed) == ((0,), 29_000_000)


@settings(max_examples=40, deadline=None, suppress_health_check=SHARED_FIXTURE)
@given(t=tables(), data=st.data())
def test_check_matches_brute_force(grouping, t, data):
    ft = t.frequency_table()
    k = data.draw(st.integers(1, min(4, len(t.records))))
    l_div = data.draw(st.sampled_from([None, None, 2]))
    if l_div and len(set(t.secret)) < l_div:
        l_div = None
    max_sup = data.draw(st.sampled_from([0.0, 0.1, 0.5]))
    budget = data.draw(st.sampled_from([8_000_000, 40]))  # 40: the cache keeps evicting
    checker = Checker(ft, models_for(k, l_div), max_sup, cache_budget=budget)
    # a sequence of nodes on one checker, so later nodes roll up from cached ones (and
    # from the meets of nodes announced to come, which the next node may or may not be)
    for _ in range(6):
        if data.draw(st.booleans()):
            checker.expect(np.array(data.draw(st.lists(nodes_of(ft), min_size=1,
                                                       max_size=4))))
        levels = data.draw(nodes_of(ft))
        ok, n_sup, kept, sup_records = brute_check(t, levels, k, l_div, max_sup)
        result = checker.check(levels)
        assert result.acceptable == ok
        if ok:
            assert result.n_suppressed == n_sup
            sizes = result.groups.sizes[~result.violating]
            assert sorted(sizes.tolist()) == kept
            assert result.n_classes == len(kept)
            mask = checker.suppressed_tuples(levels)
            ground = [h.ground for h in ft.hierarchies]
            got = {tuple(str(ground[i][c]) for i, c in enumerate(row))
                   for row in ft.tuples[mask]}
            assert got == sup_records
        else:
            assert result.n_suppressed > checker.limit


def nodes_of(ft: FrequencyTable):
    return st.tuples(*(st.integers(0, h.height - 1) for h in ft.hierarchies))


@settings(max_examples=40, deadline=None, suppress_health_check=SHARED_FIXTURE)
@given(t=tables(), data=st.data())
def test_nodes_announced_roll_up_from_their_meet(grouping, t, data):
    """The nodes a search announces share a source: their meet (the lowest level of each
    QI), grouped once; every one of them then has the classes of a direct grouping."""
    ft = t.frequency_table()
    nodes = data.draw(st.lists(nodes_of(ft), min_size=2, max_size=5))
    meet = tuple(map(min, *nodes))
    checker = Checker(ft, [KAnonymity(1)], 0.0)
    checker.expect(np.array(nodes))
    for levels in nodes:
        groups = checker.groups(levels)
        classes, _ = ft.classes_at(levels)
        assert sorted(groups.sizes.tolist()) == sorted(classes.sizes.tolist())
    if meet != checker._bottom.levels:
        assert checker.lattice.index(meet) in checker._cache


@settings(max_examples=30, deadline=None, suppress_health_check=SHARED_FIXTURE)
@given(t=tables(), data=st.data())
def test_rolled_up_classes_match_direct_grouping(grouping, t, data):
    """Codes, sizes and histograms of a roll-up equal the frequency table's own grouping."""
    ft = t.frequency_table()
    checker = Checker(ft, [DistinctLDiversity("s", 1)], 0.0)
    for _ in range(5):
        levels = tuple(data.draw(st.integers(0, h.height - 1)) for h in ft.hierarchies)
        groups = checker.groups(levels)
        classes, class_of_tuple = ft.classes_at(levels)
        generalized = ft.generalized(levels)
        want = {}
        for c in range(len(classes)):
            row = tuple(generalized[np.flatnonzero(class_of_tuple == c)[0]].tolist())
            want[row] = (int(classes.sizes[c]), classes.histograms["s"][c].tolist())
        width = len(ft.domains["s"].labels)
        got = {}
        rows, vals, counts = groups.hists["s"]
        for c in range(len(groups)):
            hist = [0] * width
            for v, n in zip(vals[rows == c], counts[rows == c]):
                hist[v] += int(n)
            got[tuple(int(col[c]) for col in groups.codes)] = (int(groups.sizes[c]), hist)
        assert got == want


@settings(max_examples=40, deadline=None, suppress_health_check=SHARED_FIXTURE)
@given(t=tables(min_qis=1), data=st.data())
def test_one_level_steps_match_direct_grouping(grouping, t, data):
    """A walk up one QI at a time (each node rolled up from the one before, by rewriting
    one digit of its keys): every node's classes equal the frequency table's grouping."""
    ft = t.frequency_table()
    checker = Checker(ft, [KAnonymity(1)], 0.0)
    levels = [data.draw(st.integers(0, h.height - 1)) for h in ft.hierarchies]
    checker.groups(levels)
    for _ in range(6):
        movable = [i for i, h in enumerate(ft.hierarchies) if levels[i] + 1 < h.height]
        if not movable:
            break
        levels[data.draw(st.sampled_from(movable))] += 1
        groups = checker.groups(levels)
        classes, class_of_tuple = ft.classes_at(levels)
        generalized = ft.generalized(levels)
        want = {tuple(generalized[np.flatnonzero(class_of_tuple == c)[0]].tolist()):
                int(classes.sizes[c]) for c in range(len(classes))}
        codes = groups.codes_of(np.arange(len(groups)))  # (keeps the keys to rewrite)
        got = {tuple(int(col[c]) for col in codes): int(groups.sizes[c])
               for c in range(len(groups))}
        assert got == want


def test_keys_beyond_int64_are_ranked(grouping):
    """Ten QIs of 100 values each: the key space (1e20) does not fit in int64."""
    rng = np.random.default_rng(3)
    q, n = 10, 60
    df = pd.DataFrame({f"a{i}": rng.integers(0, 100, n).astype(str) for i in range(q)})
    df.iloc[1] = df.iloc[0]  # one class of two
    hs = {c: Hierarchy.from_rows([[str(v), "*"] for v in range(100)]) for c in df}
    ft = FrequencyTable.from_table(df, hs)
    checker = Checker(ft, [KAnonymity(2)], 1.0)
    result = checker.check((0,) * q)
    want = Counter(map(tuple, df.to_numpy().tolist()))
    assert sorted(result.groups.sizes.tolist()) == sorted(want.values())
    assert result.n_suppressed == sum(c for c in want.values() if c < 2)
    assert checker.suppressed_tuples((0,) * q).sum() == sum(
        1 for c in want.values() if c < 2)


def test_monotone_flags_follow_suppression():
    rows = [["1", "*"], ["2", "*"]]
    t = Table([("1",), ("2",), ("1",), ("2",)], ["a", "b", "a", "a"], {"x": rows}, {},
              {"x": Hierarchy.from_rows(rows)})
    ft = t.frequency_table()
    from blendin.models import TCloseness

    assert Checker(ft, [KAnonymity(1), TCloseness("s", 0.5)], 0.0).monotone
    assert not Checker(ft, [KAnonymity(1), TCloseness("s", 0.5)], 0.5).monotone
    assert Checker(ft, [KAnonymity(1)], 0.5).monotone
    # a limit below one record is no suppression at all
    assert Checker(ft, [KAnonymity(1), TCloseness("s", 0.5)], 0.2).monotone


@settings(max_examples=200, deadline=None)
@given(hist=st.lists(st.integers(0, 5), min_size=3, max_size=3),
       overall=st.lists(st.integers(1, 6), min_size=3, max_size=3),
       t=st.sampled_from([0.0, 0.1, 0.25, 0.4]))
def test_t_closeness_removal_bound_never_exceeds_the_true_minimum(hist, overall, t):
    """The records a t-close remainder needs removed, against every sub-multiset."""
    from itertools import product

    from blendin.frequency import Classes, SensitiveDomain
    from blendin.lattice import _must_go
    from blendin.models import TCloseness

    if sum(hist) == 0:
        return
    domain = SensitiveDomain("s", np.array(["a", "b", "c"], dtype=object), np.array(overall))
    model = TCloseness("s", t)
    classes = Classes(np.array([sum(hist)]), {"s": np.array([hist])}, {"s": domain})
    if model.holds(classes)[0]:
        return
    q = np.array(overall) / sum(overall)
    best = sum(hist)  # removing everything always works
    for kept in product(*(range(c + 1) for c in hist)):
        n = sum(kept)
        if n and 0.5 * np.abs(np.array(kept) / n - q).sum() <= t + 1e-9:
            best = min(best, sum(hist) - n)
    bound = _must_go(model, classes, np.array([True]))
    assert 1 <= bound <= max(best, 1)


@pytest.fixture(params=["summed", "composed"])
def summing(request, monkeypatch):
    """Histograms summed at every node, or passed down through composed class maps."""
    value = 0 if request.param == "summed" else 10**9
    monkeypatch.setattr(lattice_module, "_SUM_CELLS", value)
    monkeypatch.setattr(lattice_module, "_SUM_CLASSES", value)
    monkeypatch.setattr(lattice_module, "_LADDER_MIN", 0)
    return request.param


@settings(max_examples=40, deadline=None, suppress_health_check=SHARED_FIXTURE)
@given(t=tables(min_qis=1), data=st.data())
def test_histograms_through_chains_of_roll_ups(summing, t, data):
    """Along a chain of ever coarser nodes (each rolled up from the one before), every
    class's sensitive histogram equals the one counted record by record."""
    ft = t.frequency_table()
    checker = Checker(ft, [DistinctLDiversity("s", 1)], 0.0)
    labels = list(ft.domains["s"].labels)
    levels = [0] * len(ft.hierarchies)
    for _ in range(4):
        levels = [max(lv, data.draw(st.integers(0, h.height - 1)))
                  for lv, h in zip(levels, ft.hierarchies)]
        groups = checker.groups(levels)
        dense = checker._dense_hists(groups, np.arange(len(groups)), "s")["s"]
        want = defaultdict(Counter)
        for rec, secret in zip(t.records, t.secret):
            want[tuple(t.label(i, v, lv) for i, (v, lv) in enumerate(zip(rec, levels)))][
                secret] += 1
        got = {}
        for c in range(len(groups)):
            key = tuple(str(h.labels[lv][col[c]]) for h, lv, col in
                        zip(ft.hierarchies, levels, groups.codes))
            got[key] = Counter({labels[v]: int(n) for v, n in enumerate(dense[c]) if n})
        assert got == dict(want)
        assert groups.sizes.sum() == len(t.records)


@settings(max_examples=40, deadline=None, suppress_health_check=SHARED_FIXTURE)
@given(t=tables(min_qis=1), data=st.data())
def test_t_closeness_checks_match_plain_distances(summing, t, data):
    """t-closeness (equal distance) on checked nodes against the distances of the classes
    computed record by record, with suppression and ties at t included."""
    from blendin.models import TCloseness

    ft = t.frequency_table()
    tt = data.draw(st.sampled_from([0.0, 0.2, 0.5, 1.0]))
    max_sup = data.draw(st.sampled_from([0.0, 0.3]))
    checker = Checker(ft, [KAnonymity(1), TCloseness("s", tt)], max_sup)
    overall = Counter(t.secret)
    n = len(t.records)
    for _ in range(4):
        levels = tuple(data.draw(st.integers(0, h.height - 1)) for h in ft.hierarchies)
        classes = defaultdict(list)
        for rec, secret in zip(t.records, t.secret):
            classes[tuple(t.label(i, v, lv) for i, (v, lv) in
                          enumerate(zip(rec, levels)))].append(secret)
        n_sup = 0
        for members in classes.values():
            share = Counter(members)
            distance = 0.5 * sum(abs(share[s] / len(members) - overall[s] / n)
                                 for s in overall)
            n_sup += len(members) if distance > tt + 1e-9 else 0
        result = checker.check(levels)
        assert result.acceptable == (n_sup <= checker.limit)
        if result.acceptable:
            assert result.n_suppressed == n_sup


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-50, 10**6), max_size=80), st.lists(st.integers(-50, 10**6),
                                                                 max_size=40))
def test_keys_among_the_chosen_by_table_or_sort_as_isin(keys, chosen):
    from blendin.plan import _among

    keys, chosen = np.array(keys, np.int64), np.unique(np.array(chosen, np.int64))
    assert _among(keys, chosen).tolist() == np.isin(keys, chosen).tolist()
    # a narrow range, where the table is taken
    assert (_among(keys % 97, chosen % 97).tolist()
            == np.isin(keys % 97, chosen % 97).tolist())


def test_the_ground_level_shares_the_frequency_tables_columns():
    h = Hierarchy.from_rows([["1", "*"], ["2", "*"], ["3", "*"]])
    ft = FrequencyTable.from_table(pd.DataFrame({"x": ["3", "1", "3", "2"]}), {"x": h})
    bottom = Checker(ft, [KAnonymity(1)])._bottom
    assert np.shares_memory(bottom.codes[0], ft.columns[0])
    assert bottom.codes[0].tolist() == ft.tuples[:, 0].tolist()


def _held(groups) -> int:
    """The array elements a node holds, counted from the arrays themselves."""
    arrays = [groups.sizes, groups._weights, groups._keys, *(groups._codes or ())]
    if groups._pending is not None:
        arrays.append(groups._pending[1])
    arrays += [a for triple in (groups._hists or {}).values() for a in triple]
    return sum(a.size for a in arrays if a is not None)


@settings(max_examples=30, deadline=None, suppress_health_check=SHARED_FIXTURE)
@given(t=tables(), data=st.data())
def test_the_cache_weighs_what_its_nodes_hold(grouping, t, data):
    """A node's weight is the elements of the arrays it holds (keys, or codes once a roll-up
    decoded them); each node remembered finds the cache within its budget, counted anew."""
    ft = t.frequency_table()
    budget = data.draw(st.sampled_from([60, 400, 8_000_000]))
    checker = Checker(ft, models_for(min(2, len(t.records)), None), 0.1, cache_budget=budget)
    remember = checker._remember

    def remembered(groups, index=None):
        remember(groups, index)
        assert sum(map(_held, checker._cache.values())) <= budget

    checker._remember = remembered
    for _ in range(8):
        checker.check(data.draw(nodes_of(ft)))
        assert all(g.weight == _held(g) for g in checker._cache.values())
