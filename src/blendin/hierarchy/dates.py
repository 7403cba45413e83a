"""Dates: a ladder of calendar periods, day -> half-month -> month -> ... -> century -> ``*``.

Any increasing choice of levels makes a tree, as each period lies in one period of every
coarser kind. The ground level is the value as the data has it (``2017-01-05``,
``20170105``, or whatever ``format`` reads); labels are ``2017-01-05`` (day), ``201701H1``
(half-month: days 1-15 and 16-end), ``2017-01``, ``2017-Q1``, ``2017-H1``, ``2017``,
``2010-2019`` (decade), ``2000-2099`` (century). Parsing is vectorized (pyarrow strptime).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.errors import BlendinError, preview
from blendin.hierarchy.core import (
    Hierarchy,
    HierarchyBuilder,
    assemble,
    distinct_text,
    format_args,
)

LEVELS = ("day", "half-month", "month", "quarter", "half-year", "year", "decade", "century")
DEFAULT_LEVELS = ("month", "quarter", "year", "decade")
_ISO = r"^\d{4}-\d{2}-\d{2}([T ].*)?$"
_COMPACT = r"^\d{8}$"


def parse_dates(values: np.ndarray, name: str = "column", format: str | None = None) -> np.ndarray:
    """The text values as ``datetime64[D]``; a BlendinError names those that are not dates.

    Without ``format``, ISO dates (``2017-01-05``, a time after it is ignored) and
    ``YYYYMMDD`` are read. With it, values that are all ISO dates and none in the format
    (a column of dates or times, which blendin reads as ISO text) are read as ISO.

    >>> parse_dates(np.array(["2017-01-05", "20170106"], dtype=object)).tolist()
    [datetime.date(2017, 1, 5), datetime.date(2017, 1, 6)]
    """
    text = pa.array(np.asarray(values, dtype=object).astype(str).tolist(), type=pa.string())
    days = np.full(len(text), np.datetime64("NaT"), dtype="M8[D]")
    if format is None:
        iso = _match(text, _ISO)
        compact = _match(text, _COMPACT)
        days[iso] = _strptime(pc.utf8_slice_codeunits(text.filter(pa.array(iso)), 0, 10),
                              "%Y-%m-%d", exact=True)
        days[compact] = _strptime(text.filter(pa.array(compact)), "%Y%m%d", exact=True)
    else:
        days[:] = _strptime(text, format, exact=False)
        if np.isnat(days).all() and len(text) and _match(text, _ISO).all():
            # a column of dates or times (Parquet, pandas, polars) reads as ISO text, not
            # in the format a CSV file of the same data needs: the same spec takes both
            return parse_dates(values, name)
    bad = np.asarray(values, dtype=object)[np.isnat(days)]
    if len(bad):
        how = "in the format " + repr(format) if format else "as YYYY-MM-DD or YYYYMMDD"
        raise BlendinError(
            f"column {name!r} has {len(bad)} value(s) that are not dates {how}: {preview(bad)}",
            fix="give the format, e.g. dates(\"month\", \"year\", format=\"%d/%m/%Y\") "
            "(TOML: format = \"%d/%m/%Y\"), clean the values, or declare the label of missing "
            "values ([input] missing = ...)",
        )
    return days


def _match(text: pa.Array, pattern: str) -> np.ndarray:
    return pc.match_substring_regex(text, pattern).to_numpy(zero_copy_only=False)


def _strptime(text: pa.Array, fmt: str, exact: bool) -> np.ndarray:
    """Days of the parsed text, NaT where it does not parse or names no real day.

    strptime rolls impossible days over (Feb 30 -> Mar 2), so each date is printed back and
    compared; with a user format that may print differently (``5`` vs ``05``), the few that
    differ are checked one by one with the standard library.
    """
    if len(text) == 0:
        return np.empty(0, dtype="M8[D]")
    try:
        stamps = pc.strptime(text, format=fmt, unit="s", error_is_null=True)
    except (pa.ArrowInvalid, ValueError) as exc:
        raise BlendinError(f"bad date format {fmt!r}: {exc}",
                           fix="use strptime codes, e.g. format = \"%d/%m/%Y\"") from None
    days = stamps.to_numpy(zero_copy_only=False).astype("M8[D]")
    back = pc.strftime(stamps, format=fmt)
    if exact:
        differs = ~pc.fill_null(pc.equal(back, text), True).to_numpy(zero_copy_only=False)
        days[differs] = np.datetime64("NaT")
        return days
    same = pc.equal(_unpadded(back), _unpadded(text))  # "5/1/2017" is "05/01/2017"
    differs = ~pc.fill_null(same, True).to_numpy(zero_copy_only=False)
    strings = np.asarray(text.to_pylist(), dtype=object)
    for i in np.flatnonzero(differs & ~np.isnat(days)):
        try:
            days[i] = np.datetime64(datetime.strptime(strings[i], fmt).date(), "D")
        except ValueError:
            days[i] = np.datetime64("NaT")
    return days


def _unpadded(text: pa.Array) -> pa.Array:
    """Numbers in the text without their leading zeros."""
    return pc.replace_substring_regex(text, r"(^|\D)0+(\d)", r"\1\2")


def _period_codes(days: np.ndarray, level: str) -> np.ndarray:
    """An integer per date naming its period at ``level`` (equal code, same period)."""
    months = days.astype("M8[M]").astype(np.int64)  # months since 1970-01
    year = days.astype("M8[Y]").astype(np.int64) + 1970
    month0 = months % 12
    if level == "day":
        return days.astype(np.int64)
    if level == "half-month":
        return months * 2 + ((days - days.astype("M8[M]")).astype(np.int64) >= 15)
    return {
        "month": months,
        "quarter": year * 4 + month0 // 3,
        "half-year": year * 2 + month0 // 6,
        "year": year,
        "decade": year // 10,
        "century": year // 100,
    }[level]


def _period_label(code: int, level: str) -> str:
    if level == "half-month":
        year, month0 = divmod(code // 2, 12)
        return f"{year + 1970:04d}{month0 + 1:02d}H{code % 2 + 1}"
    if level == "month":
        year, month0 = divmod(code, 12)
        return f"{year + 1970:04d}-{month0 + 1:02d}"
    if level == "quarter":
        return f"{code // 4:04d}-Q{code % 4 + 1}"
    if level == "half-year":
        return f"{code // 2:04d}-H{code % 2 + 1}"
    if level == "year":
        return f"{code:04d}"
    span = 10 if level == "decade" else 100
    return f"{code * span:04d}-{code * span + span - 1:04d}"


def period_labels(days: np.ndarray, level: str) -> np.ndarray:
    """The label of every date at ``level`` (formatted once per distinct period).

    >>> d = np.array(["2017-01-17"], dtype="M8[D]")
    >>> [str(period_labels(d, lv)[0]) for lv in LEVELS]
    ['2017-01-17', '201701H2', '2017-01', '2017-Q1', '2017-H1', '2017', '2010-2019', '2000-2099']
    """
    if level == "day":
        return np.datetime_as_string(days, unit="D").astype(object)
    codes, inverse = np.unique(_period_codes(days, level), return_inverse=True)
    labels = np.array([_period_label(int(c), level) for c in codes], dtype=object)
    return labels[inverse.reshape(-1)]


class Dates(HierarchyBuilder):
    """Calendar periods, from the finest level given to the coarsest, then ``*``."""

    def __init__(self, levels: tuple[str, ...], format: str | None = None) -> None:
        self.levels = tuple(levels) if levels else DEFAULT_LEVELS
        self.format = format
        call = f"dates({format_args(*self.levels, format=format)})"
        for level in self.levels:
            if level not in LEVELS:
                raise BlendinError(f"{call}: unknown level {level!r}",
                                   fix=f"choose levels from {', '.join(LEVELS)}")
        ranks = [LEVELS.index(level) for level in self.levels]
        if any(a >= b for a, b in zip(ranks, ranks[1:])):
            raise BlendinError(
                f"{call}: the levels must go from fine to coarse, each once",
                fix=f"order them as in {', '.join(LEVELS)}",
            )
        if format is not None and not isinstance(format, str):
            raise BlendinError(f"{call}: format must be text",
                               fix='give a strptime format, e.g. format="%d/%m/%Y"')
        if format is not None and not _reads_a_year(format):
            raise BlendinError(f"{call}: format {format!r} reads no date (a strptime "
                               "format names its year with %Y or %y)",
                               fix='give a strptime format, e.g. format="%d/%m/%Y"')

    def build(self, values: np.ndarray, name: str = "column", missing: str = "") -> Hierarchy:
        ground = distinct_text(values)
        is_missing = ground == missing
        days = parse_dates(ground[~is_missing], name, self.format)
        levels = []
        for level in self.levels:
            labels = np.full(len(ground), missing, dtype=object)
            labels[~is_missing] = period_labels(days, level)
            levels.append(labels)
        numbers = np.full(len(ground), np.nan)
        numbers[~is_missing] = days.astype(np.int64)
        return assemble(ground, levels, kind="date", numbers=numbers, name=name,
                        missing=missing, is_missing=is_missing)

    def to_toml(self, base_dir: Path | None = None) -> dict:
        table: dict = {"dates": list(self.levels)}
        if self.format is not None:
            table["format"] = self.format
        return table

    def __repr__(self) -> str:
        return f"dates({format_args(*self.levels, format=self.format)})"


def _reads_a_year(format: str) -> bool:
    """Whether a strptime ``format`` is one (no unknown directive) that reads a year back.

    >>> _reads_a_year("%d/%m/%Y"), _reads_a_year("%Q"), _reads_a_year("abc")
    (True, False, False)
    """
    from datetime import datetime

    day = datetime(2017, 1, 5, 13, 45)
    try:
        return datetime.strptime(day.strftime(format), format).year == day.year
    except ValueError:
        return False


def dates(*levels: str, format: str | None = None) -> Dates:
    """Dates generalized along calendar periods (default: month, quarter, year, decade).

    Levels, fine to coarse, from: day, half-month, month, quarter, half-year, year, decade,
    century. Values are ISO dates or YYYYMMDD unless a strptime ``format`` is given.

    >>> dates("month", "year").build(["2017-01-05", "2017-02-11"]).to_rows()[0]
    ['2017-01-05', '2017-01', '2017', '*']
    >>> dates("quarter", format="%d/%m/%Y").build(["05/01/2017"]).to_rows()
    [['05/01/2017', '2017-Q1', '*']]
    """
    return Dates(levels, format)
