"""Columns before and after: summary statistics of numeric columns, contingency tables and
distributions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import as_text
from blendin.errors import BlendinError
from blendin.hierarchy.core import SUPPRESSED
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


# -- distributions --------------------------------------------------------------------------

#: bars a distribution shows at most: beyond, neighbouring values (ordered columns) or the
#: least frequent ones (others) are gathered into one bar
BARS = 30


@dataclass(frozen=True, eq=False)
class Distribution:
    """One column counted in the input (its values) and in the release (its labels, the
    suppressed records as ``*``); ``ordered``: the values have an order (a hierarchy's, or
    numbers), else they go by count."""

    name: str
    before: tuple[tuple[str, int], ...]
    after: tuple[tuple[str, int], ...]
    ordered: bool
    #: the input side shows the input's values (else the input counted at the released
    #: labels)
    input_values: bool = True

    def bars(self, limit: int = BARS) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        """Both sides with at most ``limit`` bars each.

        >>> d = Distribution("x", tuple((str(i), 1) for i in range(6)), (("0-5", 6),), True)
        >>> d.bars(3)[0]
        [('0–1', 2), ('2–3', 2), ('4–5', 2)]
        """
        return _gathered(self.before, limit, self.ordered), _gathered(self.after, limit,
                                                                      self.ordered)

    def to_dict(self, limit: int = BARS) -> dict:
        before, after = self.bars(limit)
        return {"column": self.name,
                "input": [{"value": v, "records": n} for v, n in before],
                "release": [{"value": v, "records": n} for v, n in after]}


def _gathered(counts: Sequence[tuple[str, int]], limit: int, ordered: bool
              ) -> list[tuple[str, int]]:
    if len(counts) <= limit:
        return list(counts)
    if not ordered:
        rest = counts[limit - 1:]
        return [*counts[:limit - 1],
                (f"{len(rest):,} others", int(sum(n for _, n in rest)))]
    # runs of the same number of values (the last may hold fewer), so that the bars'
    # heights compare: split as evenly as possible, 72 ages in 30 bars were 12 bars of
    # three ages and 18 of two, and the bars halved from one age to the next
    size = -(-len(counts) // limit)
    runs = [range(start, min(start + size, len(counts)))
            for start in range(0, len(counts), size)]
    return [(f"{counts[r[0]][0]}–{counts[r[-1]][0]}" if len(r) > 1 else counts[r[0]][0],
             int(sum(counts[i][1] for i in r))) for r in runs]


def distribution(a: Aligned, name: str, source: pa.Table, missing: str = "", *,
                 input_values: bool = True) -> Distribution:
    """Column ``name`` before and after: a quasi-identifier's input values and released
    labels in its hierarchy's order; another column's values over all input records and
    over the records the release keeps (it keeps them as they are). Without
    ``input_values``, a quasi-identifier's input is counted at the labels the release
    shows (what suppression took from each; the records of the other labels as ``*``), so
    no value the release hides is shown."""
    kept = ~a.suppressed
    if name in a.qis:
        i = a.qis.index(name)
        h, level = a.hierarchies[i], a.levels[i]
        labels = np.asarray(h.labels[level], dtype=object).astype(str)
        counts = np.bincount(a.general[kept, i], minlength=len(labels))
        after = _starred(_nonzero(labels, counts), int(a.suppressed.sum()))
        if input_values:
            before = _nonzero(h.ground, np.bincount(a.ground[:, i], minlength=len(h.ground)))
        else:  # the labels the release shows; the records of the others together, as *
            total = np.bincount(a.general[:, i], minlength=len(labels))
            hidden = int(total[counts == 0].sum())
            before = _starred(_nonzero(labels, np.where(counts > 0, total, 0)), hidden)
        return Distribution(name, tuple(before), tuple(after), True, input_values)
    if name not in source.column_names:
        raise BlendinError(f"the input has no column {name!r}",
                           fix="name one of the input's columns")
    values = as_text(source.column(name), missing).to_numpy(zero_copy_only=False)
    found, codes = np.unique(values.astype(str), return_inverse=True)
    numbers = parse_numeric(found)[0]
    ordered = bool(len(found)) and not np.isnan(numbers).any()
    codes = codes.reshape(-1)
    before = np.bincount(codes, minlength=len(found))
    after = np.bincount(codes[kept], minlength=len(found))
    # both sides in one order: the values' own, else the input's most frequent first
    pick = np.argsort(numbers if ordered else -before, kind="stable")
    return Distribution(name, tuple(_nonzero(found[pick], before[pick])),
                        tuple(_nonzero(found[pick], after[pick])), ordered, True)


def _starred(counts: list[tuple[str, int]], more: int) -> list[tuple[str, int]]:
    """``counts`` with ``more`` records added to its ``*`` bar, which goes last."""
    if not more:
        return counts
    starred = sum(n for v, n in counts if v == SUPPRESSED)
    return [*((v, n) for v, n in counts if v != SUPPRESSED), (SUPPRESSED, starred + more)]


def _nonzero(values, counts: np.ndarray) -> list[tuple[str, int]]:
    return [(str(v), int(n)) for v, n in zip(values, counts) if n]
