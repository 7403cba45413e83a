"""Hierarchy builders: known answers, tree properties (hypothesis), errors, TOML round trips."""

import datetime as dt
import math
import tomllib
from decimal import Decimal

import numpy as np
import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin.errors import BlendinError
from blendin.hierarchy.builders import as_builder, builder_from_toml, fixed, flat
from blendin.hierarchy.core import Hierarchy
from blendin.hierarchy.dates import dates
from blendin.hierarchy.intervals import intervals
from blendin.hierarchy.masking import masking
from blendin.hierarchy.tree import tree


def rows_by_value(h: Hierarchy) -> dict[str, list[str]]:
    return {row[0]: row for row in h.to_rows()}


def assert_valid_tree(h: Hierarchy, values) -> None:
    """Checked in plain Python: rows of equal length, one top, each level a function of the
    one below, and every group at level i+1 exactly the union of the groups it covers."""
    rows = h.to_rows()
    assert sorted(r[0] for r in rows) == sorted(set(map(str, values)))
    assert len({len(r) for r in rows}) == 1
    assert {r[-1] for r in rows} == {"*"}
    for level in range(h.height - 1):
        parent: dict[str, str] = {}
        members: dict[str, set] = {}
        for r in rows:
            assert parent.setdefault(r[level], r[level + 1]) == r[level + 1]
            members.setdefault(r[level + 1], set()).add(r[level])
        groups_below = {}
        for r in rows:
            groups_below.setdefault(r[level], set()).add(r[0])
        for label, children in members.items():
            covered = set().union(*(groups_below[c] for c in children))
            assert covered == {r[0] for r in rows if r[level + 1] == label}
    for level in range(h.height):  # codes agree with labels
        assert [r[level] for r in sorted(rows)] == [
            str(x) for _, x in sorted(zip(h.ground, h.label_array(level)))]


# ---------------------------------------------------------------------------------------------
# intervals


def test_intervals_age_29():
    h = intervals(5, 10, 20).build(np.array(["29", "31", "40"], dtype=object), "age")
    assert rows_by_value(h)["29"] == ["29", "25-29", "20-29", "20-39", "*"]
    assert rows_by_value(h)["40"] == ["40", "40-44", "40-49", "40-59", "*"]
    assert h.kind == "numeric"
    assert dict(zip(h.ground, h.numbers)) == {"29": 29.0, "31": 31.0, "40": 40.0}


def test_intervals_negative_and_non_integer_labels():
    h = intervals(5).build(["-3", "7"])
    assert rows_by_value(h)["-3"][1] == "[-5, -1]"
    assert rows_by_value(h)["7"][1] == "5-9"
    h = intervals(10).build(["20.7", "3"])
    assert rows_by_value(h)["20.7"][1] == "[20, 30)"
    assert rows_by_value(h)["3"][1] == "[0, 10)"
    h = intervals(0.1, 0.2).build(["0.3", "0.29"])  # 0.3 / 0.1 < 3 in floating point
    assert rows_by_value(h)["0.3"][1:3] == ["[0.3, 0.4)", "[0.2, 0.4)"]
    assert rows_by_value(h)["0.29"][1] == "[0.2, 0.3)"
    h = intervals(1).build(["4", "4.0"])  # integral values written with a decimal point
    assert rows_by_value(h)["4.0"][1] == "4"


def test_intervals_bottom_top_coding_clips_intervals():
    h = intervals(5, 10, bottom=18, top=78).build(["12", "18", "19", "77", "78", "90"])
    r = rows_by_value(h)
    assert r["12"] == ["12", "<18", "<18", "*"]
    assert r["18"] == ["18", "18-19", "18-19", "*"]
    assert r["77"] == ["77", "75-77", "70-77", "*"]
    assert r["78"][1:] == [">=78", ">=78", "*"]
    assert r["90"][1:] == [">=78", ">=78", "*"]


def test_intervals_missing_label_keeps_its_branch():
    h = intervals(5, 10).build(["29", "", "31"], "age")
    assert rows_by_value(h)[""] == ["", "", "", "*"]
    assert math.isnan(dict(zip(h.ground, h.numbers))[""])
    h = intervals(5).build(["29", "NA"], "age", missing="NA")
    assert rows_by_value(h)["NA"] == ["NA", "NA", "*"]


