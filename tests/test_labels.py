import datetime as dt

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin.errors import BlendinError
from blendin.hierarchy.core import Hierarchy
from blendin.hierarchy.dates import dates
from blendin.hierarchy.intervals import intervals
from blendin.hierarchy.masking import masking
from blendin.labels import covers, guess_kind, parse_dates, parse_numeric, parse_values


def _covers_by_hand(label: str, value: str) -> bool:
    """Plain-Python reading of integer interval, bound, mask and star labels."""
    if label == "*" or label == value:
        return True
    if label.endswith("*"):
        prefix = label.rstrip("*")
        return len(value) == len(label) and value.startswith(prefix)
    x = float(value)
    if label.startswith(">="):
        return x >= float(label[2:])
    if label.startswith("<"):
        return x < float(label[1:])
    if label.startswith("["):
        lo, hi = (float(p) for p in label[1:-1].split(","))
        return lo <= x < hi if label.endswith(")") else lo <= x <= hi
    if "-" in label[1:]:
        lo, hi = label.split("-")
        return float(lo) <= x <= float(hi)
    return float(label) == x


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 120), min_size=1, max_size=30), st.integers(1, 30))
def test_numeric_labels_match_plain_python(values, width):
    lo = np.array(values) // width * width
    labels = [f"{a}-{a + width - 1}" for a in lo] + ["<10", ">=80", "[5, 25)", "[-3, 7]", "*",
                                                       "1**", "42"]
    text = [str(v) for v in values] + ["-2", "100"]
    matrix = covers(labels, text, "numeric")
    expected = [[_covers_by_hand(label, v) for v in text] for label in labels]
    assert matrix.tolist() == expected


@pytest.mark.parametrize("levels", [
    ("half-month", "month", "quarter", "half-year", "year", "decade", "century"),
])
def test_date_labels_of_the_builder_cover_exactly_their_days(levels):
    rng = np.random.default_rng(5)
    days = rng.integers(-20000, 20000, size=300)
    values = np.unique(np.datetime64("1970-01-01") + days.astype("timedelta64[D]")).astype(str)
    h = dates(*levels).build(values.astype(object), "dob")
    values = h.ground.astype(str)
    for level in range(1, h.height):
        labels = h.labels[level].astype(str)
        matrix = covers(labels, values, "date")
        truth = h.label_array(level).astype(str)[None, :] == labels[:, None]
        assert (matrix == truth).all(), levels[level - 1]


def test_date_label_bounds_by_calendar():
    labels = ["2016-02", "2016-Q1", "2016-H2", "201602H2", "201602H1", "2016", "1990-1999",
              "1900-1999", "2016-02-29", "2016-01-30..2016-03-02", "x", "*"]
    first, last = parse_dates(labels)

    def day(s):
        return (dt.date.fromisoformat(s) - dt.date(1970, 1, 1)).days

    expected = [("2016-02-01", "2016-02-29"), ("2016-01-01", "2016-03-31"),
                ("2016-07-01", "2016-12-31"), ("2016-02-16", "2016-02-29"),
                ("2016-02-01", "2016-02-15"), ("2016-01-01", "2016-12-31"),
                ("1990-01-01", "1999-12-31"), ("1900-01-01", "1999-12-31"),
                ("2016-02-29", "2016-02-29"), ("2016-01-30", "2016-03-02")]
    for i, (a, b) in enumerate(expected):
        assert (first[i], last[i]) == (day(a), day(b)), labels[i]
    assert np.isnan(first[-2:]).all()


def test_interval_labels_of_the_builder_cover_exactly_their_values():
    values = np.array([str(v) for v in range(-5, 100, 3)] + ["2.5", "79.5"], dtype=object)
    h = intervals(5, 10, bottom=10, top=80).build(values, "age")
    values = h.ground
    for level in range(1, h.height):
        labels = h.labels[level].astype(str)
        truth = h.label_array(level).astype(str)[None, :] == labels[:, None]
        assert (covers(labels, values, "numeric") == truth).all()


def test_fractional_interval_labels():
    values = np.array(["3.5", "34.25", "5", "2.5"], dtype=object)
    h = intervals(2.5, 10).build(values, "x")
    values = h.ground
    for level in range(1, h.height):
        labels = h.labels[level].astype(str)
        truth = h.label_array(level).astype(str)[None, :] == labels[:, None]
        assert (covers(labels, values, "numeric") == truth).all()


def test_mask_labels_of_the_builder_cover_exactly_their_codes():
    values = np.array(["02138", "02139", "02141", "02445", "10001", "02138"], dtype=object)
    distinct = np.unique(values)
    h = masking().build(distinct, "zip")
    distinct = h.ground
    for level in range(1, h.height):
        labels = h.labels[level].astype(str)
        truth = h.label_array(level).astype(str)[None, :] == labels[:, None]
        assert (covers(labels, distinct, "categorical") == truth).all()
        assert (covers(labels, distinct, "numeric") == truth).all()


def test_mask_needs_the_same_width():
    assert covers(["021**"], ["0213", "021388", "02138"]).ravel().tolist() == [
        False, False, True]


def test_sets_and_hierarchy_labels():
    h = Hierarchy.from_rows([["Married", "Has married", "*"], ["Divorced", "Has married", "*"],
                             ["Never married", "Never married", "*"]])
    labels = ["{Divorced,Married}", "Has married", "Never married", "*", "Widowed"]
    values = ["Married", "Divorced", "Never married", "Widowed"]
    with_tree = covers(labels, values, hierarchy=h)
    assert with_tree.astype(int).tolist() == [
        [1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [1, 1, 1, 1], [0, 0, 0, 1]]
    without = covers(labels, values)
    assert without[1].tolist() == [False, False, False, False]


def test_missing_values_are_only_covered_by_star_and_themselves():
    assert covers(["30-39", "*", ""], ["", "34"], "numeric").astype(int).tolist() == [
        [0, 1], [1, 1], [1, 0]]


def test_parse_numeric_open_bounds():
    lo, hi = parse_numeric(["(1, 2)", "<=5", ">5", "[0.5, 1.5)"])
    assert lo[0] > 1 and hi[0] < 2 and np.isneginf(lo[1]) and hi[1] == 5
    assert lo[2] > 5 and np.isposinf(hi[2]) and hi[3] < 1.5


def test_guess_kind_and_parse_errors():
    assert guess_kind(["1965-03-07", "1970-12-01"]) == "date"
    assert guess_kind(["34", "-1.5", ""]) == "numeric"
    assert guess_kind(["M", "F"]) == "categorical"
    with pytest.raises(BlendinError, match="'dob'.*'1965-02-30'"):
        parse_values(["1965-02-30", "1965-02-03"], "date", "dob")
    with pytest.raises(BlendinError, match="'age'.*'old'"):
        covers(["30-39"], ["34", "old"], "numeric", name="age")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sets(st.sampled_from("abcde"), min_size=1, max_size=3), max_size=6),
       st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=8))
def test_set_and_equal_labels_with_repeats(sets, values):
    labels = ["{" + ",".join(sorted(s)) + "}" for s in sets] + values[:3] + ["*"]
    expected = [[label == "*" or v == label or (label.startswith("{") and v in
                                                 label[1:-1].split(","))
                 for v in values] for label in labels]
    assert covers(labels, values).tolist() == expected
