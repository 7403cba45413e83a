"""Privacy models: known answers, agreement with plain per-class implementations,
monotonicity, TOML round trip and validation errors."""

import math
import tomllib
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin.errors import BlendinError
from blendin.frequency import Classes, FrequencyTable, SensitiveDomain
from blendin.hierarchy.core import Hierarchy
from blendin.models import (
    MODELS,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
    entropies,
    model_from_toml,
    recursive_levels,
)

scipy_optimize = pytest.importorskip("scipy.optimize")

SETTINGS = settings(max_examples=120, deadline=None)


def make_classes(hists, labels=None, overall=None, hierarchy=None, name="s"):
    """Classes of one sensitive attribute ``name`` from a list of per-class histograms."""
    hists = np.asarray(hists, dtype=np.int64).reshape(len(hists), -1)
    if labels is None:
        labels = [f"v{i}" for i in range(hists.shape[1])]
    overall = hists.sum(axis=0) if overall is None else np.asarray(overall, dtype=np.int64)
    domain = SensitiveDomain(name, np.array(labels, dtype=object), overall, hierarchy)
    return Classes(hists.sum(axis=1), {name: hists}, {name: domain})


# -- plain references, one class at a time ---------------------------------------------------


def ref_distinct(row):
    return len({i for i, count in enumerate(row) if count > 0})


def ref_entropy(row):
    n = sum(row)
    return -sum(count / n * math.log(count / n) for count in row if count > 0)


def ref_recursive(row, c, l):  # noqa: E741
    """r1 < c (r_l + ... + r_m), exactly, with c read as the decimal it was written as."""
    r = sorted((int(x) for x in row if x > 0), reverse=True)
    if len(r) < l:
        return False
    return r[0] < Fraction(repr(c)) * sum(r[l - 1:])


def emd_lp(p, q, dist):
    """Earth Mover's Distance by linear programming: min sum f_ij d_ij, flows from p to q."""
    m = len(p)
    rows = []
    for i in range(m):
        a = np.zeros((m, m))
        a[i, :] = 1
        rows.append(a.ravel())
    for j in range(m):
        a = np.zeros((m, m))
        a[:, j] = 1
        rows.append(a.ravel())
    out = scipy_optimize.linprog(np.asarray(dist, dtype=float).ravel(), A_eq=np.array(rows),
                                 b_eq=np.r_[p, q], bounds=(0, None), method="highs")
    assert out.status == 0
    return out.fun


def equal_ground(m):
    return [[0.0 if i == j else 1.0 for j in range(m)] for i in range(m)]


def ordered_ground(labels, overall):
    """Values present in the table, numbers first (by value), then text; |rank gap|/(m-1)."""
    present = [i for i in range(len(labels)) if overall[i] > 0]

    def key(i):
        try:
            return (0, float(labels[i]), labels[i])
        except ValueError:
            return (1, 0.0, labels[i])

    ranked = sorted(present, key=key)
    rank = {col: r for r, col in enumerate(ranked)}
    m = len(ranked)
    return present, [[abs(rank[a] - rank[b]) / (m - 1) if m > 1 else 0.0 for b in present]
                     for a in present]


def tree_ground(rows):
    """Ground distance of a hierarchy given as rows: level of the lowest common ancestor / H,
    with a common root above when the top level has several values."""
    top = {r[-1] for r in rows}
    paths = [list(r) + (["<root>"] if len(top) > 1 else []) for r in rows]
    height = len(paths[0]) - 1

    def dist(a, b):
        if height == 0:
            return 0.0
        return next(lv for lv in range(len(a)) if a[lv] == b[lv]) / height

    return [[dist(a, b) for b in paths] for a in paths]


def shares(row):
    total = sum(row)
    return np.array([x / total for x in row])


# -- known answers -------------------------------------------------------------------------

SALARIES = [f"{i}k" for i in range(3, 12)]  # text labels: ordered by text would be wrong
SALARY_NUMBERS = [str(i * 1000) for i in range(3, 12)]


def salary_classes(groups, labels=SALARY_NUMBERS):
    hists = [[1 if i in g else 0 for i in range(3, 12)] for g in groups]
    return make_classes(hists, labels=labels, overall=np.ones(9, dtype=np.int64))


def test_ordered_distance_li_et_al_salary_example():
    # Li, Li, Venkatasubramanian 2007: {3k,4k,5k} is 0.375 from the uniform 3k..11k,
    # {6k,8k,11k} is 0.167
    classes = salary_classes([{3, 4, 5}, {6, 8, 11}])
    got = TCloseness("s", 0.5, "ordered").distances(classes)
    assert got == pytest.approx([0.375, 1 / 6])


