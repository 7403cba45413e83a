import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import blendin as bl
from blendin.codes import combine_keys
from blendin.hierarchy.core import Hierarchy


def test_hierarchy_rows_round_trip():
    rows = [["29", "25-29", "*"], ["31", "30-34", "*"], ["27", "25-29", "*"]]
    h = Hierarchy.from_rows(rows)
    assert sorted(h.to_rows()) == sorted(rows)
    assert h.height == 3


def test_hierarchy_rejects_non_tree():
    rows = [["a", "x", "1"], ["b", "x", "2"]]
    with pytest.raises(bl.BlendinError, match="not a tree"):
        Hierarchy.from_rows(rows)


def test_hierarchy_rejects_ragged_rows():
    with pytest.raises(bl.BlendinError, match="different lengths"):
        Hierarchy.from_rows([["a", "*"], ["b", "x", "*"]])


def test_encode_names_uncovered_values():
    h = Hierarchy.from_rows([["a", "*"], ["b", "*"]])
    import pyarrow as pa

    with pytest.raises(bl.BlendinError, match="'c'"):
        h.encode(pa.array(["a", "c"]), "letter")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "d", "z", None]), min_size=1,
                         max_size=12), min_size=1, max_size=4))
def test_encode_dictionaries_one_after_another_as_the_texts_say(columns):
    """A hierarchy keeps the codes of the last dictionary it looked up: each column, whatever
    came before, gets the codes its own texts have (z and a null are not covered)."""
    h = Hierarchy.from_rows([["a", "*"], ["b", "*"], ["c", "*"], ["d", "*"]])
    for values in columns:
        column = pa.array(values, pa.string()).dictionary_encode()
        if "z" in values or None in values:
            with pytest.raises(bl.BlendinError, match="does not cover"):
                h.encode(column, "letter")
            continue
        assert h.encode(column, "letter").tolist() == ["abcd".index(v) for v in values]
        # the same texts in another order of entries
        reordered = pa.DictionaryArray.from_arrays(
            pa.array([sorted(set(values), reverse=True).index(v) for v in values], pa.int32()),
            pa.array(sorted(set(values), reverse=True)))
        assert h.encode(reordered, "letter").tolist() == ["abcd".index(v) for v in values]


def test_frequency_table_counts_match_pandas():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.integers(0, 4, 500), "b": rng.integers(0, 3, 500),
                       "s": rng.choice(["x", "y", "z"], 500)})
    ha = Hierarchy.from_rows([[str(i), str(i // 2), "*"] for i in range(4)])
    hb = Hierarchy.from_rows([[str(i), "*"] for i in range(3)])
    ft = bl.FrequencyTable.from_table(df, {"a": ha, "b": hb}, ["s"])
    expected = df.groupby(["a", "b"]).size()
    assert ft.n_records == 500
    assert sorted(ft.counts.tolist()) == sorted(expected.tolist())
    classes, _ = ft.classes_at([1, 1])
    by_half = df.assign(h=df.a // 2).groupby("h")
    assert sorted(classes.sizes.tolist()) == sorted(by_half.size().tolist())
    labels = list(classes.domains["s"].labels)
    hist = by_half.s.value_counts().unstack(fill_value=0)[labels]
    assert sorted(map(tuple, classes.histograms["s"].tolist())) == sorted(
        map(tuple, hist.to_numpy().tolist()))


def test_combine_keys_distinct_for_distinct_rows():
    codes = np.array([[0, 1], [1, 0], [1, 1], [0, 1]])
    key = combine_keys(codes, [2, 2])
    assert key[0] == key[3] and len(set(key.tolist())) == 3


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 2**40), min_size=1, max_size=4), st.integers(1, 30),
       st.integers(0, 2**32))
def test_combine_keys_of_columns_equal_those_of_their_matrix(radices, rows, seed):
    """A list of columns keys as its (rows, columns) matrix does, past int64 too (ranks):
    equal keys for equal rows only."""
    rng = np.random.default_rng(seed)
    columns = [rng.integers(0, min(r, 3), rows, dtype=np.int32) for r in radices]
    matrix = np.stack(columns, axis=1)
    listed, stacked = combine_keys(columns, radices), combine_keys(matrix, radices)
    assert listed.tolist() == stacked.tolist()
    same = (matrix[:, None, :] == matrix[None, :, :]).all(axis=2)
    assert ((listed[:, None] == listed[None, :]) == same).all()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2), st.integers(0, 6),
                          st.sampled_from("xyz")), min_size=1, max_size=60))
