"""Rows to the frequency table: the dictionary-encoded group-by and the encoding from codes
against the straightforward versions (a Counter over the rows' texts, a dict per hierarchy)."""

import collections
import contextlib
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin import groupby
from blendin.codes import COUNT, as_text, distinct_texts, stable_order
from blendin.engines.kernels import decoded
from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.groupby import DistinctCounter, distinct_tuples, group_keys
from blendin.hierarchy.core import Hierarchy

TEXTS = ["a", "b", "c", "", "007", "7", "é", "*"]


@contextlib.contextmanager
def constant(module, name, value):
    """A module constant set for a block (hypothesis tests take no monkeypatch)."""
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


@st.composite
def tables(draw):
    """A table of 1-3 columns (text with nulls and empty texts, or numbers with NaN), some
    dictionary-encoded, split into batches of any sizes."""
    rows = draw(st.integers(1, 40))
    columns = {}
    for j in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            values = draw(st.lists(st.sampled_from([*TEXTS, None]), min_size=rows,
                                   max_size=rows))
            column = pa.array(values, pa.string())
        else:
            values = draw(st.lists(st.sampled_from([1.0, 2.5, -0.0, float("nan"), None]),
                                   min_size=rows, max_size=rows))
            column = pa.array(values, pa.float64())
        if draw(st.booleans()):
            column = column.dictionary_encode()
        columns[f"c{j}"] = column
    table = pa.table(columns)
    cuts = sorted(draw(st.lists(st.integers(0, rows), max_size=4)))
    bounds = [0, *cuts, rows]
    batches = [table.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]
    return table, batches


def counted(table: pa.Table, columns, missing: str) -> collections.Counter:
    """The straightforward group-by: every row's texts, counted."""
    texts = [as_text(table.column(c), missing).to_pylist() for c in columns]
    return collections.Counter(zip(*texts))


def as_counter(distinct: pa.Table, columns) -> collections.Counter:
    table = decoded(distinct)
    rows = zip(*(table.column(c).to_pylist() for c in columns))
    return collections.Counter(dict(zip(rows, table.column(COUNT).to_pylist())))


def expected_texts(draw, columns):
    """Texts some columns are expected to hold: some of the data's, some not (a null and
    an empty text among them read as the missing text, which may be there too)."""
    sets = st.lists(st.sampled_from([*TEXTS, "1", "nan", "zzz", "?", None]), unique=True,
                    max_size=6)
    return {c: pa.array(draw(sets), pa.string()) for c in columns if draw(st.booleans())}


@contextlib.contextmanager
def merged(hashed: bool):
    """Merges as they run on small key spaces (counted densely), or as on large ones
    (through the hash table kept from merge to merge)."""
    with constant(groupby, "DENSE_FACTOR", 0 if hashed else groupby.DENSE_FACTOR), \
            constant(groupby, "DENSE_SLACK", 0 if hashed else groupby.DENSE_SLACK):
        yield


@settings(max_examples=200, deadline=None)
@given(tables(), st.sampled_from(["", "?"]), st.sampled_from([1, 3, 1 << 19]),
       st.sampled_from([1, 1 << 30]), st.booleans(), st.data())
def test_distinct_tuples_count_every_row_text_as_a_counter_does(data, missing, group_rows,
                                                                 parallel_rows, hashed, draw):
    table, batches = data
    columns = table.column_names
    expected = expected_texts(draw.draw, columns)
    counter = DistinctCounter(columns, missing, group_rows=group_rows, expected=expected)
    # some batches coded (and keyed) as a thread codes them, before the batch ahead of
    # them is added
    ahead = draw.draw(st.lists(st.booleans(), min_size=len(batches), max_size=len(batches)))
    # columns coded on threads, or not; merged densely or through the lasting hash table
    with constant(groupby, "PARALLEL_ROWS", parallel_rows), merged(hashed):
        looked = None
        for i, batch in enumerate(batches):
            early = counter.looked_up(batch) if ahead[i] else None
            if i:
                counter.add(batches[i - 1], looked)
            looked = early
        counter.add(batches[-1], looked)
        distinct = counter.result()
    if hashed:  # numbered as they first appear, however merged
        with merged(False):
            dense = DistinctCounter(columns, missing, group_rows=group_rows,
                                    expected=expected)
            for batch in batches:
                dense.add(batch)
            assert decoded(dense.result()).equals(decoded(distinct))
    assert as_counter(distinct, columns) == counted(table, columns, missing)
    assert len(set(zip(*(decoded(distinct).column(c).to_pylist() for c in columns)))) == \
        distinct.num_rows  # each tuple once
    for column in columns:  # the hierarchy builders' view: each column's distinct texts
        assert sorted(distinct_texts(distinct.column(column), missing).to_pylist()) == \
            sorted(set(as_text(table.column(column), missing).to_pylist()))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from("xyz")),
                         min_size=1, max_size=8), min_size=2, max_size=6),
       st.sampled_from([1, 5]))