def test_ordered_distance_table_4_salary_is_one_sixth():
    # the paper's Table 4 classes: {3k,5k,9k}, {6k,11k,8k}, {4k,7k,10k}
    classes = salary_classes([{3, 5, 9}, {6, 8, 11}, {4, 7, 10}])
    model = TCloseness("s", 1 / 6, "ordered")
    assert model.distances(classes) == pytest.approx([1 / 6, 1 / 6, 1 / 12])
    assert model.figure(classes) == pytest.approx(1 / 6)
    assert model.holds(classes).all()  # exactly at t: holds (rounding slack)
    assert not TCloseness("s", 0.16, "ordered").holds(classes)[:2].any()


def test_ordered_distance_orders_numbers_by_value_not_text():
    # labels "10000", "11000" sort before "3000" as text; numbers must order by value
    shuffled = SALARY_NUMBERS[::-1]
    hists = [[1 if lab in {"3000", "4000", "5000"} else 0 for lab in shuffled]]
    classes = make_classes(hists, labels=shuffled, overall=np.ones(9, dtype=np.int64))
    assert TCloseness("s", 0.5, "ordered").distances(classes) == pytest.approx([0.375])


def test_ordered_distance_with_missing_label_keeps_numbers_in_order():
    labels = ["", *SALARY_NUMBERS]  # "" (missing) goes after the numbers
    hist = [[0, 1, 1, 1, 0, 0, 0, 0, 0, 0]]
    classes = make_classes(hist, labels=labels, overall=np.ones(10, dtype=np.int64))
    # by hand: cumulative differences over the 10 ordered values, divided by 9
    p = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0]) / 3
    expected = np.abs(np.cumsum(p - 0.1))[:-1].sum() / 9
    assert TCloseness("s", 0.5, "ordered").distances(classes) == pytest.approx([expected])


def test_ordered_distance_ignores_values_absent_from_the_table():
    with_absent = make_classes([[1, 1, 0, 0]], labels=["1", "2", "3", "4"], overall=[2, 1, 1, 0])
    without = make_classes([[1, 1, 0]], labels=["1", "2", "3"], overall=[2, 1, 1])
    model = TCloseness("s", 0.5, "ordered")
    assert model.distances(with_absent) == pytest.approx(model.distances(without))
    # by hand: p = (1/2, 1/2, 0), q = (1/2, 1/4, 1/4): (0 + 1/4) / 2
    assert model.distances(without) == pytest.approx([0.125])


def test_equal_distance_is_half_the_l1_distance():
    classes = make_classes([[2, 0, 0], [0, 1, 1]], overall=[2, 1, 1])
    # q = (1/2, 1/4, 1/4); class 1: (1, 0, 0) -> 1/2 (1/2 + 1/4 + 1/4) = 1/2
    assert TCloseness("s", 0.5, "equal").distances(classes) == pytest.approx([0.5, 0.5])


DISEASES = {
    "respiratory system": {
        "respiratory infection": ["flu", "pneumonia", "bronchitis"],
        "vascular lung": ["pulmonary edema", "pulmonary embolism"],
    },
    "digestive system": {
        "stomach": ["gastric ulcer", "gastritis", "stomach cancer"],
        "colon": ["colitis", "colon cancer"],
    },
}
DISEASE_ROWS = [[leaf, group, system, "*"] for system, groups in DISEASES.items()
                for group, leaves in groups.items() for leaf in leaves]
# Li et al. 2007, Table 3: the Disease column of the nine records
DISEASE_TABLE = ["gastric ulcer", "gastritis", "stomach cancer", "gastritis", "flu",
                 "bronchitis", "bronchitis", "pneumonia", "stomach cancer"]


def disease_classes(groups, with_hierarchy=True):
    h = Hierarchy.from_rows(DISEASE_ROWS)
    index = {v: i for i, v in enumerate(h.ground)}
    overall = np.bincount([index[v] for v in DISEASE_TABLE], minlength=len(index))
    hists = [np.bincount([index[DISEASE_TABLE[r - 1]] for r in g], minlength=len(index))
             for g in groups]
    return make_classes(hists, labels=list(h.ground), overall=overall,
                        hierarchy=h if with_hierarchy else None), h


def test_hierarchical_distance_li_et_al_disease_example():
    # the paper's disease hierarchy (height 3) and Table 3; worked by hand with the
    # extra/pos/neg formula and confirmed by the LP below.
    # {gastric ulcer, gastritis, stomach cancer}: 4/9 of the mass crosses the root (cost 1)
    # Table 4 classes: records {1,3,8}, {4,5,6}, {2,7,9}
    classes, h = disease_classes([[1, 2, 3], [1, 3, 8], [4, 5, 6], [2, 7, 9]])
    model = TCloseness("s", 0.3, "hierarchical")
    expected = [4 / 9, 7 / 27, 8 / 27, 5 / 27]
    assert model.distances(classes) == pytest.approx(expected)
    rows = sorted(h.to_rows())  # ground values in code order (from_rows sorts them)
    ground = tree_ground(rows)
    q = shares(classes.domains["s"].overall)
    for hist, want in zip(classes.histograms["s"], expected):
        assert emd_lp(shares(hist), q, ground) == pytest.approx(want, abs=1e-9)
    assert model.holds(classes).tolist() == [False, True, True, True]