def test_frequency_table_tuples_sorted_and_counted_like_rows(rows):
    """The tuples come out in row-wise sorted order of their codes, each counted once, with
    the sensitive histogram of its rows (whatever the grouping trick inside)."""
    df = pd.DataFrame(rows, columns=["a", "b", "c", "s"]).astype(str)
    hiers = {c: Hierarchy.from_rows([[str(i), "*"] for i in range(n)])
             for c, n in (("a", 6), ("b", 3), ("c", 7))}
    ft = bl.FrequencyTable.from_table(df, hiers, ["s"])
    codes = np.stack([hiers[c].encode(pa.array(df[c]), c) for c in "abc"], axis=1)
    expected, inverse = np.unique(codes, axis=0, return_inverse=True)
    assert ft.tuples.tolist() == expected.tolist()
    assert ft.counts.tolist() == np.bincount(inverse.reshape(-1)).tolist()
    labels = list(ft.domains["s"].labels)
    for i, row in enumerate(expected):
        mine = df[(codes == row).all(axis=1)].s.value_counts()
        assert ft.sensitive["s"][i].tolist() == [int(mine.get(v, 0)) for v in labels]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.sampled_from("xyz"),
                          st.sampled_from("pq")), min_size=1, max_size=40),
       st.data())
def test_histogram_cells_are_the_nonzero_cells_of_the_straightforward_histogram(rows, draw):
    """Two sensitive attributes (so one tuple's value of either comes from several distinct
    rows): the cells are each attribute's nonzero (tuple, value) counts, in that order, and
    grouping, subsets and the dense matrix agree with counting the rows."""
    df = pd.DataFrame(rows, columns=["a", "b", "s", "t"]).astype(str)
    hiers = {c: Hierarchy.from_rows([[str(i), str(i // 2), "*"] for i in range(n)])
             for c, n in (("a", 4), ("b", 3))}
    ft = bl.FrequencyTable.from_table(df, hiers, ["s", "t"])
    codes = np.stack([hiers[c].encode(pa.array(df[c], pa.string()), c) for c in "ab"], axis=1)
    tuple_of_row = [ft.tuples.tolist().index(r) for r in codes.tolist()]
    for name in ("s", "t"):
        labels = ft.domains[name].labels.tolist()
        expected = np.zeros((len(ft.counts), len(labels)), np.int64)
        for i, value in zip(tuple_of_row, df[name]):
            expected[i, labels.index(value)] += 1
        rows_, values, counts = ft.cells[name]
        assert (rows_ * len(labels) + values).tolist() == np.flatnonzero(expected).tolist()
        assert counts.tolist() == expected[rows_, values].tolist()
        assert (ft.sensitive[name] == expected).all()
        class_of_tuple = np.asarray(draw.draw(st.lists(
            st.integers(0, 2), min_size=len(ft.counts), max_size=len(ft.counts))), np.int64)
        grouped = ft.classes(class_of_tuple, 3).histograms[name]
        assert grouped.tolist() == [expected[class_of_tuple == c].sum(axis=0).tolist()
                                    for c in range(3)]
        keep = np.asarray(draw.draw(st.lists(
            st.booleans(), min_size=len(ft.counts), max_size=len(ft.counts))), bool)
        part = ft.subset(keep)
        assert part.sensitive[name].tolist() == expected[keep].tolist()
        assert part.counts.tolist() == ft.counts[keep].tolist()
        assert part.domains is ft.domains


def test_an_empty_distinct_table_has_no_cells():
    from blendin.codes import COUNT

    h = Hierarchy.from_rows([["1", "*"]])
    empty = pa.table({"a": pa.array([], pa.string()), "s": pa.array([], pa.string()),
                      COUNT: pa.array([], pa.int64())})
    ft = bl.FrequencyTable.from_distinct(empty, {"a": h}, ["s"])
    assert len(ft.counts) == 0 and ft.cells["s"].rows.tolist() == []
    assert ft.sensitive["s"].shape == (0, 0)
    assert ft.classes(np.zeros(0, np.int64), 0).histograms["s"].shape == (0, 0)


def test_refined_key_orders_by_value_within_a_tuple_unless_int64_overflows():
    from blendin.frequency import _refined

    key, values, labels = np.array([1, 0, 1]), np.array([1, 0, 0]), np.array(["x", "y"])
    assert np.argsort(_refined(key, values, labels)).tolist() == [1, 2, 0]
    huge = np.array([2**61, 0])
    assert _refined(huge, np.array([1, 0]), labels) is huge
    assert _refined(np.zeros(0, np.int64), np.zeros(0, np.int64), labels).tolist() == []
