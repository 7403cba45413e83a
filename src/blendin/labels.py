"""Reading released labels back: which original values does a label cover?

A release shows generalized values (``30-39``, ``021**``, ``1965-03``, ``{a,b}``, ``*``); an
attacker who knows a person's exact value can tell which released records may be that
person. :func:`covers` answers this for all distinct labels × all distinct values of a
column at once, following the label conventions every builder writes:

- numbers: ``20-29`` (inclusive), ``[-5, 4]``, ``[20.5, 30.5)``, ``<20``, ``>=80``;
- masking: ``021**`` (same width as the value, ``*`` hides a character);
- dates: ``2017-01-05``, ``201701H1``/``201701H2``, ``2017-01``, ``2017-Q1``, ``2017-H1``,
  ``2017``, ``2010-2019``, ``2000-2099``, ``2017-01-05..2017-03-02``;
- sets ``{Married-AF-spouse,Married-civ-spouse}``; ``*`` covers everything;
- any other label covers the value equal to it, or, given the attribute's Hierarchy, every
  value that has it as an ancestor.

Labels are parsed once per column into numeric bounds (days for dates) with vectorized
regular expressions; the match is a broadcast comparison, never a loop over rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.errors import BlendinError, preview
from blendin.hierarchy.core import SUPPRESSED, Hierarchy

KINDS = ("numeric", "date", "categorical")

_NUM = r"-?\d+(?:\.\d+)?"
#: numeric label forms: (regex, lower-bound group, upper-bound group, closedness)
_NUMERIC_FORMS = (
    (rf"^(?P<lo>{_NUM})$", "lo", "lo", "[]"),
    (r"^(?P<lo>\d+(?:\.\d+)?)-(?P<hi>\d+(?:\.\d+)?)$", "lo", "hi", "[]"),
    (rf"^\[\s*(?P<lo>{_NUM})\s*,\s*(?P<hi>{_NUM})\s*\]$", "lo", "hi", "[]"),
    (rf"^\[\s*(?P<lo>{_NUM})\s*,\s*(?P<hi>{_NUM})\s*\)$", "lo", "hi", "[)"),
    (rf"^\(\s*(?P<lo>{_NUM})\s*,\s*(?P<hi>{_NUM})\s*\]$", "lo", "hi", "(]"),
    (rf"^\(\s*(?P<lo>{_NUM})\s*,\s*(?P<hi>{_NUM})\s*\)$", "lo", "hi", "()"),
    (rf"^<\s*(?P<hi>{_NUM})$", None, "hi", "[)"),
    (rf"^<=\s*(?P<hi>{_NUM})$", None, "hi", "[]"),
    (rf"^>\s*(?P<lo>{_NUM})$", "lo", None, "(]"),
    (rf"^>=\s*(?P<lo>{_NUM})$", "lo", None, "[]"),
)

_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%d.%m.%Y")


def parse_numeric(labels: Sequence[str] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Closed bounds ``(lo, hi)`` of numeric labels; NaN where a label is not numeric.

    Open ends become the nearest representable float inside the interval, so every test is
    ``lo <= x <= hi``.

    >>> lo, hi = parse_numeric(["30-39", "[20.5, 30.5)", ">=80", "x"])
    >>> lo.tolist()[:3], float(hi[1]) < 30.5, bool(np.isnan(lo[3]))
    ([30.0, 20.5, 80.0], True, True)
    """
    text = _arrow_text(labels)
    lo = np.full(len(text), np.nan)
    hi = np.full(len(text), np.nan)
    for pattern, lo_group, hi_group, closed in _NUMERIC_FORMS:
        found = pc.extract_regex(text, pattern)
        hit = np.asarray(found.is_valid().to_numpy(zero_copy_only=False)) & np.isnan(lo)
        if not hit.any():
            continue
        found = found.filter(pa.array(hit))
        lo_values = _group(found, lo_group, -np.inf)
        hi_values = _group(found, hi_group, np.inf)
        if closed[0] == "(":
            lo_values = np.nextafter(lo_values, np.inf)
        if closed[1] == ")":
            hi_values = np.nextafter(hi_values, -np.inf)
        lo[hit], hi[hit] = lo_values, hi_values
    return lo, hi