def test_hierarchical_distance_from_the_models_own_hierarchy():
    # the domain has no hierarchy; the model carries a built one and maps values by label
    classes, h = disease_classes([[1, 3, 8], [4, 5, 6]], with_hierarchy=False)
    model = TCloseness("s", 0.3, "hierarchical", hierarchy=h)
    assert model.distances(classes) == pytest.approx([7 / 27, 8 / 27])


def test_hierarchical_distance_follows_each_tables_values_on_one_hierarchy():
    # the tree is kept per hierarchy: a table with other values of the same hierarchy
    # (other histogram columns) must get its own, and the first table its own back
    h = Hierarchy.from_rows(DISEASE_ROWS)
    model = TCloseness("s", 0.3, "hierarchical", hierarchy=h)
    full, _ = disease_classes([[1, 3, 8], [4, 5, 6]], with_hierarchy=False)
    part = make_classes([[2, 0, 1], [0, 3, 1]], labels=["pneumonia", "flu", "gastritis"])
    fresh = TCloseness("s", 0.3, "hierarchical", hierarchy=Hierarchy.from_rows(DISEASE_ROWS))
    assert model.distances(full) == pytest.approx([7 / 27, 8 / 27])
    assert model.distances(part) == pytest.approx(fresh.distances(part))
    assert model.distances(full) == pytest.approx([7 / 27, 8 / 27])
    # pneumonia and flu share "respiratory infection": only moves out of it cost 1
    q = np.array([2, 3, 2]) / 7
    p = np.array([2, 0, 1]) / 3
    assert emd_lp(p, q, tree_ground([["pneumonia", "ri", "resp", "*"],
                                     ["flu", "ri", "resp", "*"],
                                     ["gastritis", "st", "dig", "*"]])) == pytest.approx(
        fresh.distances(part)[0], abs=1e-9)

def test_hierarchical_distance_of_a_flat_hierarchy_is_the_equal_distance():
    rng = np.random.default_rng(1)
    hists = rng.integers(0, 4, size=(20, 5)) + np.eye(5, dtype=np.int64)[rng.integers(0, 5, 20)]
    flat = Hierarchy.from_rows([[f"v{i}", "*"] for i in range(5)])
    classes = make_classes(hists, labels=list(flat.ground), hierarchy=flat)
    ground_only = Hierarchy.from_rows([[f"v{i}"] for i in range(5)])
    bare = make_classes(hists, labels=list(ground_only.ground), hierarchy=ground_only)
    equal = TCloseness("s", 0.5).distances(classes)
    assert TCloseness("s", 0.5, "hierarchical").distances(classes) == pytest.approx(equal)
    assert TCloseness("s", 0.5, "hierarchical").distances(bare) == pytest.approx(equal)


def test_distinct_l_diversity_hand_worked():
    classes = make_classes([[2, 2, 0], [1, 1, 1], [4, 0, 0]])
    model = DistinctLDiversity("s", 2)
    assert model.holds(classes).tolist() == [True, True, False]
    assert model.figure(classes) == 1.0
    assert DistinctLDiversity("s", 3).holds(classes).tolist() == [False, True, False]


def test_entropy_l_diversity_exact_case_passes():
    # l equally frequent values have entropy exactly log(l): must hold despite rounding
    for l in range(1, 12):  # noqa: E741
        for size in (1, 3, 7):
            classes = make_classes([[size] * l])
            assert EntropyLDiversity("s", l).holds(classes).all()
            assert EntropyLDiversity("s", l).figure(classes) == pytest.approx(l)
            if l > 1:
                assert not EntropyLDiversity("s", l + 0.01).holds(classes).any()


def test_entropy_l_diversity_hand_worked():
    # counts (2, 1, 1): H = 1.5 log 2 = 1.0397 < log 3 = 1.0986: distinct 3-diverse but
    # not entropy 3-diverse; exp(H) = 2^1.5 = 2.828
    classes = make_classes([[2, 1, 1]])
    assert DistinctLDiversity("s", 3).holds(classes).all()
    assert not EntropyLDiversity("s", 3).holds(classes).any()
    assert EntropyLDiversity("s", 2.8).holds(classes).all()
    assert EntropyLDiversity("s", 3).figure(classes) == pytest.approx(2 ** 1.5)
    assert entropies(np.array([[0, 0], [5, 0]])).tolist() == [0.0, 0.0]