def test_the_lasting_hash_table_follows_columns_that_gain_texts(batches, group_rows):
    """Merged through the table kept from merge to merge, where later batches bring texts
    that widen the tuples' keys: each tuple once, counted as a Counter counts it."""
    tables = [pa.table({"v": [v for v, _ in rows], "w": [w for _, w in rows]})
              for rows in batches]
    counter = DistinctCounter(["v", "w"], group_rows=group_rows)
    with merged(hashed=True):
        for table in tables:
            counter.add(table)
        distinct = counter.result()
    assert as_counter(distinct, ["v", "w"]) == collections.Counter(
        row for rows in batches for row in rows)
    assert distinct.num_rows == len({row for rows in batches for row in rows})


@st.composite
def released_batches(draw):
    """Batches as a recoder releases them: each column one dictionary of labels (duplicate,
    unused, empty or null entries too) shared by every batch, indices into it; a column may
    hold one label on every row, or one per batch."""
    labels = st.lists(st.sampled_from([*TEXTS, None]), min_size=1, max_size=5)
    dictionaries = [pa.array(draw(labels), pa.string()) for _ in range(draw(st.integers(1, 3)))]
    batches = []
    for _ in range(draw(st.integers(1, 4))):
        rows = draw(st.integers(1, 12))
        columns = {}
        for j, dictionary in enumerate(dictionaries):
            top = len(dictionary) - 1
            if draw(st.booleans()):  # one label on every row of the batch
                lo = hi = draw(st.integers(0, top))
            else:
                lo, hi = 0, top
            index = draw(st.lists(st.integers(lo, hi), min_size=rows, max_size=rows))
            if draw(st.booleans()):  # an equal dictionary, not the same one
                dictionary = pa.array(dictionary.to_pylist(), pa.string())
            columns[f"c{j}"] = pa.DictionaryArray.from_arrays(pa.array(index, pa.int32()),
                                                              dictionary)
        batches.append(pa.table(columns))
    return batches


@settings(max_examples=150, deadline=None)
@given(released_batches(), st.sampled_from(["", "?"]), st.sampled_from([1, 5, 1 << 19]))
def test_released_dictionaries_counted_as_their_texts(batches, missing, group_rows):
    columns = batches[0].column_names
    counter = DistinctCounter(columns, missing, group_rows=group_rows)
    with merged(hashed=len(batches) % 2 == 0):
        for batch in batches:
            counter.add(batch)
    whole = pa.concat_tables(batches, promote_options="permissive")
    assert as_counter(counter.result(), columns) == counted(whole, columns, missing)


def test_distinct_tuples_one_row_and_record_batches():
    batch = pa.record_batch({"a": pa.array(["x"]).dictionary_encode(), "b": [None]})
    assert as_counter(distinct_tuples([batch], ["a", "b"], "?"), ["a", "b"]) == {
        ("x", "?"): 1}


def test_distinct_tuples_of_a_column_of_nulls_and_of_no_rows():
    table = pa.table({"a": pa.nulls(3)})
    assert as_counter(distinct_tuples([table], ["a"], "?"), ["a"]) == {("?",): 3}
    with pytest.raises(BlendinError, match="no rows"):
        distinct_tuples([table.slice(0, 0)], ["a"])


def test_dictionary_chunks_with_different_dictionaries_and_null_indices():
    first = pa.DictionaryArray.from_arrays(pa.array([0, None, 1]), pa.array(["x", "y"]))
    second = pa.DictionaryArray.from_arrays(pa.array([1, 1]), pa.array(["unused", "x", ""]))
    table = pa.table({"a": pa.chunked_array([first, second])})
    assert as_counter(distinct_tuples([table], ["a"], "?"), ["a"]) == {
        ("x",): 3, ("?",): 1, ("y",): 1}
    assert sorted(distinct_texts(table.column("a"), "?").to_pylist()) == ["?", "x", "y"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=200))
