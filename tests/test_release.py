"""Applying a full-domain node to rows: known answers and brute-force comparisons."""

from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin.engines.kernels import recode, recode_all
from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.hierarchy.core import Hierarchy
from blendin.lattice import violating_classes
from blendin.models import DistinctLDiversity, KAnonymity
from blendin.plan import ClassKeyer, plan_node

AGE = Hierarchy.from_rows([
    ["21", "20-29", "*"], ["22", "20-29", "*"], ["23", "20-29", "*"], ["24", "20-29", "*"],
    ["35", "30-39", "*"], ["36", "30-39", "*"], ["37", "30-39", "*"], ["51", "50-59", "*"],
])
SEX = Hierarchy.from_rows([["f", "*"], ["m", "*"]])


def people() -> pd.DataFrame:
    return pd.DataFrame({
        "name": ["ann", "bob", "cy", "di", "ed", "flo", "gus", "hal"],
        "age": [21, 22, 23, 24, 35, 36, 37, 51],
        "dx": ["flu", "gout", "flu", "cold", "flu", "flu", "gout", "cold"],
        "sex": ["f", "f", "m", "m", "f", "f", "f", "m"],
        "visits": [1, 2, 3, 4, 5, 6, 7, 8],
    })


def recoding_for(df, levels, k, **kw):
    ft = FrequencyTable.from_table(df, {"age": AGE, "sex": SEX}, ["dx"])
    return plan_node(ft, levels, [KAnonymity(k)], **kw)


def test_known_release_drop():
    df = people()
    rec = recoding_for(df, [1, 0], 2, identifiers=["name"])
    # classes at (decade, sex): 20-29/f 2, 20-29/m 2, 30-39/f 3, 50-59/m 1 -> hal suppressed
    assert rec.suppressed_records == 1
    out = recode(pa.Table.from_pandas(df), rec).to_pandas()
    assert list(out.columns) == ["age", "dx", "sex", "visits"]
    assert out.age.tolist() == ["20-29"] * 4 + ["30-39"] * 3
    assert out.sex.tolist() == ["f", "f", "m", "m", "f", "f", "f"]
    assert out.dx.tolist() == df.dx.tolist()[:7]
    assert out.visits.tolist() == list(range(1, 8))


def test_known_release_keep_marks_every_qi():
    df = people()
    rec = recoding_for(df, [1, 0], 2, identifiers=["name"])
    out = recode(pa.Table.from_pandas(df), rec, "keep").to_pandas()
    assert len(out) == 8
    assert out.iloc[7][["age", "sex"]].tolist() == ["*", "*"]
    assert out.iloc[7][["dx", "visits"]].tolist() == ["cold", 8]
    assert out.age.tolist()[:7] == ["20-29"] * 4 + ["30-39"] * 3


def test_top_level_and_no_suppression():
    df = people()
    rec = recoding_for(df, [2, 1], 3)
    assert rec.suppressed_records == 0
    out = recode(pa.Table.from_pandas(df), rec).to_pandas()
    assert set(out.age) == {"*"} and set(out.sex) == {"*"}
    assert "name" in out.columns  # not named an identifier here: kept


def test_bad_mode_and_uncovered_value():
    df = people()
    rec = recoding_for(df, [1, 0], 2)
    with pytest.raises(BlendinError, match="drop"):
        recode(pa.Table.from_pandas(df), rec, "hide")
    other = df.assign(age=[21, 22, 23, 24, 35, 36, 37, 99])
    with pytest.raises(BlendinError, match="'99'"):
        recode(pa.Table.from_pandas(other), rec)


def test_chunks_give_the_same_release():
    df = people()
    rec = recoding_for(df, [1, 0], 2, identifiers=["name"])
    table = pa.Table.from_pandas(df)
    whole = recode(table, rec, "keep")
    pieces = recode_all(table.to_batches(max_chunksize=3), rec, "keep")
    assert pieces.equals(whole)