@pytest.mark.parametrize(
    ("widths", "kwargs", "match"),
    [
        ((5, 12), {}, "not a multiple"),
        ((10, 5), {}, "not a multiple"),
        ((5, 5), {}, "not a multiple"),
        ((0,), {}, "not a positive number"),
        (("5",), {}, "not a positive number"),
        ((), {}, "no widths"),
        ((5,), {"bottom": 50, "top": 10}, "bottom must be below top"),
        ((5,), {"top": "x"}, "top 'x' is not a number"),
    ],
)
def test_intervals_rejects_bad_parameters(widths, kwargs, match):
    with pytest.raises(BlendinError, match=match):
        intervals(*widths, **kwargs)


def test_intervals_names_column_and_values_that_are_not_numbers():
    with pytest.raises(BlendinError, match=r"'age'.*2 value.*'abc', 'x1'") as err:
        intervals(5).build(["1", "abc", "x1", ""], "age")
    assert "fix:" in str(err.value)


finite = st.integers(-10_000, 10_000)
chains = st.tuples(st.sampled_from([1, 2, 5, 10, 0.5, 0.25, 2.5, 0.1]),
                   st.lists(st.integers(2, 4), max_size=3))


def _expected_interval(x: Decimal, w: Decimal) -> tuple[Decimal, Decimal]:
    lo = (x / w).to_integral_value(rounding="ROUND_FLOOR") * w
    return lo, lo + w


def _parse_label(label: str, integer: bool):
    if label.startswith("["):
        a, b = label[1:-1].split(", ")
        return Decimal(a), Decimal(b) + (1 if label.endswith("]") else 0)
    if "-" in label[1:]:
        a, b = label.split("-", 1) if not label.startswith("-") else label.rsplit("-", 1)
        return Decimal(a), Decimal(b) + 1
    return Decimal(label), Decimal(label) + 1


@settings(max_examples=60, deadline=None)
@given(st.lists(finite, min_size=1, max_size=40), chains, st.booleans(),
       st.one_of(st.none(), finite), st.one_of(st.none(), st.integers(1, 5000)))
def test_intervals_property_every_value_in_its_interval(ints, chain, decimals, bottom, span):
    first, factors = chain
    widths = [first]
    for f in factors:
        widths.append(widths[-1] * f if isinstance(first, int) else round(widths[-1] * f, 6))
    top = None if span is None else (bottom if bottom is not None else -5000) + span
    texts = sorted({str(Decimal(i) / 100) if decimals else str(i) for i in ints})
    h = intervals(*widths, bottom=bottom, top=top).build(np.array(texts, dtype=object), "x")
    assert_valid_tree(h, texts)
    integer = not decimals or all(Decimal(t) == int(Decimal(t)) for t in texts)
    integer = integer and all(float(w).is_integer() for w in widths)
    for row in h.to_rows():
        x = Decimal(row[0])
        for w, label in zip(widths, row[1:-1]):
            if bottom is not None and x < bottom:
                assert label == f"<{bottom}"
                continue
            if top is not None and x >= top:
                assert label == f">={top}"
                continue
            lo, hi = _expected_interval(x, Decimal(repr(w)))
            lo = max(lo, bottom) if bottom is not None else lo
            hi = min(hi, top) if top is not None else hi
            if integer:
                got = _parse_label(label, True)
            else:
                assert label.startswith("[") and label.endswith(")")
                a, b = label[1:-1].split(", ")
                got = Decimal(a), Decimal(b)
            assert got == (lo, hi), (row, w, label)
            assert got[0] <= x < got[1]


# ---------------------------------------------------------------------------------------------
# masking


def test_masking_zip():
    h = masking().build(["02138", "02139", "10001"], "zip")
    assert rows_by_value(h)["02138"] == ["02138", "0213*", "021**", "02***", "0****", "*"]
    assert h.height == 6 and h.kind == "categorical" and h.numbers is None