def test_group_keys_dense_and_hashed_agree(keys):
    key = np.array(keys, np.int64)
    dense, n_dense = group_keys(key, 51)
    hashed, n_hashed = group_keys(key, 1 << 40)  # by pandas (few keys)
    with constant(groupby, "SMALL_HASH", 0):
        arrow, n_arrow = group_keys(key, 1 << 40)  # by Arrow (many keys)
    assert n_dense == n_hashed == n_arrow == len(set(keys))
    assert dense.tolist() == hashed.tolist() == arrow.tolist()
    # groups are numbered in order of first appearance
    assert dense.tolist() == [list(dict.fromkeys(keys)).index(k) for k in keys]



@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 3), st.integers(-5, 2**63 - 1)), max_size=300))
def test_stable_order_is_a_stable_argsort(keys):
    # ties (small keys), negative keys and keys too wide to pack with their positions
    key = np.array(keys, dtype=np.int64)
    assert np.array_equal(stable_order(key), np.argsort(key, kind="stable"))

def test_group_keys_counts_a_key_space_too_large_for_int64():
    counter = DistinctCounter([f"c{i}" for i in range(12)])
    values = [str(v) for v in range(60)]
    table = pa.table({f"c{i}": values[i:] + values[:i] for i in range(12)})
    counter.add(table)
    counter.add(table)
    assert math.prod(len(v.values) for v in counter.vocabularies) > 2**63
    assert sorted(counter.result().column(COUNT).to_pylist()) == [2] * 60


# -- the frequency table from the distinct tuples -------------------------------------------


def reference_table(distinct: pa.Table, hierarchies, sensitive):
    """FrequencyTable's arrays the straightforward way: a dict per hierarchy, sorted tuples."""
    table = decoded(distinct)
    names = list(hierarchies)
    index = {n: {v: i for i, v in enumerate(hierarchies[n].ground)} for n in names}
    rows = [tuple(index[n][v] for n, v in zip(names, values))
            for values in zip(*(table.column(n).to_pylist() for n in names))]
    counts = table.column(COUNT).to_pylist()
    tuples = sorted(set(rows))
    where = {t: i for i, t in enumerate(tuples)}
    total = collections.Counter()
    for row, count in zip(rows, counts):
        total[row] += count
    hists = {}
    for name in sensitive:
        values = table.column(name).to_pylist()
        labels = list(dict.fromkeys(values))
        hist = np.zeros((len(tuples), len(labels)), np.int64)
        for row, value, count in zip(rows, values, counts):
            hist[where[row], labels.index(value)] += count
        hists[name] = (labels, hist)
    return tuples, [total[t] for t in tuples], hists


def hierarchy_of(values) -> Hierarchy:
    return Hierarchy.from_rows([[v, "*"] for v in sorted(set(values))])


@settings(max_examples=120, deadline=None)
@given(tables(), st.sampled_from(["", "?"]), st.booleans(), st.data())
def test_frequency_table_from_codes_equals_the_straightforward_one(data, missing, duplicates,
                                                                  draw):
    table, batches = data
    names = table.column_names
    # expected texts leave entries no tuple uses in the dictionaries
    distinct = distinct_tuples(batches, names, missing, expected_texts(draw.draw, names))
    if duplicates:  # as a filtered or projected table may have: the same tuple twice
        distinct = pa.concat_tables([distinct, distinct])
    hierarchies = {n: hierarchy_of(distinct_texts(distinct.column(n)).to_pylist())
                   for n in names[:-1] or names}
    sensitive = names[-1:] if len(names) > 1 else []
    tuples, counts, hists = reference_table(distinct, hierarchies, sensitive)
    for given_table in (distinct, decoded(distinct)):  # dictionary-encoded, and as text
        ft = FrequencyTable.from_distinct(given_table, hierarchies, sensitive)
        assert [tuple(t) for t in ft.tuples.tolist()] == tuples
        assert ft.counts.tolist() == counts and ft.tuples.dtype == np.int32
        for name, (labels, hist) in hists.items():
            assert ft.domains[name].labels.tolist() == labels
            assert (ft.sensitive[name] == hist).all()
            assert ft.domains[name].overall.tolist() == hist.sum(axis=0).tolist()


