"""ARX's quality measures, column- and row-oriented (each a quality in [0, 1])."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from blendin.codes import combine_keys
from blendin.hierarchy.core import Hierarchy, domain_shares, domain_size
from blendin.summaries import percent
from blendin.utility.align import Aligned

# -- ARX's quality measures -----------------------------------------------------------------
# Each is a loss r between its least (min) and greatest (max) possible; the quality shown is
# 1 - (r - min) / (max - min): 1 is the input itself, 0 the worst (ARX's convention).


def _quality(loss: float, least: float, most: float) -> float:
    span = most - least
    if span == 0:
        return float("nan") if loss == least else 0.0
    return float(1.0 - min(max((loss - least) / span, 0.0), 1.0))


@dataclass(frozen=True)
class ColumnQuality:
    """ARX's column-oriented measures of one quasi-identifier, each a quality (1: as in the
    input, 0: nothing left), and the share of its cells the release suppressed."""

    name: str
    level: int
    height: int
    granularity: float
    non_uniform_entropy: float
    generalization_intensity: float
    squared_error: float | None
    suppressed: float
    example: str

    def line(self) -> str:
        """One plain sentence: what the release shows of the column."""
        if self.level == self.height - 1:
            return f"{self.name}: nothing (every value is *)"
        if self.level == 0:
            shown = "values as they are"
        else:
            shown = f"level {self.level} of {self.height - 1}, e.g. {self.example}"
        return f"{self.name}: {shown}; {percent(self.suppressed)} of values suppressed"


def column_quality(a: Aligned, i: int, numbers: np.ndarray | None) -> tuple[ColumnQuality,
                                                                          tuple]:
    """The measures of QI ``i`` of ``a`` (``numbers``: the input's values as numbers, for
    the squared error of a numeric column), and its (loss, min, max) triples for the
    aggregate over columns."""
    h, level, n = a.hierarchies[i], a.levels[i], a.records
    sup = a.suppressed
    d = domain_size(h)
    share = np.where(sup, 1.0, domain_shares(h, level)[a.general[:, i]])
    granularity = (float(share.mean()), 1.0 / d if d else 0.0, 1.0)
    precision = np.where(sup, 1.0, level / (h.height - 1) if h.height > 1 else 0.0)
    intensity = (float(precision.mean()), 0.0, 1.0)
    entropy = _entropy(h, a.ground[:, i], level, sup)
    error = _squared_error(numbers, a.general[:, i], sup) if numbers is not None else None
    triples = (granularity, intensity, entropy, error)
    top = level == h.height - 1
    quality = ColumnQuality(
        a.qis[i], level, h.height, _quality(*granularity), _quality(*entropy),
        _quality(*intensity), None if error is None else _quality(*error),
        float(sup.mean()) if not top else 1.0,
        str(h.labels[level][np.bincount(a.general[:, i]).argmax()]) if n else "")
    return quality, triples


def _entropy(h: Hierarchy, ground: np.ndarray, level: int, sup: np.ndarray) -> tuple:
    """Non-uniform entropy (bits): the information a record's released label loses about
    its value, in the steps ARX takes (the released level, then the top for the
    suppressed records); max: the input column's entropy times its records."""
    n = len(ground)
    if not n:
        return (0.0, 0.0, 0.0)
    top = h.height - 1
    f_in = np.bincount(ground)
    most = float(np.log2(n / f_in[ground]).sum())
    loss = 0.0
    if level > 0:
        cur = h.codes[level][ground]
        loss += float(np.log2(np.bincount(cur)[cur] / f_in[ground]).sum())
    if sup.any() and level < top:
        prev = h.codes[level][ground[sup]]
        loss += float(np.log2(sup.sum() / np.bincount(prev)[prev]).sum())
    return (loss, 0.0, most)


def _bounds(numbers: np.ndarray, general: np.ndarray, sup: np.ndarray):
    """Each record's released interval as ARX reads it: the least and greatest input value
    among the released records showing its label; a suppressed record's is the whole
    range."""
    lo_all, hi_all = np.nanmin(numbers), np.nanmax(numbers)
    groups = general.max(initial=0) + 1
    lo = np.full(groups, np.inf)
    hi = np.full(groups, -np.inf)
    kept = ~sup
    np.fmin.at(lo, general[kept], numbers[kept])
    np.fmax.at(hi, general[kept], numbers[kept])
    return (np.where(sup, lo_all, lo[general]), np.where(sup, hi_all, hi[general]),
            lo_all, hi_all)