def test_masking_width_pads_digit_codes_and_keeps_ground():
    h = masking(width=5, char="#").build(["2138", "02139", ""], "zip")
    assert rows_by_value(h)["2138"] == ["2138", "0213#", "021##", "02###", "0####", "*"]
    assert rows_by_value(h)[""] == ["", "", "", "", "", "*"]


def test_masking_errors():
    with pytest.raises(BlendinError, match=r"'zip'.*different widths.*masking\(width=5\)"):
        masking().build(["2138", "02139"], "zip")
    with pytest.raises(BlendinError, match="longer than 4"):
        masking(width=4).build(["02139"], "zip")
    with pytest.raises(BlendinError, match="not digits.*'ab'"):
        masking(width=4).build(["ab", "1234"], "code")
    with pytest.raises(BlendinError, match="one character"):
        masking(char="**")
    with pytest.raises(BlendinError, match="positive integer"):
        masking(width=0)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6).flatmap(
    lambda w: st.lists(st.text("0123456789AB", min_size=w, max_size=w), min_size=1,
                       max_size=30)))
def test_masking_property(codes):
    h = masking().build(np.array(codes, dtype=object), "code")
    assert_valid_tree(h, codes)
    width = len(codes[0])
    for row in h.to_rows():
        for j, label in enumerate(row[1:-1], start=1):
            assert label == row[0][: width - j] + "*" * j


# ---------------------------------------------------------------------------------------------
# dates

LADDER = ("day", "half-month", "month", "quarter", "half-year", "year", "decade", "century")


def test_dates_ladder():
    h = dates(*LADDER).build(["2017-01-17", "20170105"], "dob")
    assert rows_by_value(h)["2017-01-17"][1:] == [
        "2017-01-17", "201701H2", "2017-01", "2017-Q1", "2017-H1", "2017", "2010-2019",
        "2000-2099", "*"]
    assert rows_by_value(h)["20170105"][1:3] == ["2017-01-05", "201701H1"]
    assert h.kind == "date"
    assert dict(zip(h.ground, h.numbers))["2017-01-17"] == (
        dt.date(2017, 1, 17) - dt.date(1970, 1, 1)).days


def test_dates_subset_format_missing_and_boundaries():
    h = dates("half-month", "year", format="%d/%m/%Y").build(
        ["15/02/2016", "16/02/2016", "29/02/2016", ""], "dob")
    r = rows_by_value(h)
    assert r["15/02/2016"] == ["15/02/2016", "201602H1", "2016", "*"]
    assert r["16/02/2016"][1] == r["29/02/2016"][1] == "201602H2"
    assert r[""] == ["", "", "", "*"]
    assert dates().levels == ("month", "quarter", "year", "decade")
    h = dates("quarter", "half-year").build(["2017-07-01", "2017-06-30T23:59:00"])
    assert rows_by_value(h)["2017-07-01"][1:] == ["2017-Q3", "2017-H2", "*"]
    assert rows_by_value(h)["2017-06-30T23:59:00"][1:] == ["2017-Q2", "2017-H1", "*"]


def test_dates_errors():
    with pytest.raises(BlendinError, match=r"'dob'.*'2017-02-29', 'soon'.*format"):
        dates("year").build(["2017-02-29", "soon", "2016-02-29"], "dob")
    with pytest.raises(BlendinError, match=r"1 value\(s\) that are not dates.*: '31/02/2017';"):
        dates("year", format="%d/%m/%Y").build(["31/02/2017", "1/2/2017"], "dob")
    with pytest.raises(BlendinError, match="unknown level 'week'.*day, half-month"):
        dates("week")
    with pytest.raises(BlendinError, match="fine to coarse"):
        dates("year", "month")
    with pytest.raises(BlendinError, match="fine to coarse"):
        dates("year", "year")


