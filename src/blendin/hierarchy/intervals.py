"""Intervals for numbers: each level groups values into wider intervals, with bottom/top coding.

Level i cuts the number line at the multiples of ``widths[i-1]``; as every width is a multiple
of the one before, each interval lies inside one interval of the next level (a tree). Labels:
``20-29`` (inclusive) when the values and the cuts are integers (``[-10, -1]`` below zero),
``[20.5, 30.5)`` otherwise; values below ``bottom`` read ``<bottom`` and values from ``top``
on read ``>=top`` at every level above the ground, and intervals are clipped to [bottom, top).
"""

from __future__ import annotations

from decimal import Decimal
from numbers import Real
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

_NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"


def parse_numbers(values: np.ndarray, name: str = "column") -> np.ndarray:
    """The text values as floats; a BlendinError names the values that are not numbers.

    >>> parse_numbers(np.array(["29", " 1.5", "-2e3"], dtype=object)).tolist()
    [29.0, 1.5, -2000.0]
    """
    numbers, bad = _try_parse(values)
    if len(bad):
        raise BlendinError(
            f"column {name!r} has {len(bad)} value(s) that are not numbers: {preview(bad)}",
            fix=f"clean these values, give {name!r} another hierarchy (masking = true, "
            "tree = {...} or flat = true in the spec), "
            "or declare the label of missing values ([input] missing = ...)",
        )
    return numbers


def number_or_nan(values: np.ndarray) -> np.ndarray:
    """Each text value as a float, NaN where it is not a (finite) number.

    >>> number_or_nan(np.array(["29", "x", "1e999"], dtype=object)).tolist()
    [29.0, nan, nan]
    """
    numbers, _ = _try_parse(values)
    return np.where(np.isfinite(numbers), numbers, np.nan)


def _try_parse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    text = pc.utf8_trim_whitespace(pa.array(np.asarray(values, dtype=object).astype(str),
                                            type=pa.string()))
    ok = pc.match_substring_regex(text, _NUMBER).to_numpy(zero_copy_only=False)
    numbers = np.full(len(text), np.nan)
    if ok.any():
        good = pc.filter(text, pa.array(ok))
        numbers[ok] = pc.cast(good, pa.float64()).to_numpy(zero_copy_only=False)
    ok &= np.isfinite(numbers)
    return numbers, np.asarray(values, dtype=object)[~ok]


def _decimals(width: float) -> int:
    """Decimal places of a width as written (0.25 -> 2, 10 -> 0)."""
    exponent = Decimal(repr(float(width))).normalize().as_tuple().exponent
    return max(0, -int(exponent))


def _format(x: np.ndarray) -> np.ndarray:
    """Shortest text of each number; integral numbers without a decimal point."""
    x = np.asarray(x, dtype=float)
    out = np.asarray(pc.cast(pa.array(x), pa.string()).to_pylist(), dtype=object)
    integral = np.isfinite(x) & (x == np.round(x)) & (np.abs(x) < 2**53)
    if integral.any():
        out[integral] = pc.cast(pa.array(x[integral].astype(np.int64)), pa.string()).to_pylist()
    return out