def test_recursive_cl_diversity_hand_worked():
    # sorted counts (2, 1, 1): (c, 3) needs 2 < c * 1, (c, 2) needs 2 < c * 2
    classes = make_classes([[1, 2, 1]])
    assert not RecursiveCLDiversity("s", 2, 3).holds(classes).any()  # 2 < 2 fails: strict
    assert RecursiveCLDiversity("s", 2.5, 3).holds(classes).all()
    assert RecursiveCLDiversity("s", 1.01, 2).holds(classes).all()
    assert not RecursiveCLDiversity("s", 1, 2).holds(classes).any()
    assert not RecursiveCLDiversity("s", 9, 4).holds(classes).any()  # fewer than l values
    assert RecursiveCLDiversity("s", 2, 3).figure(classes) == 2.0
    assert RecursiveCLDiversity("s", 0.5, 2).figure(classes) == 0.0
    # (3, 3, 3) at c = 1: l = 2 holds (3 < 6), l = 3 does not (3 < 3)
    assert recursive_levels(np.array([[3, 3, 3]]), 1).tolist() == [2]


def test_recursive_strict_inequality_survives_float_products():
    # 0.28 * 25 == 7.000000000000001 in floats, but 7 < 0.28 * (5 + 5 + 5 + 5 + 5) is false
    classes = make_classes([[7, 5, 5, 5, 5, 5]])
    assert 0.28 * 25 > 7
    assert not RecursiveCLDiversity("s", 0.28, 2).holds(classes).any()
    assert RecursiveCLDiversity("s", 0.29, 2).holds(classes).all()


def test_k_anonymity_hand_worked():
    classes = Classes(np.array([3, 5, 2]), {}, {})
    assert KAnonymity(3).holds(classes).tolist() == [True, True, False]
    assert KAnonymity(3).figure(classes) == 2.0
    assert math.isnan(KAnonymity(3).figure(Classes(np.array([], dtype=np.int64), {}, {})))


