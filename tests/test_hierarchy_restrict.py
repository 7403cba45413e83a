"""Building and cutting hierarchies by codes gives what building them from rows gives.

The references here are the straightforward constructions: a hierarchy cut down to the
data's values is ``from_rows`` of the rows kept (plus the missing label's branch), labels in
order of first appearance found with a dict, domain counts matched by label text, numbers
parsed from the values kept.
"""

import dataclasses
import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin.errors import BlendinError
from blendin.hierarchy.arx import from_csv, to_csv
from blendin.hierarchy.core import SUPPRESSED, Hierarchy, restrict
from blendin.hierarchy.intervals import parse_numbers
from blendin.models import KAnonymity
from blendin.spec import Spec


def from_rows_reference(rows, kind="categorical", numbers=None):
    """Rows sorted by their value; each level's labels in order of first appearance."""
    order = sorted(range(len(rows)), key=lambda i: str(rows[i][0]))
    rows = [[str(x) for x in rows[i]] for i in order]
    labels, codes = [], []
    for level in range(len(rows[0])):
        seen: dict[str, int] = {}
        codes.append([seen.setdefault(row[level], len(seen)) for row in rows])
        labels.append(np.array(list(seen), dtype=object))
    for level in range(1, len(rows[0]) - 1):
        if len({(row[level], row[level + 1]) for row in rows}) > len(labels[level]):
            raise BlendinError("not a tree")
    if numbers is not None:
        numbers = np.asarray(numbers, dtype=float)[order]
    return Hierarchy(tuple(labels), np.array(codes, np.int32), kind, numbers)


def restrict_reference(whole, values, missing):
    """The rows of the values kept (and a branch for an uncovered missing label) built
    again; each label counts the ground values of ``whole`` (by text) it covers."""
    values = sorted({str(v) for v in values})
    ground = [str(g) for g in whole.ground]
    uncovered = [v for v in values if v not in ground and v != missing]
    if uncovered:
        raise BlendinError("does not cover")
    if not values:
        raise BlendinError("has no rows")
    branch = missing in values and missing not in ground
    if set(values) == set(ground):
        return whole
    keep = [g in values for g in ground]
    rows = [row for row, k in zip(whole.to_rows(), keep) if k]
    numbers = None if whole.numbers is None else list(whole.numbers[keep])
    if branch:
        rows.append([missing] * (whole.height - 1) + [SUPPRESSED] if whole.height > 1
                    else [missing])
        numbers = None if numbers is None else [*numbers, np.nan]
    cut = from_rows_reference(rows, whole.kind, numbers)
    leaves = []
    for level in range(cut.height):
        counts = (whole.domain_leaves[level] if whole.domain_leaves is not None else
                  np.bincount(whole.codes[level], minlength=len(whole.labels[level])))
        known = dict(zip(whole.labels[level].tolist(), np.asarray(counts).tolist()))
        added = [cut.labels[level][cut.codes[level][g]] for g, v in enumerate(cut.ground)
                 if v not in ground]
        leaves.append(np.array([known.get(label, 0) + added.count(label)
                                for label in cut.labels[level]], np.int64))
    size = (whole.domain_size or len(ground)) + int(branch)
    return dataclasses.replace(cut, domain_leaves=tuple(leaves), domain_size=size)


def assert_same(got: Hierarchy, want: Hierarchy) -> None:
    assert [list(x) for x in got.labels] == [list(x) for x in want.labels]
    assert all(x.dtype == object for x in got.labels)
    assert got.codes.dtype == np.int32 and got.codes.tolist() == want.codes.tolist()
    assert got.kind == want.kind
    if want.numbers is None:
        assert got.numbers is None
    else:
        np.testing.assert_array_equal(got.numbers, want.numbers)
    if want.domain_leaves is None:
        assert got.domain_leaves is None
    else:
        assert [list(x) for x in got.domain_leaves] == [list(x) for x in want.domain_leaves]
        assert all(np.asarray(x).dtype == np.int64 for x in got.domain_leaves)
    assert got.domain_size == want.domain_size


@st.composite
def trees(draw):
    """A hierarchy as rows: labels of a level are a function of the level below."""
    ground = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "?", "", "10", "2",
                                            "x y", "é"]), min_size=1, max_size=8,
                           unique=True))
    height = draw(st.integers(1, 4))
    rows = [[g] for g in ground]
    for level in range(1, height):
        if level == height - 1 and draw(st.booleans()):
            parent = {label: SUPPRESSED for label in {r[-1] for r in rows}}
        else:
            width = draw(st.integers(1, 3))
            parent = {label: f"L{level}-{i % width}" if draw(st.booleans()) else "?"
                      for i, label in enumerate(sorted({r[-1] for r in rows}))}
        for row in rows:
            row.append(parent[row[-1]])
    return draw(st.permutations(rows))