class Intervals(HierarchyBuilder):
    """Nested intervals of the given widths, optionally bottom/top coded."""

    def __init__(self, widths: tuple[float, ...], bottom: float | None = None,
                 top: float | None = None) -> None:
        self.widths = tuple(widths)
        self.bottom = bottom
        self.top = top
        self._check()

    def _check(self) -> None:
        call = f"intervals({format_args(*self.widths, bottom=self.bottom, top=self.top)})"
        if not self.widths:
            raise BlendinError(f"{call} has no widths", fix="give widths, e.g. intervals = [5, 10] "
                               "(Python: intervals(5, 10))")
        for w in self.widths:
            if not _is_number(w) or not np.isfinite(w) or w <= 0:
                raise BlendinError(f"{call}: width {w!r} is not a positive number",
                                   fix="give positive widths, e.g. intervals = [5, 10, 20] "
                                   "(Python: intervals(5, 10, 20))")
        for small, big in zip(self.widths, self.widths[1:]):
            ratio = big / small
            if round(ratio) < 2 or abs(ratio - round(ratio)) > 1e-9 * ratio:
                raise BlendinError(
                    f"{call}: width {big!r} is not a multiple (2 or more times) of {small!r}, "
                    "so the intervals would not nest",
                    fix="make each width a multiple of the one before, e.g. intervals = "
                    "[5, 10, 20] (Python: intervals(5, 10, 20))",
                )
        for key, v in (("bottom", self.bottom), ("top", self.top)):
            if v is not None and (not _is_number(v) or not np.isfinite(v)):
                raise BlendinError(f"{call}: {key} {v!r} is not a number",
                                   fix=f"give a number as {key}")
        if self.bottom is not None and self.top is not None and self.bottom >= self.top:
            raise BlendinError(f"{call}: bottom must be below top",
                               fix="swap them, or leave one out")

    def build(self, values: np.ndarray, name: str = "column", missing: str = "") -> Hierarchy:
        ground = distinct_text(values)
        is_missing = ground == missing
        x = parse_numbers(ground[~is_missing], name)
        integer = bool(np.all(x == np.round(x))) and all(
            float(v).is_integer() for v in (*self.widths, self.bottom, self.top) if v is not None)
        levels = []
        k = None
        for i, w in enumerate(self.widths):
            k = self._first_cut(x, name) if i == 0 else np.floor(
                k / round(w / self.widths[i - 1]))
            labels = np.full(len(ground), missing, dtype=object)
            labels[~is_missing] = self._labels(x, k, w, integer)
            levels.append(labels)
        numbers = np.full(len(ground), np.nan)
        numbers[~is_missing] = x
        return assemble(ground, levels, kind="numeric", numbers=numbers, name=name,
                        missing=missing, is_missing=is_missing)

    def _first_cut(self, x: np.ndarray, name: str) -> np.ndarray:
        """Index of each value's interval at the first level, exact at the boundaries."""
        w = self.widths[0]
        k = np.floor(x / w)
        if len(k) and np.abs(k).max() > 2**50:
            raise BlendinError(
                f"column {name!r}: values up to {np.abs(x).max():g} are too large for width {w}",
                fix="use a larger first width",
            )
        # x / w can land one interval off (0.3 / 0.1 < 3); compare with the printed bounds
        d = _decimals(w)
        k[x < np.round(k * w, d)] -= 1
        k[x >= np.round((k + 1) * w, d)] += 1
        return k

    def _labels(self, x: np.ndarray, k: np.ndarray, w: float, integer: bool) -> np.ndarray:
        uk, inverse = np.unique(k, return_inverse=True)
        d = _decimals(w)
        lo, hi = np.round(uk * w, d), np.round((uk + 1) * w, d)
        if self.bottom is not None:
            lo = np.maximum(lo, self.bottom)
        if self.top is not None:
            hi = np.minimum(hi, self.top)
        if integer:
            text = _integer_labels(lo, hi - 1)
        else:
            text = "[" + _format(lo).astype(object) + ", " + _format(hi).astype(object) + ")"
        labels = np.asarray(text, dtype=object)[inverse.reshape(-1)]
        if self.bottom is not None:
            labels[x < self.bottom] = "<" + str(_format(np.array([self.bottom]))[0])
        if self.top is not None:
            labels[x >= self.top] = ">=" + str(_format(np.array([self.top]))[0])
        return labels

    def to_toml(self, base_dir: Path | None = None) -> dict:
        table: dict = {"intervals": list(self.widths)}
        if self.bottom is not None:
            table["bottom"] = self.bottom
        if self.top is not None:
            table["top"] = self.top
        return table

    def __repr__(self) -> str:
        return f"intervals({format_args(*self.widths, bottom=self.bottom, top=self.top)})"


def _integer_labels(lo: np.ndarray, last: np.ndarray) -> np.ndarray:
    """``20-29``; a single number alone; ``[-10, -1]`` when the interval starts below zero."""
    a, b = _format(lo), _format(last)
    text = np.where(lo < 0, "[" + a + ", " + b + "]", a + "-" + b)
    return np.where(lo == last, a, text)


def _is_number(v: object) -> bool:
    return isinstance(v, Real) and not isinstance(v, bool)


def intervals(*widths: float, bottom: float | None = None, top: float | None = None) -> Intervals:
    """Numbers generalized to nested intervals of the given widths, then ``*``.

    Level i groups the values into intervals of width ``widths[i-1]`` starting at multiples
    of the width; each width must be a multiple of the one before. Values below ``bottom``
    become ``<bottom``, values from ``top`` on become ``>=top``. The missing label stays as it
    is up to ``*``.

    >>> h = intervals(5, 10, 20).build(["29", "31", "44"], "age")
    >>> h.to_rows()[0]
    ['29', '25-29', '20-29', '20-39', '*']
    >>> intervals(10, bottom=20, top=40).build(["15", "25", "40"]).to_rows()
    [['15', '<20', '*'], ['25', '20-29', '*'], ['40', '>=40', '*']]
    >>> intervals(0.5).build(["1.2"]).to_rows()
    [['1.2', '[1, 1.5)', '*']]
    """
    return Intervals(widths, bottom, top)