def test_models_on_a_frequency_table_match_pandas():
    rng = np.random.default_rng(7)
    df = pd.DataFrame({"age": rng.integers(0, 8, 400).astype(str),
                       "dx": rng.choice(["flu", "gout", "hiv", "acne"], 400, p=[.5, .3, .1, .1])})
    age = Hierarchy.from_rows([[str(i), str(i // 2), str(i // 4), "*"] for i in range(8)])
    ft = FrequencyTable.from_table(df, {"age": age}, ["dx"])
    classes, _ = ft.classes_at([1])
    groups = df.assign(g=df.age.astype(int) // 2).groupby("g").dx
    assert sorted(DistinctLDiversity("dx", 1).per_class(classes)) == sorted(groups.nunique())
    want = sorted(groups.apply(lambda s: ref_entropy(s.value_counts().tolist())))
    assert sorted(np.log(EntropyLDiversity("dx", 1).per_class(classes))) == pytest.approx(want)
    q = df.dx.value_counts(normalize=True)
    tv = groups.apply(lambda s: 0.5 * (s.value_counts(normalize=True)
                                       .reindex(q.index, fill_value=0) - q).abs().sum())
    assert sorted(TCloseness("dx", 1).distances(classes)) == pytest.approx(sorted(tv))


def test_hierarchical_t_closeness_on_a_frequency_table():
    df = pd.DataFrame({"sex": ["m", "m", "f", "f", "m", "f", "m", "f", "m"],
                       "dx": DISEASE_TABLE})
    sex = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
    h = Hierarchy.from_rows(DISEASE_ROWS)
    ft = FrequencyTable.from_table(df, {"sex": sex}, ["dx"], sensitive_hierarchies={"dx": h})
    classes, _ = ft.classes_at([1])  # one class: the whole table, distance 0
    assert TCloseness("dx", 0.0, "hierarchical").distances(classes) == pytest.approx([0.0])
    classes, _ = ft.classes_at([0])
    q = shares(ft.domains["dx"].overall)
    ground = tree_ground(sorted(h.to_rows()))
    want = [emd_lp(shares(hist), q, ground) for hist in classes.histograms["dx"]]
    got = TCloseness("dx", 0.5, "hierarchical").distances(classes)
    assert got == pytest.approx(want, abs=1e-9)


# -- agreement with plain implementations (hypothesis) --------------------------------------


@st.composite
def histograms(draw, max_values=6, max_classes=6):
    """Non-empty class histograms, and the whole table's counts (a superset of them)."""
    m = draw(st.integers(1, max_values))
    n = draw(st.integers(1, max_classes))
    rows = draw(st.lists(st.lists(st.integers(0, 5), min_size=m, max_size=m),
                         min_size=n, max_size=n))
    rows = [r if sum(r) else [1, *r[1:]] for r in rows]
    extra = draw(st.lists(st.integers(0, 3), min_size=m, max_size=m))
    overall = [sum(col) + e for col, e in zip(zip(*rows), extra)]
    return rows, overall


@SETTINGS
@given(histograms(), st.integers(1, 7))
def test_distinct_agrees_with_plain(data, l):  # noqa: E741
    rows, overall = data
    classes = make_classes(rows, overall=overall)
    model = DistinctLDiversity("s", l)
    assert model.holds(classes).tolist() == [ref_distinct(r) >= l for r in rows]
    assert model.figure(classes) == min(ref_distinct(r) for r in rows)


@SETTINGS
@given(histograms(), st.floats(1, 7))
def test_entropy_agrees_with_plain(data, l):  # noqa: E741
    rows, overall = data
    classes = make_classes(rows, overall=overall)
    model = EntropyLDiversity("s", l)
    plain = [ref_entropy(r) for r in rows]
    assert np.log(model.per_class(classes)) == pytest.approx(plain, abs=1e-12)
    for holds, h in zip(model.holds(classes), plain):
        if abs(h - math.log(l)) > 1e-6:  # away from the boundary the answer is clear-cut
            assert holds == (h >= math.log(l))


@SETTINGS
@given(histograms(), st.sampled_from([0.5, 0.7, 1, 1.5, 2, 2.5, 3, 4.2]), st.integers(1, 7))
def test_recursive_agrees_with_plain(data, c, l):  # noqa: E741
    rows, overall = data
    classes = make_classes(rows, overall=overall)
    model = RecursiveCLDiversity("s", c, l)
    assert model.holds(classes).tolist() == [ref_recursive(r, c, l) for r in rows]
    largest = [max([j for j in range(1, 8) if ref_recursive(r, c, j)], default=0)
               for r in rows]
    assert model.figure(classes) == min(largest)


LABEL_SETS = st.sampled_from([
    [str(v) for v in (5, 40, 300, 1000, 2000, 10000)],  # numbers, text order differs
    ["b", "a", "d", "c", "f", "e"],
    ["12", "x", "3", "", "7.5", "-1"],  # mixed: numbers then text
])


@settings(max_examples=80, deadline=None)
@given(histograms(), LABEL_SETS)
def test_equal_and_ordered_distance_agree_with_lp(data, labels):
    rows, overall = data
    labels = labels[:len(overall)]
    classes = make_classes(rows, labels=labels, overall=overall)
    q = shares(overall)
    present, ordered = ordered_ground(labels, overall)
    equal_got = TCloseness("s", 1, "equal").distances(classes)
    ordered_got = TCloseness("s", 1, "ordered").distances(classes)
    for row, eq, od in zip(rows, equal_got, ordered_got):
        p = shares(row)
        assert eq == pytest.approx(emd_lp(p, q, equal_ground(len(row))), abs=1e-9)
        assert od == pytest.approx(emd_lp(p[present], q[present], ordered), abs=1e-9)


@st.composite
def hierarchies(draw, m):
    """A random tree over m ground values: 0 to 3 levels above the ground, the top not always
    a single value; the same label may appear on several levels (distinct nodes)."""
    levels = draw(st.integers(0, 3))
    codes = [list(range(m))]
    for _ in range(levels):
        below = max(codes[-1]) + 1
        parent = draw(st.lists(st.integers(0, max(below - 2, 0)), min_size=below,
                               max_size=below))
        codes.append([parent[c] for c in codes[-1]])
    return [[f"v{g}"] + [f"n{codes[lv][g]}" for lv in range(1, len(codes))] for g in range(m)]


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_hierarchical_distance_agrees_with_lp(data):
    rows, overall = data.draw(histograms())
    m = len(overall)
    tree_rows = data.draw(hierarchies(m))
    h = Hierarchy.from_rows(tree_rows)
    # histogram columns follow the hierarchy's ground codes; ground values sort like v0..v5
    assert list(h.ground) == [f"v{i}" for i in range(m)]
    classes = make_classes(rows, labels=list(h.ground), overall=overall, hierarchy=h)
    got = TCloseness("s", 1, "hierarchical").distances(classes)
    ground = tree_ground(tree_rows)
    q = shares(overall)
    for row, d in zip(rows, got):
        assert d == pytest.approx(emd_lp(shares(row), q, ground), abs=1e-9)


# -- monotonicity ---------------------------------------------------------------------------


def tuned(kind, a, b, classes_a, classes_b):
    """A model of the given kind that classes a and b both just satisfy (None if none)."""
    if kind == "k":
        return KAnonymity(int(min(sum(a), sum(b))))
    if kind == "distinct":
        return DistinctLDiversity("s", min(ref_distinct(a), ref_distinct(b)))
    if kind == "entropy":
        return EntropyLDiversity("s", max(1.0, min(math.exp(ref_entropy(a)),
                                                   math.exp(ref_entropy(b)))))
    if kind == "recursive":
        levels = recursive_levels(np.array([a, b]), 2.0)
        return RecursiveCLDiversity("s", 2.0, int(levels.min())) if levels.min() else None
    distance = kind.split("-")[1]
    probe = TCloseness("s", 0.0, distance)
    worst = max(probe.figure(classes_a), probe.figure(classes_b))
    return TCloseness("s", min(worst, 1.0), distance)


MONOTONE_KINDS = ["k", "distinct", "entropy", "recursive", "t-equal", "t-ordered"]


@SETTINGS
@given(histograms(max_classes=2), st.sampled_from(MONOTONE_KINDS))
def test_merging_satisfying_classes_keeps_monotone_models(data, kind):
    rows, overall = data
    a, b = rows[0], rows[-1]
    labels = [str(v) for v in range(len(a))]
    ca = make_classes([a], labels=labels, overall=overall)
    cb = make_classes([b], labels=labels, overall=overall)
    model = tuned(kind, a, b, ca, cb)
    if model is None:
        return
    assert model.monotone
    assert model.holds(ca).all() and model.holds(cb).all()
    both = make_classes([np.add(a, b)], labels=labels, overall=overall)
    assert model.holds(both).all()


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_merging_keeps_hierarchical_t_closeness(data):
    rows, overall = data.draw(histograms(max_classes=2))
    h = Hierarchy.from_rows(data.draw(hierarchies(len(overall))))
    a, b = rows[0], rows[-1]

    def cls(hs):
        return make_classes(hs, labels=list(h.ground), overall=overall, hierarchy=h)

    t = min(1.0, TCloseness("s", 0, "hierarchical").figure(cls([a, b])))
    model = TCloseness("s", t, "hierarchical")
    assert model.holds(cls([a, b])).all()
    assert model.holds(cls([np.add(a, b)])).all()


@SETTINGS
@given(histograms(max_classes=2), st.sampled_from(["k", "distinct"]))
def test_monotone_with_suppression_models_survive_any_merge(data, kind):
    # a satisfying class merged with ANY class satisfies: generalizing never adds violators
    rows, overall = data
    a, b = rows[0], rows[-1]
    model = KAnonymity(int(sum(a))) if kind == "k" else DistinctLDiversity("s", ref_distinct(a))
    assert model.monotone_with_suppression
    assert model.holds(make_classes([a], overall=overall)).all()
    assert model.holds(make_classes([np.add(a, b)], overall=overall)).all()


@pytest.mark.parametrize("model, good, bad", [
    (EntropyLDiversity("s", 2), [1, 1], [20, 0]),
    (RecursiveCLDiversity("s", 2, 2), [1, 1], [20, 0]),
    (TCloseness("s", 0.1, "equal"), [1, 1], [20, 0]),
    (TCloseness("s", 0.1, "ordered"), [1, 1], [20, 0]),
    (TCloseness("s", 0.1, "hierarchical"), [1, 1], [20, 0]),
])
def test_models_not_monotone_with_suppression_have_a_counterexample(model, good, bad):
    # merging a satisfying class into a violating one violates: the suppressed records grow
    flat = Hierarchy.from_rows([["0", "*"], ["1", "*"]])
    overall = [21, 21]

    def cls(h):
        return make_classes([h], labels=["0", "1"], overall=overall, hierarchy=flat)

    assert not model.monotone_with_suppression and model.monotone
    assert model.holds(cls(good)).all() and not model.holds(cls(bad)).any()
    assert not model.holds(cls(np.add(good, bad))).any()


def test_monotonicity_flags():
    assert KAnonymity(2).monotone and KAnonymity(2).monotone_with_suppression
    assert DistinctLDiversity("s", 2).monotone_with_suppression


# -- TOML round trip ------------------------------------------------------------------------

ROUND_TRIP = [
    KAnonymity(5),
    DistinctLDiversity("dx", 3),
    EntropyLDiversity("dx", 2.5),
    EntropyLDiversity("dx", 3),
    RecursiveCLDiversity("dx", 3, 2),
    RecursiveCLDiversity("dx", 0.5, 4),
    TCloseness("dx", 0.2),
    TCloseness("salary", 0.15, "ordered"),
    TCloseness("dx", 0.3, "hierarchical", hierarchy={"csv": "hierarchies/dx.csv"}),
]


@pytest.mark.parametrize("model", ROUND_TRIP, ids=repr)
def test_to_dict_round_trips_through_toml(model):
    text = tomli_w.dumps({"privacy": [model.to_dict()]})
    back = model_from_toml(tomllib.loads(text)["privacy"][0])
    assert back == model and type(back) is type(model)
    assert back.to_dict() == model.to_dict()
    assert hash(back) == hash(model)


def test_to_dict_carries_the_hierarchy_table():
    table = TCloseness("dx", 0.3, "hierarchical", hierarchy={"csv": "h.csv"}).to_dict()
    assert table == {"model": "t-closeness", "attribute": "dx", "t": 0.3,
                     "distance": "hierarchical", "hierarchy": {"csv": "h.csv"}}
    assert "hierarchy" not in TCloseness("dx", 0.3).to_dict()


def test_every_model_is_registered():
    assert set(MODELS) == {"k-anonymity", "distinct-l-diversity", "entropy-l-diversity",
                           "recursive-cl-diversity", "t-closeness", "average-risk",
                           "sample-uniqueness", "population-uniqueness", "k-map",
                           "beta-likeness", "delta-disclosure", "delta-presence",
                           "differential-privacy", "individual-risk"}
    assert str(DistinctLDiversity("dx", 3)) == "distinct-l-diversity of 'dx' (l = 3)"


# -- validation -----------------------------------------------------------------------------


def dx_domain(counts=(3, 2, 0)):
    labels = np.array(["flu", "gout", "hiv"], dtype=object)
    return {"dx": SensitiveDomain("dx", labels, np.array(counts))}


@pytest.mark.parametrize("make, pattern", [
    (lambda: KAnonymity(0), r"k-anonymity: k must be a whole number >= 1, got 0"),
    (lambda: KAnonymity(2.5), r"k must be a whole number"),
    (lambda: KAnonymity(True), r"k must be a whole number"),
    (lambda: DistinctLDiversity("dx", 0), r"distinct-l-diversity: l must be a whole number"),
    (lambda: DistinctLDiversity("", 2), r"attribute must be a column name"),
    (lambda: EntropyLDiversity("dx", 0.5), r"entropy-l-diversity: l must be >= 1, got 0.5"),
    (lambda: EntropyLDiversity("dx", "3"), r"l must be a number, got '3'"),
    (lambda: RecursiveCLDiversity("dx", 0, 2), r"recursive-cl-diversity: c must be > 0, got 0"),
    (lambda: RecursiveCLDiversity("dx", -1.5, 2), r"c must be > 0, got -1.5"),
    (lambda: RecursiveCLDiversity("dx", 2, 0), r"l must be a whole number >= 1, got 0"),
    (lambda: TCloseness("dx", 1.5), r"t-closeness: t must be between 0 and 1, got 1.5"),
    (lambda: TCloseness("dx", -0.1), r"t must be between 0 and 1"),
    (lambda: TCloseness("dx", float("nan")), r"t must be a number"),
    (lambda: TCloseness("dx", 0.2, "manhattan"), r"unknown distance 'manhattan'.*'ordered'"),
    (lambda: TCloseness("dx", 0.2, "equal", hierarchy={"csv": "x.csv"}),
     r"hierarchy is given .* distance is 'equal'.*hierarchical"),
])
def test_constructor_errors(make, pattern):
    with pytest.raises(BlendinError, match=pattern) as info:
        make()
    assert info.value.fix


@pytest.mark.parametrize("model, pattern, fix", [
    (KAnonymity(20), r"k = 20 is larger than the table \(10 records\)", "k <= 10"),
    (DistinctLDiversity("dx", 3), r"l = 3 but 'dx' has only 2 distinct value", "l <= 2"),
    (EntropyLDiversity("dx", 2.5), r"l = 2.5 but 'dx' has only 2 distinct", "l <= 2"),
    (RecursiveCLDiversity("dx", 3, 3), r"l = 3 but 'dx' has only 2", "l <= 2"),
    (DistinctLDiversity("age", 2), r"'age', which is not sensitive \(sensitive: 'dx'\)",
     "add 'age' to the sensitive"),
    (TCloseness("zip", 0.2), r"t-closeness names attribute 'zip'", "sensitive"),
    (TCloseness("dx", 0.2, "hierarchical"), r"needs a hierarchy of 'dx'", "hierarchy = {"),
])
def test_validate_errors(model, pattern, fix):
    with pytest.raises(BlendinError, match=pattern) as info:
        model.validate(10, dx_domain())
    assert fix in info.value.fix


def test_validate_accepts_what_can_be_met():
    for model in (KAnonymity(10), DistinctLDiversity("dx", 2), EntropyLDiversity("dx", 2),
                  RecursiveCLDiversity("dx", 2, 2), TCloseness("dx", 0.2, "ordered")):
        model.validate(10, dx_domain())
    h = Hierarchy.from_rows([["flu", "*"], ["gout", "*"], ["hiv", "*"]])
    domains = {"dx": SensitiveDomain("dx", h.ground, np.array([3, 2, 0]), h)}
    TCloseness("dx", 0.2, "hierarchical").validate(10, domains)


def test_validate_rechecks_parameters_changed_after_construction():
    model = TCloseness("dx", 0.2)
    model.t = 2.0
    with pytest.raises(BlendinError, match="between 0 and 1"):
        model.validate(10, dx_domain())


def test_model_hierarchy_must_cover_the_data():
    h = Hierarchy.from_rows([["flu", "*"], ["gout", "*"]])
    with pytest.raises(BlendinError, match=r"does not cover 1 value.*'hiv'") as info:
        TCloseness("dx", 0.2, "hierarchical", hierarchy=h).validate(10, dx_domain())
    assert "add these values" in info.value.fix


def test_domain_hierarchy_must_match_the_histogram():
    h = Hierarchy.from_rows([["flu", "*"], ["gout", "*"]])
    domains = {"dx": SensitiveDomain("dx", np.array(["flu", "gout", "hiv"], dtype=object),
                                     np.array([1, 1, 1]), h)}
    with pytest.raises(BlendinError, match="has 2 values but the data has 3"):
        TCloseness("dx", 0.2, "hierarchical").validate(3, domains)


def test_missing_histogram_is_named():
    classes = make_classes([[1, 1]], name="dx")
    with pytest.raises(BlendinError, match="no histogram of 'zip'"):
        DistinctLDiversity("zip", 2).holds(classes)


@pytest.mark.parametrize("table, pattern, fix", [
    ({"k": 5}, r"has no model \(keys: 'k'\)", "'k-anonymity'"),
    ({"model": "k-anonimity", "k": 5}, r"unknown privacy model 'k-anonimity'",
     "did you mean 'k-anonymity'"),
    ({"model": "k-anonymty"}, r"unknown privacy model", "'t-closeness'"),
    ({"model": "differential-privacy"}, r"is missing epsilon, delta",
     "epsilon = 2, delta = 1e-6"),
    ({"model": "k-anonymity", "k": 5, "l": 2}, r"'k-anonymity': unknown key\(s\) 'l'",
     "use only: k"),
    ({"model": "distinct-l-diversity", "l": 2}, r"is missing attribute",
     'attribute = "diagnosis"'),
    ({"model": "recursive-cl-diversity", "attribute": "dx"}, r"is missing c, l",
     "c = 3, l = 3"),
    ({"model": "t-closeness", "attribute": "dx"}, r"is missing t", "t = 0.2"),
    ({"model": "t-closeness", "attribute": "dx", "t": 0.2, "distance": "hierarchical",
      "hierarchy": "dx.csv"}, r"hierarchy must be an inline table", "hierarchy = {...}"),
    ({"model": "entropy-l-diversity", "attribute": "dx", "l": 0},
     r"l must be >= 1", "l = 2"),
    ("k = 5", r"must be a table", "[[privacy]]"),
])
def test_model_from_toml_errors(table, pattern, fix):
    with pytest.raises(BlendinError, match=pattern) as info:
        model_from_toml(table)
    assert fix in info.value.fix


def test_entropy_of_a_single_value_is_exactly_zero():
    classes = make_classes([[7, 0], [1, 0], [3, 3]])
    assert EntropyLDiversity("s", 1).per_class(classes).tolist()[:2] == [1.0, 1.0]
    assert EntropyLDiversity("s", 1).figure(classes) == 1.0


def test_models_pickle_and_serve_several_tables():
    import pickle

    model = TCloseness("s", 0.5, "ordered")
    forward = make_classes([[1, 0, 0, 0]], labels=["1", "2", "3", "4"], overall=[1, 1, 1, 1])
    shuffled = make_classes([[1, 0, 0, 0]], labels=["2", "1", "3", "4"], overall=[1, 1, 1, 1])
    for _ in range(2):  # prepared orders are kept per table and never mixed up
        assert model.distances(forward) == pytest.approx([(0.75 + 0.5 + 0.25) / 3])
        assert model.distances(shuffled) == pytest.approx([(0.25 + 0.5 + 0.25) / 3])
    cold = pickle.loads(pickle.dumps(model))
    assert cold == model and cold.distances(forward) == pytest.approx([0.5])


def test_repr_reads_back():
    h = {"csv": "dx.csv"}
    for model in (*ROUND_TRIP, TCloseness("dx", 0.3, "hierarchical", hierarchy=h)):
        assert eval(repr(model)) == model  # noqa: S307 (our own repr)


def test_hierarchy_given_as_builder_or_toml_table():
    from blendin.hierarchy.builders import flat

    classes = make_classes([[2, 0, 1], [0, 3, 1]], labels=["a", "b", "c"])
    equal = TCloseness("s", 0.5).distances(classes)
    for spec in (flat(), {"flat": True}):
        model = TCloseness("s", 0.5, "hierarchical", hierarchy=spec)
        assert model.distances(classes) == pytest.approx(equal)
    assert TCloseness("s", 0.5, "hierarchical", hierarchy=flat()).to_dict()["hierarchy"] == {
        "flat": True}