def test_a_format_for_text_takes_a_column_held_as_dates():
    """A spec written for a CSV file (format = "%d/%m/%Y") refused the same data held as
    dates (Parquet, a DataFrame read with parse_dates), which blendin reads as ISO text:
    "not dates in the format '%d/%m/%Y': '2017-01-05'", the fix naming the format given."""
    import pyarrow as pa

    import blendin as bl

    builder = dates("month", format="%d/%m/%Y")
    typed = builder.build(["2017-01-05", "2017-02-06 13:30:00.000000", ""], "dob")
    assert rows_by_value(typed)["2017-02-06 13:30:00.000000"] == [
        "2017-02-06 13:30:00.000000", "2017-02", "*"]
    text = builder.build(["05/01/2017", "06/02/2017"], "dob")
    assert rows_by_value(text)["06/02/2017"] == ["06/02/2017", "2017-02", "*"]
    with pytest.raises(BlendinError, match=r"not dates in the format '%d/%m/%Y': '2017-01-05'"):
        builder.build(["05/01/2017", "2017-01-05"], "dob")  # a text column of two formats
    spec = bl.Spec(quasi_identifiers={"dob": builder}, models=[bl.KAnonymity(2)])
    table = pa.table({"dob": [dt.date(2017, 1, 5), dt.date(2017, 1, 6)], "n": [1, 2]})
    assert bl.anonymize(table, spec).data.column("dob").to_pylist() == ["2017-01"] * 2
    # a format that reads no date is refused as written, before ISO values could hide it
    for bad in ("%Q", "abc", "%d/%m"):
        with pytest.raises(BlendinError, match=f"format '{bad}' reads no date"):
            dates("month", format=bad)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.dates(dt.date(1800, 1, 1), dt.date(2200, 12, 31)), min_size=1,
                max_size=40),
       st.lists(st.sampled_from(LADDER), min_size=1, unique=True))
def test_dates_property(days, levels):
    levels = sorted(levels, key=LADDER.index)
    texts = sorted({d.isoformat() for d in days})
    h = dates(*levels).build(np.array(texts, dtype=object), "d")
    assert_valid_tree(h, texts)
    for row in h.to_rows():
        d = dt.date.fromisoformat(row[0])
        expected = {
            "day": d.isoformat(),
            "half-month": f"{d.year:04d}{d.month:02d}H{1 if d.day <= 15 else 2}",
            "month": f"{d.year:04d}-{d.month:02d}",
            "quarter": f"{d.year:04d}-Q{(d.month - 1) // 3 + 1}",
            "half-year": f"{d.year:04d}-H{(d.month - 1) // 6 + 1}",
            "year": f"{d.year:04d}",
            "decade": f"{d.year // 10 * 10:04d}-{d.year // 10 * 10 + 9:04d}",
            "century": f"{d.year // 100 * 100:04d}-{d.year // 100 * 100 + 99:04d}",
        }
        assert row[1:-1] == [expected[lv] for lv in levels]


# ---------------------------------------------------------------------------------------------
# tree, flat, fixed

MARITAL = {
    "Married": ["Married-civ-spouse", "Married-AF-spouse", "Married-spouse-absent"],
    "Not-married": {"Alone": ["Divorced", "Separated", "Widowed"], "Never-married": None},
}


def test_tree_pads_shallow_leaves_with_their_own_value():
    values = ["Married-civ-spouse", "Divorced", "Never-married"]
    h = tree(MARITAL).build(values, "marital-status")
    r = rows_by_value(h)
    assert r["Divorced"] == ["Divorced", "Alone", "Not-married", "*"]
    assert r["Married-civ-spouse"] == ["Married-civ-spouse", "Married-civ-spouse", "Married",
                                       "*"]
    assert r["Never-married"] == ["Never-married", "Never-married", "Not-married", "*"]
    assert_valid_tree(h, values)
    h = tree({"*": {"a": ["x"], "b": ["y"]}}).build(["x", "y", ""])
    assert h.height == 3 and rows_by_value(h)[""] == ["", "", "*"]


def test_tree_errors():
    with pytest.raises(BlendinError, match="'Divorced' is listed more than once"):
        tree({"a": ["Divorced"], "b": ["Divorced"]})
    with pytest.raises(BlendinError, match=r"does not cover 1 value.*'Single'"):
        tree(MARITAL).build(["Divorced", "Single"], "marital-status")
    with pytest.raises(BlendinError, match="neither a group nor a list"):
        tree({"a": "x"})
    with pytest.raises(BlendinError, match="non-empty mapping"):
        tree({})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2), max_size=3), min_size=1, max_size=25))