def brute_force_release(df, hier, levels, k):
    """Plain Python: label every row, count classes; rows of classes of at least k kept."""
    maps = {q: {row[0]: row[levels[q]] for row in h.to_rows()} for q, h in hier.items()}
    labelled = [tuple(maps[q][str(v)] for q, v in zip(hier, vals))
                for vals in zip(*(df[q] for q in hier))]
    sizes = Counter(labelled)
    kept = [sizes[lab] >= k for lab in labelled]
    return [lab for lab, keep in zip(labelled, kept) if keep], kept


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_release_matches_brute_force(data):
    seed = data.draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    n = data.draw(st.integers(1, 60))
    df = pd.DataFrame({"a": rng.integers(0, 8, n), "b": rng.integers(0, 5, n),
                       "s": rng.choice(["x", "y"], n)})
    hier = {
        "a": Hierarchy.from_rows([[str(i), f"{i // 2}", f"{i // 4}", "*"] for i in range(8)]),
        "b": Hierarchy.from_rows([[str(i), "lo" if i < 2 else "hi", "*"] for i in range(5)]),
    }
    levels = {"a": data.draw(st.integers(0, 3)), "b": data.draw(st.integers(0, 2))}
    k = data.draw(st.integers(1, 6))
    ft = FrequencyTable.from_table(df, hier, ["s"])
    rec = plan_node(ft, [levels["a"], levels["b"]], [KAnonymity(k)])
    chunk = data.draw(st.integers(1, 20))
    out = recode_all(pa.Table.from_pandas(df).to_batches(max_chunksize=chunk), rec)
    expected, kept = brute_force_release(df, hier, levels, k)
    assert list(zip(out.column("a").to_pylist(), out.column("b").to_pylist())) == expected
    assert rec.suppressed_records == n - len(expected)
    assert out.column("s").to_pylist() == [s for s, keep in zip(df.s, kept) if keep]


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_class_keys_identify_tuples_even_when_radices_overflow(data):
    n_cols = data.draw(st.integers(1, 8))
    radices = [data.draw(st.sampled_from([2, 3, 1000, 2**20, 2**40])) for _ in range(n_cols)]
    rows = data.draw(st.integers(1, 30))
    seed = data.draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, min(r, 4), rows) for r in radices], axis=1)
    keyer = ClassKeyer(radices, codes)
    keys = keyer(codes)
    # same tuple <-> same key
    _, tuple_ids = np.unique(codes, axis=0, return_inverse=True)
    _, key_ids = np.unique(keys, return_inverse=True)
    assert (keys >= 0).all()
    assert len(set(zip(tuple_ids.ravel().tolist(), key_ids.tolist()))) == len(set(
        tuple_ids.ravel().tolist())) == len(set(keys.tolist()))
    # keys do not depend on the chunk
    half = rows // 2
    assert np.array_equal(np.concatenate([keyer(codes[:half]), keyer(codes[half:])]), keys)


def test_unknown_tuples_get_negative_keys_after_overflow():
    radices = [2**40, 2**40]
    known = np.array([[1, 2], [3, 4]])
    keyer = ClassKeyer(radices, known)
    assert keyer.ranks  # the overflow path is used
    assert (keyer(np.array([[2, 2], [7, 0]])) < 0).all()
    assert (keyer(known) >= 0).all()


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 3), st.integers(0, 2), st.integers(1, 5))
def test_violating_classes_agree_with_the_frequency_table(seed, la, lb, k):
    rng = np.random.default_rng(seed)
    n = 80
    df = pd.DataFrame({"a": rng.integers(0, 8, n), "b": rng.integers(0, 5, n),
                       "s": rng.choice(["x", "y", "z"], n), "u": rng.choice(["p", "q"], n)})
    hier = {
        "a": Hierarchy.from_rows([[str(i), f"{i // 2}", f"{i // 4}", "*"] for i in range(8)]),
        "b": Hierarchy.from_rows([[str(i), "lo" if i < 2 else "hi", "*"] for i in range(5)]),
    }
    ft = FrequencyTable.from_table(df, hier, ["s", "u"])
    models = [KAnonymity(k), DistinctLDiversity("s", 2)]
    bad, class_of_tuple, classes = violating_classes(ft, [la, lb], models)
    reference, ref_of_tuple = ft.classes_at([la, lb])
    assert np.array_equal(class_of_tuple, ref_of_tuple)
    assert np.array_equal(classes.sizes, reference.sizes)
    assert np.array_equal(classes.histograms["s"], reference.histograms["s"])
    assert "u" not in classes.histograms  # no model reads it
    expected = (reference.sizes < k) | ((reference.histograms["s"] > 0).sum(axis=1) < 2)
    assert np.array_equal(bad, expected)


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(st.integers(0, 300), max_size=60), extra=st.sampled_from([0, 1, 10**6]))
def testunique_inverse_is_numpys(keys, extra):
    """The sort-free inverse (small key spaces) and np.unique's (large ones) agree, empty and
    repeated keys included."""
    from blendin.codes import unique_inverse

    key = np.array(keys, dtype=np.int64)
    span = int(key.max()) + 1 + extra if len(key) else 1 + extra
    inverse, count = unique_inverse(key, span)
    uniq, want = np.unique(key, return_inverse=True)
    assert count == len(uniq)
    assert np.array_equal(inverse, want.reshape(-1))


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(st.integers(-5, 300), max_size=60), by_sort=st.booleans())
def test_factorized_groups_keys_as_numpy_does(keys, by_sort):
    """Hashed or sorted (whatever the keys' order), each key's group holds that key, one
    group per distinct key: np.unique's classes, in some order."""
    from blendin import codes

    key = np.array(keys, dtype=np.int64)
    with pytest.MonkeyPatch.context() as patch:
        if by_sort:
            patch.setattr(codes, "SORTED_GROUPS_ROWS", 1)
            patch.setattr(codes, "RUN_SHARE", 0)
        inverse, groups = codes.factorized(key)
    assert inverse.dtype == np.int64 and len(inverse) == len(key)
    assert np.array_equal(groups[inverse], key)
    assert sorted(groups.tolist()) == np.unique(key).tolist()
    if by_sort and len(key):
        assert np.all(np.diff(groups) > 0)  # in key order