def test_encode_a_dictionary_column_reads_only_the_used_entries():
    sex = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
    column = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1]), pa.array(["f", "m", "x"]))
    assert sex.encode(column).tolist() == [1, 0, 1]
    assert sex.encode(pa.chunked_array([column, column.slice(1)])).tolist() == [1, 0, 1, 0, 1]
    uncovered = pa.DictionaryArray.from_arrays(pa.array([2, 0, None]), column.dictionary)
    with pytest.raises(BlendinError, match=r"does not cover 2 value\(s\)"):
        sex.encode(uncovered, "sex")
    assert sex.encode(pa.chunked_array([], column.type)).tolist() == []


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=6, unique=True),
       st.randoms(use_true_random=False), st.lists(st.integers(0, 99), max_size=30),
       st.sampled_from(["ground", "shuffled", "more"]))
def test_a_dictionary_column_encodes_as_its_texts(ground, rnd, picks, dictionary_is):
    """Whether the dictionary is the ground values themselves (read as they are), in
    another order or with more entries, each row's code is its text's."""
    h = Hierarchy.from_rows([[v, "*"] for v in ground])
    entries = h.ground.tolist()
    if dictionary_is == "shuffled":
        rnd.shuffle(entries)
    elif dictionary_is == "more":
        entries.append("unused")
    indices = [p % len(h.ground) for p in picks]
    column = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(entries))
    assert h.encode(column).tolist() == h.encode(column.cast(pa.string())).tolist()


@pytest.mark.parametrize("missing", ["", "?"])
def test_a_dictionary_equal_to_the_expected_texts_is_read_as_codes(missing):
    expected = pa.array(["f", "m", "x"])
    counter = DistinctCounter(["sex"], missing, expected={"sex": expected})
    same = pa.array(["f", "m", "x"])  # equal, not the same array
    counter.add(pa.table({"sex": pa.DictionaryArray.from_arrays(pa.array([2, 0, 2]), same)}))
    other = pa.array(["m", "f"])
    counter.add(pa.table({"sex": pa.DictionaryArray.from_arrays(pa.array([0, 1]), other)}))
    counter.add(pa.table({"sex": pa.DictionaryArray.from_arrays(pa.array([1]), same)}))
    assert counter.vocabularies[0].values.to_pylist() == ["f", "m", "x"]
    assert decoded(counter.result()).to_pydict() == {"sex": ["x", "f", "m"], COUNT: [2, 2, 2]}


@pytest.mark.parametrize("missing", ["", "?"])
def test_known_texts_looked_up_and_the_few_others_encoded(missing):
    first = pa.table({"a": ["x", "y"] * 8})
    few = pa.table({"a": ["x"] * 14 + [None, "new"]})  # 1 in 8 missed: looked up
    many = pa.table({"a": ["", "z", None, "x"]})      # half missed: encoded whole
    counter = DistinctCounter(["a"], missing)
    for batch in (first, few, many):
        counter.add(batch)
    whole = pa.concat_tables([first, few, many])
    assert as_counter(counter.result(), ["a"]) == counted(whole, ["a"], missing)


def test_the_missing_text_is_coded_only_once_a_value_reads_as_it():
    entries = pa.array(["f", "m"])
    counter = DistinctCounter(["sex"], "?")
    counter.add(pa.table({"sex": pa.DictionaryArray.from_arrays(pa.array([1, 0, 1]), entries)}))
    assert counter.vocabularies[0].values.to_pylist() == ["f", "m"]
    # the same dictionary again, now with a null index: the missing text gets its code
    counter.add(pa.table({"sex": pa.DictionaryArray.from_arrays(pa.array([1, None]), entries)}))
    assert counter.vocabularies[0].values.to_pylist() == ["f", "m", "?"]
    assert decoded(counter.result()).to_pydict() == {"sex": ["m", "f", "?"], COUNT: [3, 1, 1]}


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 60), st.sampled_from([1, 7, 1 << 19]), st.integers(0, 2**31))
def test_distinct_tuples_of_a_key_space_too_large_for_int64(rows, group_rows, seed):
    """Sixteen columns of up to 60 texts: over 2**62 keys, grouped by ranks, not keys."""
    rng = np.random.default_rng(seed)
    table = pa.table({f"c{j}": pa.array(rng.integers(0, 60, rows).astype(str))
                      for j in range(16)})
    counter = DistinctCounter(table.column_names, group_rows=group_rows)
    for start in range(0, rows, 5):
        counter.add(table.slice(start, 5))
    assert as_counter(counter.result(), table.column_names) == counted(
        table, table.column_names, "")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "d", "", None]), min_size=1,
                         max_size=25), min_size=1, max_size=6),
       st.integers(0, 5), st.integers(1, 30), st.booleans())
