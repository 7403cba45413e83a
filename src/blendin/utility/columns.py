"""Columns before and after: summary statistics of numeric columns and contingency tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import as_text
from blendin.errors import BlendinError
from blendin.labels import parse_numeric
from blendin.utility.align import Aligned


@dataclass(frozen=True)
class Summary:
    """Summary statistics of a numeric column: records counted, mean, quartiles."""

    records: int
    mean: float
    q1: float
    median: float
    q3: float

    @classmethod
    def of(cls, values: np.ndarray) -> Summary:
        values = np.asarray(values, float)
        values = values[~np.isnan(values)]
        if not len(values):
            return cls(0, *(float("nan"),) * 4)
        q1, median, q3 = np.quantile(values, [0.25, 0.5, 0.75])
        return cls(len(values), float(values.mean()), float(q1), float(median), float(q3))


def midpoints(labels: Sequence[str] | np.ndarray) -> np.ndarray:
    """The midpoint of each numeric label (``30-39`` is 34.5, ``42`` is 42; NaN for ``*``
    and anything not a number or an interval), as ARX summarizes a released interval.

    >>> midpoints(["30-39", "42", "*", "[20, 30)"]).round(3).tolist()[:3]
    [34.5, 42.0, nan]
    """
    lo, hi = parse_numeric(np.asarray(labels, dtype=object))
    return (lo + hi) / 2


@dataclass(frozen=True, eq=False)
class Contingency:
    """Two columns crossed: the input's table (its values) and the release's (its labels),
    and how far apart they are: the total variation distance between the input's joint
    distribution and the release's spread evenly over the values each label covers
    (0: the same; 1: nothing in common)."""

    columns: tuple[str, str]
    original: pa.Table
    released: pa.Table
    distance: float

    def to_dict(self) -> dict:
        return {"columns": list(self.columns), "distance": self.distance,
                "original": self.original.to_pylist(), "released": self.released.to_pylist()}


def contingency(a: Aligned, pair: Sequence[str], source: pa.Table, missing: str = ""
                ) -> Contingency:
    """The contingency tables of the two columns ``pair`` (quasi-identifiers, or columns
    the release keeps as they are) in the input and in the release matched to it."""
    codes, labels, spread, texts = [], [], [], []
    for name in pair:
        if name in a.qis:
            i = a.qis.index(name)
            h, level = a.hierarchies[i], a.levels[i]
            ground, general = a.ground[:, i], a.general[:, i]
            values = np.asarray(h.ground, dtype=object).astype(str)
            shown = np.asarray(h.labels[level], dtype=object).astype(str)
            label_of = h.codes[level]
        elif name in source.column_names:
            found = pc.dictionary_encode(as_text(source.column(name), missing)
                                         .combine_chunks())
            ground = general = found.indices.to_numpy().astype(np.int64)
            values = shown = np.asarray(found.dictionary.to_pylist(), dtype=object)
            label_of = np.arange(len(values))
        else:
            raise BlendinError(f"--pair names {name!r}, which the input does not have",
                               fix="cross two of the input's columns, e.g. --pair age,sex")
        codes.append(ground)
        labels.append(general)
        # how many of the input's values each label covers, for spreading it evenly
        spread.append((label_of, np.maximum(np.bincount(label_of, minlength=len(shown)), 1)))
        texts.append((values, shown))
    kept = ~a.suppressed
    p_keys, p_counts = np.unique(codes[0] * len(texts[1][0]) + codes[1], return_counts=True)
    r_keys, r_counts = np.unique(labels[0][kept] * len(texts[1][1]) + labels[1][kept],
                                 return_counts=True)
    # the release's mass at each of the input's (value, value) pairs
    va, vb = p_keys // len(texts[1][0]), p_keys % len(texts[1][0])
    (la, na), (lb, nb) = spread
    at = la[va] * len(texts[1][1]) + lb[vb]
    mass = np.zeros(len(at))
    if len(r_keys):
        found = np.minimum(np.searchsorted(r_keys, at), len(r_keys) - 1)
        mass = np.where(r_keys[found] == at, r_counts[found], 0)
    released = max(int(kept.sum()), 1)
    q = mass / (na[la[va]] * nb[lb[vb]]) / released
    p = p_counts / len(codes[0])
    distance = 0.5 * (np.abs(p - q).sum() + max(0.0, 1.0 - q.sum())) if kept.any() else 1.0
    original = pa.table({pair[0]: texts[0][0][va].tolist(), pair[1]: texts[1][0][vb].tolist(),
                         "records": p_counts})
    ra, rb = r_keys // len(texts[1][1]), r_keys % len(texts[1][1])
    release = pa.table({pair[0]: texts[0][1][ra].tolist(), pair[1]: texts[1][1][rb].tolist(),
                        "records": r_counts})
    return Contingency(tuple(pair), original, release, float(distance))