def test_tree_property(paths):
    mapping: dict = {}
    for i, path in enumerate(paths):  # leaf i under groups named by their path
        node = mapping
        for depth in range(len(path)):
            node = node.setdefault(f"g{'.'.join(map(str, path[:depth + 1]))}", {})
        node[f"v{i}"] = None
    h = tree(mapping).build(np.array([f"v{i}" for i in range(len(paths))], dtype=object))
    assert_valid_tree(h, [f"v{i}" for i in range(len(paths))])
    depth = max(len(p) for p in paths)
    for row in h.to_rows():
        path = paths[int(row[0][1:])]
        groups = [f"g{'.'.join(map(str, path[:d + 1]))}" for d in range(len(path))]
        assert row == [row[0]] * (1 + depth - len(path)) + groups[::-1] + ["*"]


def test_flat():
    h = flat().build(np.array(["m", "f", "m"], dtype=object), "sex")
    assert h.to_rows() == [["f", "*"], ["m", "*"]] and h.height == 2


def test_fixed_checks_coverage_and_restricts():
    h = Hierarchy.from_rows([["a", "x", "*"], ["b", "x", "*"], ["c", "y", "*"]])
    assert fixed(h).build(["a", "b", "c"]) is h
    assert fixed(h).build(["c", ""]).to_rows() == [["", "", "*"], ["c", "y", "*"]]
    with pytest.raises(BlendinError, match=r"does not cover 2 value.*'d', 'e'"):
        fixed(h).build(["a", "d", "e"], "letter")
    with pytest.raises(BlendinError, match="to_csv"):
        fixed(h).to_toml()
    assert as_builder(h) == fixed(h)
    assert as_builder(flat()) == flat()
    with pytest.raises(BlendinError, match="builder"):
        as_builder("intervals")


# ---------------------------------------------------------------------------------------------
# TOML


@pytest.mark.parametrize(
    "builder",
    [
        intervals(5, 10, 20),
        intervals(0.5, 1, bottom=0, top=90.5),
        masking(),
        masking(5, char="#"),
        dates(),
        dates("month", "quarter", format="%Y%m%d"),
        tree(MARITAL),
        flat(),
    ],
)
def test_toml_round_trip(builder):
    table = builder.to_toml(None)
    text = tomli_w.dumps({"h": table})
    again = builder_from_toml(tomllib.loads(text)["h"], None)
    assert again == builder
    assert again.to_toml(None) == table


def test_toml_tables():
    assert builder_from_toml({"intervals": [5, 10, 20], "bottom": 0, "top": 90}) == intervals(
        5, 10, 20, bottom=0, top=90)
    assert builder_from_toml({"masking": 5}) == masking(5)
    assert builder_from_toml({"masking": True}) == masking()
    assert builder_from_toml({"dates": ["month", "quarter"], "format": "%Y%m%d"}) == dates(
        "month", "quarter", format="%Y%m%d")
    assert builder_from_toml({"tree": {"a": ["x"]}}) == tree({"a": ["x"]})


@pytest.mark.parametrize(
    ("table", "match"),
    [
        ({"intervals": [5], "widths": 3}, r"unknown key 'widths'.*intervals, bottom, top"),
        ({"interval": [5]}, r"unknown key 'interval'.*csv, intervals, masking, dates"),
        ({"intervals": [5], "format": "%Y"}, r"unknown key 'format'.*intervals, bottom, top"),
        ({"intervals": [5], "masking": 5}, "exactly one of"),
        ({}, "exactly one of"),
        ({"masking": "yes"}, "not a width"),
        ({"flat": False}, "flat = true"),
        ({"dates": 5}, "list of levels"),
        ("flat", "must be a TOML table"),
    ],
)
def test_toml_errors(table, match):
    with pytest.raises(BlendinError, match=match):
        builder_from_toml(table, None)