def _group(found: pa.Array, group: str | None, default: float) -> np.ndarray:
    if group is None:
        return np.full(len(found), default)
    values = pc.cast(pc.fill_null(found.field(group), "nan"), pa.float64())
    return values.to_numpy(zero_copy_only=False)


def _days(year: np.ndarray, month: np.ndarray, day: np.ndarray | int = 1) -> np.ndarray:
    """Days since 1970-01-01 of (year, month, day) arrays (month 13 is next January)."""
    months = (year.astype(np.int64) - 1970) * 12 + (month.astype(np.int64) - 1)
    first = months.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    return first + np.asarray(day, dtype=np.int64) - 1


def _ints(found: pa.Array, group: str) -> np.ndarray:
    values = pc.cast(pc.fill_null(found.field(group), "1"), pa.int64())
    return values.to_numpy(zero_copy_only=False)


def parse_dates(labels: Sequence[str] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Day bounds ``(first, last)`` (days since 1970-01-01, inclusive) of date labels.

    NaN where a label is not a date label.

    >>> first, last = parse_dates(["2017-02", "2017-Q1", "201701H2", "2010-2019"])
    >>> [str(np.datetime64(int(d), "D")) for d in last]
    ['2017-02-28', '2017-03-31', '2017-01-31', '2019-12-31']
    """
    text = _arrow_text(labels)
    first = np.full(len(text), np.nan)
    last = np.full(len(text), np.nan)

    def take(pattern: str, bounds) -> None:
        found = pc.extract_regex(text, pattern)
        hit = np.asarray(found.is_valid().to_numpy(zero_copy_only=False)) & np.isnan(first)
        if hit.any():
            lo, hi = bounds(found.filter(pa.array(hit)))
            first[hit], last[hit] = lo, hi

    def years(found, a="y", b="y"):
        y0, y1 = _ints(found, a), _ints(found, b)
        return _days(y0, np.ones_like(y0)), _days(y1 + 1, np.ones_like(y1)) - 1

    def months(found, span):
        y, m = _ints(found, "y"), _ints(found, "m")
        start = (m - 1) // span * span + 1 if span > 1 else m
        return _days(y, start), _days(y, start + span) - 1

    take(r"^(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})$",
         lambda f: (_days(_ints(f, "y"), _ints(f, "m"), _ints(f, "d")),) * 2)
    take(r"^(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\.\.(?P<y2>\d{4})-(?P<m2>\d{2})-(?P<d2>\d{2})$",
         lambda f: (_days(_ints(f, "y"), _ints(f, "m"), _ints(f, "d")),
                    _days(_ints(f, "y2"), _ints(f, "m2"), _ints(f, "d2"))))
    take(r"^(?P<y>\d{4})(?P<m>\d{2})H(?P<h>[12])$", _half_month)
    take(r"^(?P<y>\d{4})-(?P<m>\d{2})$", lambda f: months(f, 1))
    take(r"^(?P<y>\d{4})-Q(?P<q>[1-4])$",
         lambda f: months(_with_month(f, "q", 3), 3))
    take(r"^(?P<y>\d{4})-H(?P<h>[12])$",
         lambda f: months(_with_month(f, "h", 6), 6))
    take(r"^(?P<y>\d{4})$", years)
    take(r"^(?P<y>\d{4})-(?P<y2>\d{4})$", lambda f: years(f, "y", "y2"))
    return first, last


def _with_month(found: pa.Array, group: str, span: int) -> pa.Array:
    """Replace a quarter/half number by the first month of that period."""
    part = _ints(found, group)
    month = pa.array(((part - 1) * span + 1).astype(str))
    return pa.StructArray.from_arrays([found.field("y"), month], names=["y", "m"])


def _half_month(found: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    y, m, h = _ints(found, "y"), _ints(found, "m"), _ints(found, "h")
    start = _days(y, m)
    end = _days(y, m + 1) - 1
    return np.where(h == 1, start, start + 15), np.where(h == 1, start + 14, end)


def parse_values(values: Sequence[str] | np.ndarray, kind: str, name: str = "column",
                 missing: str = "") -> np.ndarray:
    """Exact values as numbers (``kind="numeric"``) or days (``"date"``); NaN for missing.

    Raises a BlendinError naming the column and a value that does not parse.

    >>> parse_values(["1970-01-02", ""], "date").tolist()
    [1.0, nan]
    """
    text = _arrow_text(values)
    is_missing = np.asarray(pc.equal(text, missing).to_numpy(zero_copy_only=False))
    if kind == "numeric":
        out = _to_float(text)
    elif kind == "date":
        out = _to_days(text)
    else:
        raise BlendinError(f"{name}: cannot read values of kind {kind!r} as numbers",
                           fix=f"use one of {', '.join(KINDS)}")
    bad = np.isnan(out) & ~is_missing
    if bad.any():
        shown = preview(np.asarray(text.to_pylist(), dtype=object)[bad])
        what = "numbers" if kind == "numeric" else "dates (YYYY-MM-DD)"
        raise BlendinError(
            f"column {name!r} should hold {what} but has {int(bad.sum())} value(s) that do "
            f"not parse: {shown}",
            fix=f"write the values of {name!r} as {what}, or read them as text "
            f"(kind categorical, e.g. --kind {name}=categorical)",
        )
    out[is_missing] = np.nan
    return out


def _to_float(text: pa.Array) -> np.ndarray:
    ok = pc.match_substring_regex(text, rf"^\s*{_NUM}\s*$")
    cleaned = pc.if_else(ok, pc.utf8_trim_whitespace(text), pa.scalar(None, pa.string()))
    return pc.cast(cleaned, pa.float64()).to_numpy(zero_copy_only=False).astype(float)


def _to_days(text: pa.Array) -> np.ndarray:
    days = np.full(len(text), np.nan)
    trimmed = pc.utf8_slice_codeunits(pc.utf8_trim_whitespace(text), 0, 10)
    for fmt in _DATE_FORMATS:
        parsed = pc.strptime(trimmed, format=fmt, unit="s", error_is_null=True)
        # strptime rolls 1965-02-30 over to March: keep only dates that print back the same
        same = pc.equal(pc.strftime(parsed, format=fmt), trimmed)
        parsed = pc.if_else(pc.fill_null(same, False), parsed, pa.scalar(None, parsed.type))
        seconds = pc.cast(parsed, pa.int64()).to_numpy(zero_copy_only=False)
        got = ~np.isnan(seconds.astype(float)) & np.isnan(days)
        days[got] = seconds.astype(float)[got] // 86400
    return days


def guess_kind(values: Sequence[str] | np.ndarray, missing: str = "") -> str:
    """``"date"`` if every non-missing value is a date, ``"numeric"`` if a number, else
    ``"categorical"``.

    >>> guess_kind(["1965-03-07", ""]), guess_kind(["34", "0.5"]), guess_kind(["02138", "2139"])
    ('date', 'numeric', 'categorical')
    """
    text = _arrow_text(values)
    present = pc.not_equal(text, missing).to_numpy(zero_copy_only=False)
    if not np.asarray(present).any():
        return "categorical"
    kept = pc.filter(text, pa.array(present))
    if not np.isnan(_to_days(kept)).any():
        return "date"
    # codes written with leading zeros (ZIP 02138) are text, not numbers
    if not np.isnan(_to_float(kept)).any() and not pc.any(
            pc.match_substring_regex(kept, r"^\s*-?0\d")).as_py():
        return "numeric"
    return "categorical"


def covers(
    labels: Sequence[str] | np.ndarray,
    values: Sequence[str] | np.ndarray,
    kind: str = "categorical",
    hierarchy: Hierarchy | None = None,
    *,
    name: str = "column",
    missing: str = "",
) -> np.ndarray:
    """Boolean matrix ``(len(labels), len(values))``: does released label i cover value j?

    ``labels`` and ``values`` are text (best: the distinct ones of a column); ``kind`` is
    how the exact values are read (``"numeric"``, ``"date"`` or ``"categorical"``).
    :func:`cover_pairs` gives the same as a list of pairs, without the full matrix.

    >>> covers(["30-39", "021**", "*", "40"], ["34", "02138", "40"], "numeric").astype(int)
    array([[1, 0, 0],
           [0, 1, 0],
           [1, 1, 1],
           [0, 0, 1]])
    >>> covers(["1965-03", "1965", "1966-Q1"], ["1965-03-07"], "date").ravel().tolist()
    [True, True, False]
    """
    rows, columns = cover_pairs(labels, values, kind, hierarchy, name=name, missing=missing)
    out = np.zeros((len(labels), len(values)), dtype=bool)
    out[rows, columns] = True
    return out


def cover_pairs(
    labels: Sequence[str] | np.ndarray,
    values: Sequence[str] | np.ndarray,
    kind: str = "categorical",
    hierarchy: Hierarchy | None = None,
    *,
    name: str = "column",
    missing: str = "",
) -> tuple[np.ndarray, np.ndarray]:
    """Every (label index, value index) pair where the label covers the value, sorted.

    Exact labels (a value as it is: ``34``, ``1965-03-07``, ``Married``) are joined to the
    values by hash/sort lookups, so a raw column of many distinct values never makes a
    labels × values matrix; only generalized labels (``*``, masks, sets, ranges, hierarchy
    groups) are compared with every value.

    >>> [a.tolist() for a in cover_pairs(["34", "30-39", "x"], ["34", "35"], "numeric")]
    [[0, 1, 1], [0, 0, 1]]
    """
    if kind not in KINDS:
        raise BlendinError(f"{name}: unknown kind {kind!r}", fix=f"use one of {', '.join(KINDS)}")
    label_arrow, value_arrow = _arrow_text(labels), _arrow_text(values)
    label_text = np.asarray(label_arrow.to_pylist(), dtype=object)
    value_text = np.asarray(value_arrow.to_pylist(), dtype=object)
    n_values = len(value_text)
    text = label_text.astype(str)
    general = (text == SUPPRESSED) | (np.char.endswith(text, "*") & (np.char.str_len(text) > 1))
    general |= np.char.startswith(text, "{") & np.char.endswith(text, "}")
    numbers = lo = hi = None
    if kind != "categorical":
        numbers = parse_values(value_text, kind, name, missing)
        lo, hi = parse_dates(label_text) if kind == "date" else parse_numeric(label_text)
        general |= ~np.isnan(lo) & (lo != hi)
    if hierarchy is not None:
        general |= np.isin(text, _group_labels(hierarchy))
    # exact labels: equal text, or (numbers, dates) the same number or day
    distinct = pc.unique(value_arrow)
    parts = [_join(np.where(general, -1, _codes(label_arrow, distinct)),
                   _codes(value_arrow, distinct))]
    if numbers is not None:
        point = ~general & ~np.isnan(lo)
        keys, inverse = np.unique(np.concatenate([lo[point], numbers[~np.isnan(numbers)]]),
                                  return_inverse=True)
        label_key = np.full(len(lo), -1)
        label_key[point] = inverse[: point.sum()]
        value_key = np.full(n_values, -1)
        value_key[~np.isnan(numbers)] = inverse[point.sum():]
        parts.append(_join(label_key, value_key))
    # generalized labels: compared with every value
    rows = np.flatnonzero(general)
    if len(rows):
        dense = _general_match(label_text[rows], value_text, label_arrow.take(pa.array(rows)),
                               value_arrow, lo if lo is None else lo[rows],
                               hi if hi is None else hi[rows], numbers, hierarchy)
        g, v = np.nonzero(dense)
        parts.append((rows[g], v))
    key = np.unique(np.concatenate([r.astype(np.int64) * n_values + c for r, c in parts]))
    return key // max(n_values, 1), key % max(n_values, 1)


def _general_match(label_text, value_text, label_arrow, value_arrow, lo, hi, numbers,
                   hierarchy) -> np.ndarray:
    match = np.repeat((label_text == SUPPRESSED)[:, None], len(value_text), axis=1)
    match |= _mask_match(label_text, value_text)
    match |= _set_match(label_arrow, value_arrow)
    if numbers is not None:
        with np.errstate(invalid="ignore"):
            match |= (lo[:, None] <= numbers[None, :]) & (numbers[None, :] <= hi[:, None])
    if hierarchy is not None:
        match |= _ancestor_match(label_text, value_text, hierarchy)
    return match


def _group_labels(hierarchy: Hierarchy) -> np.ndarray:
    """Labels of a hierarchy's levels above the ground."""
    if hierarchy.height < 2:
        return np.zeros(0, dtype=str)
    return np.unique(np.concatenate([np.asarray(hierarchy.labels[level], dtype=object)
                                     .astype(str) for level in range(1, hierarchy.height)]))


def _join(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(i, j)`` with ``left[i] == right[j] >= 0`` (a sort-merge join)."""
    order = np.argsort(right, kind="stable")
    ordered = right[order]
    rows = np.flatnonzero(left >= 0)
    start = np.searchsorted(ordered, left[rows], side="left")
    count = np.searchsorted(ordered, left[rows], side="right") - start
    owner = np.repeat(rows, count)
    offset = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    return owner, order[np.repeat(start, count) + offset]


def _mask_match(labels: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``021**`` covers values of the same width that start with ``021``."""
    out = np.zeros((len(labels), len(values)), dtype=bool)
    text = labels.astype(str)
    masked = np.char.endswith(text, "*") & (np.char.str_len(text) > 1)
    if not masked.any():
        return out
    prefixes = np.char.rstrip(text, "*")
    widths = np.char.str_len(text)
    masked &= ~np.char.endswith(prefixes, "*") & (np.char.find(prefixes, "*") < 0)
    value_text = values.astype(str)
    value_widths = np.char.str_len(value_text)
    prefix_lengths = np.char.str_len(prefixes)
    # one comparison per distinct prefix length (a handful: the mask levels)
    for length in np.unique(prefix_lengths[masked]):
        rows = np.flatnonzero(masked & (prefix_lengths == length))
        cut = value_text.astype(f"<U{max(int(length), 1)}") if length else np.full(
            len(value_text), "")
        same = prefixes[rows][:, None] == cut[None, :]
        out[rows] = same & (widths[rows][:, None] == value_widths[None, :])
    return out


def _codes(text: pa.Array, distinct: pa.Array) -> np.ndarray:
    """Index of each entry in ``distinct`` (-1 where absent)."""
    found = pc.fill_null(pc.index_in(text, value_set=distinct), -1)
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=np.int64)


def _set_match(labels: pa.Array, values: pa.Array) -> np.ndarray:
    """``{a,b}`` covers ``a`` and ``b``: the sets are split once, members looked up."""
    is_set = pc.and_(pc.starts_with(labels, "{"), pc.ends_with(labels, "}"))
    rows = np.flatnonzero(np.asarray(is_set.to_numpy(zero_copy_only=False), dtype=bool))
    distinct = pc.unique(values)
    by_distinct = np.zeros((len(labels), len(distinct)), dtype=bool)
    if len(rows):
        inner = pc.utf8_slice_codeunits(labels.take(pa.array(rows)), 1, -1)
        members = pc.split_pattern(inner, ",")
        owner = rows[pc.list_parent_indices(members).to_numpy(zero_copy_only=False)]
        member = _codes(pc.list_flatten(members), distinct)
        by_distinct[owner[member >= 0], member[member >= 0]] = True
    return by_distinct[:, _codes(values, distinct)]


def _ancestor_match(labels: np.ndarray, values: np.ndarray, hierarchy: Hierarchy) -> np.ndarray:
    """A label covers a ground value when it is the value's label at some level."""
    ground = pa.array(np.asarray(hierarchy.ground, dtype=object).astype(str).tolist())
    found = pc.index_in(_arrow_text(values), value_set=ground)
    value_code = pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    out = np.zeros((len(labels), len(values)), dtype=bool)
    known = value_code >= 0
    if not known.any():
        return out
    label_str = labels.astype(str)
    for level in range(hierarchy.height):  # one gather per level
        at_level = hierarchy.label_array(level).astype(str)[value_code[known]]
        out[:, known] |= label_str[:, None] == at_level[None, :]
    return out


def _arrow_text(values) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values if pa.types.is_string(values.type) else pc.cast(values, pa.string())
    array = np.asarray(values, dtype=object).astype(str)
    return pa.array(array.tolist(), type=pa.string())