def _squared_error(numbers: np.ndarray, general: np.ndarray, sup: np.ndarray) -> tuple:
    """Attribute-level squared error: each value's squared distance to the farther end of
    its released interval, capped by its distance to the farther end of the column."""
    lo, hi, least, most = _bounds(numbers, general, sup)
    cap = np.maximum(np.square(numbers - least), np.square(numbers - most))
    far = np.maximum(np.square(numbers - lo), np.square(numbers - hi))
    return (float(np.minimum(far, cap).sum()), 0.0, float(cap.sum()))


def table_quality(a: Aligned, numbers: dict[int, np.ndarray]) -> dict[str, float]:
    """ARX's row-oriented measures, each a quality: ambiguity, average class size,
    discernibility; over the numeric QIs (``numbers``: their input values by QI index),
    record-level squared error and SSE/SST."""
    n, sup = a.records, a.suppressed
    kept = ~sup
    radices = [len(h.labels[lv]) for h, lv in zip(a.hierarchies, a.levels)]
    out_classes = np.unique(combine_keys([a.general[kept, i] for i in range(len(a.qis))],
                                         radices), return_counts=True)[1]
    in_classes = np.unique(combine_keys([a.ground[:, i] for i in range(len(a.qis))],
                                        [len(h.ground) for h in a.hierarchies]),
                           return_counts=True)[1]
    found = {}
    sizes = [domain_size(h) for h in a.hierarchies]
    factor = np.ones(n)
    for i, (h, level) in enumerate(zip(a.hierarchies, a.levels)):
        factor *= np.where(sup, 1.0, domain_shares(h, level)[a.general[:, i]]) * sizes[i]
    found["ambiguity"] = _quality(float(factor.sum()), float(n),
                                  float(n * np.prod(np.asarray(sizes, float))))
    found["aecs"] = (_quality(kept.sum() / len(out_classes), n / len(in_classes), float(n))
                     if len(out_classes) else 0.0)
    found["discernibility"] = _quality(
        float(np.square(out_classes.astype(float)).sum() + sup.sum() * float(n)),
        float(np.square(in_classes.astype(float)).sum()), float(n) ** 2)
    if numbers:
        found["record_squared_error"] = _record_error(a, numbers)
        found["sse_sst"] = _sse_sst(a, numbers)
    return found


def _record_error(a: Aligned, numbers: dict[int, np.ndarray]) -> float:
    """Record-level squared error: each record's distance (in standard deviations, over
    the numeric QIs) to the farther ends of its released intervals, against the distance
    to the farther ends of the columns."""
    real = np.zeros(a.records)
    most = np.zeros(a.records)
    for i, x in numbers.items():
        lo, hi, least, top = _bounds(x, a.general[:, i], a.suppressed)
        sigma = float(np.std(x))
        for bounds, total in (((lo, hi), real), ((np.full_like(x, least),
                                                 np.full_like(x, top)), most)):
            far = np.where(bounds[1] - x > x - bounds[0], bounds[1], bounds[0])
            total += np.square((x - far) / sigma) if sigma else 0.0
    return _quality(float(np.sqrt(real).sum()), 0.0, float(np.sqrt(most).sum()))


def _sse_sst(a: Aligned, numbers: dict[int, np.ndarray]) -> float:
    """SSE/SST: the squared distances of the values to their intervals' midpoints, against
    those of the midpoints to the column's mean (ARX's definition)."""
    sse = sst = 0.0
    for i, x in numbers.items():
        lo, hi, _, _ = _bounds(x, a.general[:, i], a.suppressed)
        middle = (lo + hi) / 2
        sse += float(np.square(x - middle).sum())
        sst += float(np.square(middle - x.mean()).sum())
    return _quality(sse, 0.0, sst)


#: what each table measure says, and that higher is better (all are qualities in [0, 1])
MEANINGS = {
    "granularity": "how finely the released labels split each column's domain",
    "non_uniform_entropy": "how much of each value's information the labels keep",
    "generalization_intensity": "how far down its hierarchy each column stays",
    "squared_error": "how close each numeric value stays to its released interval",
    "record_squared_error": "how close each record stays to its released intervals, in "
                            "standard deviations over the numeric columns",
    "ambiguity": "how few input tuples each released record could stand for",
    "aecs": "how small the released classes stay (average class size)",
    "discernibility": "how small the classes stay, suppressed records counting as one big "
                      "class",
    "sse_sst": "how much of the numeric columns' spread the intervals' midpoints keep",
}