@settings(max_examples=300, deadline=None)
@given(rows=trees(), data=st.data())
def test_restrict_by_codes_equals_building_the_rows_kept(rows, data):
    try:
        whole = Hierarchy.from_rows(rows)
    except BlendinError:  # the drawn labels met ("?" under two parents): not a tree
        return
    if data.draw(st.booleans()):
        whole = dataclasses.replace(whole, numbers=np.arange(len(whole.ground), dtype=float))
    if data.draw(st.booleans()):
        leaves = tuple(np.bincount(c, minlength=len(lab)) * 2 for c, lab in
                       zip(whole.codes, whole.labels))
        whole = dataclasses.replace(whole, domain_leaves=leaves,
                                    domain_size=2 * len(whole.ground))
    missing = data.draw(st.sampled_from(["", "?", "NA", "a"]))
    values = data.draw(st.lists(st.sampled_from([*whole.ground.tolist(), missing, "zz"]),
                                max_size=10))
    try:
        want = restrict_reference(whole, values, missing)
    except BlendinError as error:
        with pytest.raises(BlendinError, match=re.escape(error.problem)):
            restrict(whole, np.array(values, dtype=object), "col", missing)
        return
    got = restrict(whole, np.array(values, dtype=object), "col", missing)
    if want is whole:
        assert got is whole
    else:
        assert_same(got, want)


@settings(max_examples=200, deadline=None)
@given(rows=trees())
def test_from_rows_equals_the_straightforward_construction(rows):
    try:
        got = Hierarchy.from_rows(rows)
    except BlendinError as error:
        with pytest.raises(BlendinError, match=error.problem.split(": ")[-1]):
            from_rows_reference(rows)
        return
    assert_same(got, from_rows_reference(rows))


def test_from_rows_names_repeated_values_in_order():
    with pytest.raises(BlendinError, match=r"listed more than once: 'b', 'a'"):
        Hierarchy.from_rows([["b", "*"], ["a", "*"], ["b", "*"], ["a", "*"], ["b", "*"]])


def test_one_value_and_only_the_missing_label():
    whole = Hierarchy.from_rows([["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
    assert restrict(whole, ["2"], "n", "").to_rows() == [["2", "1-2", "*"]]
    only_missing = restrict(whole, ["?"], "n", "?")
    assert only_missing.to_rows() == [["?", "?", "*"]]
    assert only_missing.domain_size == 4
    assert_same(only_missing, restrict_reference(whole, ["?"], "?"))
    flat = Hierarchy.from_rows([["x"], ["y"]])
    assert restrict(flat, ["", "y"], "n", "").to_rows() == [[""], ["y"]]
    with pytest.raises(BlendinError, match="has no rows"):
        restrict(whole, [], "n", "")


def with_kind_reference(hierarchy, kind, missing):
    """Numbers parsed from the ground values present (not the missing label)."""
    ground = hierarchy.ground
    present = ground != missing
    numbers = np.full(len(ground), np.nan)
    if kind == "numeric":
        numbers[present] = parse_numbers(ground[present], "col")
        return dataclasses.replace(hierarchy, kind="numeric", numbers=numbers)
    try:
        numbers[present] = parse_numbers(ground[present], "col")
    except BlendinError:
        return hierarchy
    if not present.any():
        return hierarchy
    return dataclasses.replace(hierarchy, kind="numeric", numbers=numbers)


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.sampled_from(["1", "2.5", "-3", "x", "?", "", "1e999", " 7"]),
                       max_size=6, unique=True),
       missing=st.sampled_from(["", "?", "1"]), kind=st.sampled_from([None, "numeric"]))
def test_from_csv_numbers_parsed_once_equal_parsing_the_values_kept(tmp_path_factory, values,
                                                                  missing, kind):
    ground = ["1", "2.5", "-3", "x", "?", "1e999", " 7"]
    whole = Hierarchy.from_rows([[g, "g" if g[:1].isdigit() else "h", "*"] for g in ground])
    path = to_csv(whole, tmp_path_factory.mktemp("h") / "h.csv")
    builder = from_csv(path, kind=kind)
    whole = builder._hierarchy
    try:
        cut = restrict_reference(whole, values, missing)
        want = with_kind_reference(cut, kind, missing)
    except BlendinError as error:
        with pytest.raises(BlendinError, match=re.escape(error.problem)):
            builder.build(np.array(values, dtype=object), "col", missing)
        return
    assert_same(builder.build(np.array(values, dtype=object), "col", missing), want)


def test_build_hierarchies_reads_a_dictionary_column_as_its_values():
    sex = Hierarchy.from_rows([["f", "*"], ["m", "*"], ["x", "*"]])
    spec = Spec(quasi_identifiers={"sex": from_csv_free(sex)}, models=[KAnonymity(2)])
    plain = pa.table({"sex": ["m", None, "m"]})
    column = pa.chunked_array([pa.array(["m", None]).dictionary_encode(),
                               pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int32()),
                                                              pa.array(["m", "f", "x"]))])
    for table in (plain, pa.table({"sex": column})):
        built = spec.build_hierarchies(table)["sex"]
        assert built.to_rows() == [["", "*"], ["m", "*"]]


def from_csv_free(hierarchy):
    from blendin.hierarchy.fixed import fixed

    return fixed(hierarchy)


def test_from_csv_gives_the_whole_file_with_its_kind_made_once(tmp_path):
    path = to_csv(Hierarchy.from_rows([["1", "1-2", "*"], ["2", "1-2", "*"], ["?", "?", "*"]]),
                  tmp_path / "n.csv")
    builder = from_csv(path)
    whole = builder.given()
    assert builder.given() is whole  # prepare asks for it on every run
    assert whole.kind == "categorical" and whole.to_rows() == builder._hierarchy.to_rows()
    numeric = from_csv(to_csv(Hierarchy.from_rows([["1", "*"], ["2", "*"]]), tmp_path / "m.csv"))
    assert numeric.given().kind == "numeric" and numeric.given().numbers.tolist() == [1.0, 2.0]
    assert builder.build(["1", "2"], "n", "?").kind == "numeric"  # "?" absent from the data