def test_batches_looked_up_before_earlier_ones_are_added_count_the_same(batches, late,
                                                                         group_rows, encoded):
    """Threads look batches up (and code and key those whose texts are all known) against
    the texts known so far while earlier batches, still to be added, bring new ones: the
    counts are those of adding each batch in turn. Two columns, so that a key made before
    a column gained a text would count wrongly; text columns or dictionary ones (whose
    entries' codes are read where the dictionary is the last one read)."""
    def table(values: list) -> pa.Table:
        columns = {"v": pa.array(values, pa.string()),
                   "w": pa.array(values[::-1], pa.string())}
        if encoded:  # (one dictionary for all the batches: read before from the second on)
            entries = pa.array(["a", "b", "c", "d", ""])
            columns = {name: pa.DictionaryArray.from_arrays(
                pc.index_in(column, value_set=entries), entries)
                for name, column in columns.items()}
        return pa.table(columns)

    tables = [table(b) for b in batches]
    plain = DistinctCounter(["v", "w"], missing="?", group_rows=group_rows)
    ahead = DistinctCounter(["v", "w"], missing="?", group_rows=group_rows)
    found = []
    with merged(hashed=late % 2 == 1):
        for i, table in enumerate(tables):
            plain.add(table)
            found.append(ahead.looked_up(table))  # looked up before the batches before it
            if i >= late:
                ahead.add(tables[i - late], found[i - late])
        for j in range(max(0, len(tables) - late), len(tables)):
            ahead.add(tables[j], found[j])
    assert decoded(ahead.result()).to_pydict() == decoded(plain.result()).to_pydict()


@pytest.mark.parametrize("hashed", [False, True])
def test_keys_made_before_a_column_gained_a_text_are_made_again(hashed):
    """A batch keyed on a thread while a column had two texts, added after a batch that
    brought a third: its keys are made again in the new shape (the old ones would count
    ("a", "a") as ("a", "b") here)."""
    def table(v: list[str], w: list[str]) -> pa.Table:
        return pa.table({"v": pa.array(v), "w": pa.array(w)})

    first, third = table(["a", "b"], ["a", "b"]), table(["a", "b", "a"], ["b", "a", "a"])
    second = table(["a", "c"], ["c", "a"])
    plain, ahead = DistinctCounter(["v", "w"]), DistinctCounter(["v", "w"])
    with merged(hashed=hashed):
        for batch in (first, second, third):
            plain.add(batch)
        ahead.add(first, ahead.looked_up(first))
        early = ahead.looked_up(third)
        assert early.key is not None and early.shape[1] == (2, 2)
        ahead.add(second, ahead.looked_up(second))
        ahead.add(third, early)
    assert decoded(ahead.result()).to_pydict() == decoded(plain.result()).to_pydict()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-(2**62), 2**62), min_size=1, max_size=300),
       st.integers(1, 40), st.integers(1, 9))
def test_keys_grouped_in_shards_are_numbered_as_one_table_numbers_them(keys, repeat, threads):
    """Hashed on several threads, a shard of the keys each, the groups are those of one
    hash table, numbered in order of first appearance."""
    rng = np.random.default_rng(len(keys) * repeat)
    key = np.array(keys, np.int64)[rng.integers(0, len(keys), len(keys) * repeat)]
    from unittest import mock

    with mock.patch.object(groupby, "workers", lambda: threads):
        group, groups = groupby._sharded_groups(key)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    assert groups == len(first) and group.tolist() == rank[inverse.ravel()].tolist()


def test_codes_held_narrow_widen_as_a_column_gains_texts():
    """A batch's codes are held in as few bytes as the texts known then need (one byte up
    to 128 texts, two up to 32,768): batches coded narrow, then wider, count as their
    texts, and the kept codes read back as the rows' texts."""
    values = [f"v{i}" for i in range(40_000)]
    batches = [values[:100], values[:100] + values[100:300], values[300:], values[::7]]
    tables = [pa.table({"v": pa.array(b, pa.string()), "w": pa.array(
        [str(len(b) % 3)] * len(b), pa.string())}) for b in batches]
    counter = DistinctCounter(["v", "w"], group_rows=150, keep_codes=True)
    for table in tables:
        counter.add(table)
    assert [c[0].dtype for c in counter.batch_codes] == [np.int8, np.int16, np.int32, np.int32]
    whole = pa.concat_tables(tables)
    assert as_counter(counter.result(), ["v", "w"]) == counted(whole, ["v", "w"], "")
    assert counter.codes("v").cast(pa.string()).to_pylist() == whole.column("v").to_pylist()
