"""Utility metrics: how much a release lost. Every figure here is a LOSS: lower is better.

The metrics are computed from equivalence classes, so they serve full-domain nodes and
Mondrian partitions alike. A class is described by its size and, per quasi-identifier, the
cost of its generalized value (a "cell"); suppressed records count as fully generalized
(their cells are ``*``).

- ``loss``: Iyengar's loss metric (LM). A cell costs (leaves covered - 1) / (leaves - 1) for
  categories, range width / domain width for numbers and dates; the figure is the mean over
  records and QIs (weighted by the QI weights), in [0, 1].
- ``gcp``: Xu et al.'s global certainty penalty: the mean of the normalized certainty penalty
  (NCP) of cells. NCP is range width / domain width for numbers, and leaves covered / leaves
  for categories (0 for a single leaf). In [0, 1].
- ``precision``: Sweeney's precision reported as a loss, i.e. 1 - Prec: the mean over cells of
  level / (height - 1). In [0, 1]; 0 is the original data.
- ``entropy``: non-uniform entropy in bits, summed over records and QIs:
  -log2 P(ground value | generalized value), where P uses the frequencies of the ground values
  in the whole table. 0 is the original data.
- ``height``: sum of the generalization levels of the node (full-domain only).
- ``discernibility``: sum of |E|^2 over kept classes plus n for each suppressed record.
- ``aecs``: average equivalence class size, records / classes, where the suppressed records
  (all ``*``, as they appear in the release) form one class of their own.
- ``arx-loss``: ARX's default quality model ("Loss", gs-factor 0.5, geometric mean), so that
  a node ARX would choose is the node chosen here. Per QI, a kept cell costs the share of the
  hierarchy's domain it covers (leaves under its label / leaves of the hierarchy as given,
  values absent from the data included), a suppressed cell costs 1; with ``A`` the sum over
  records and ``D`` the domain size, ``L = (A - n/D) / (n - n/D)`` (0 at the ground level, 1
  when all is ``*``), cut to 10 decimals as ARX does; the figure is
  ``prod_i (1 + w_i L_i)^(1/q) - 1`` with the weights scaled to a maximum of 1.

QI weights (``{qi: weight}``) scale each QI's share in loss, gcp, precision, entropy and
height; they are normalized to a mean of 1, so equal weights change nothing.

>>> import numpy as np
>>> class_metrics(np.array([2, 2]), n_records=5, n_suppressed=1,
...               loss=np.array([[0.5], [0.0]]))["loss"]
0.4
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from blendin.codes import combine_keys, unique_inverse
from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.hierarchy.core import Hierarchy, domain_size

#: metric name -> what it measures (every metric is a loss: lower is better)
METRICS: dict[str, str] = {
    "loss": "Iyengar's loss metric, mean over cells, 0..1",
    "gcp": "global certainty penalty (mean NCP), 0..1",
    "precision": "1 - Sweeney's precision: mean level / (height - 1), 0..1",
    "entropy": "non-uniform entropy, bits over all cells",
    "height": "sum of generalization levels",
    "discernibility": "sum of squared class sizes, n per suppressed record",
    "aecs": "average equivalence class size (suppressed records form one class)",
    "arx-loss": "ARX's Loss: geometric mean over QIs of the domain share lost, 0..1",
}

#: metrics that are sums of per-QI costs of the cells (the rest need class sizes)
CELL_METRICS = ("loss", "gcp", "precision", "entropy", "height")


#: ARX keeps 10 decimals of each QI's normalized loss (Metric.round)
_ARX_DIGITS = 1e10


def arx_loss(aggregates, n_records: int, domain_sizes, weights=None):
    """ARX's Loss from, per QI, the sum over records of each cell's domain share (1 for a
    suppressed cell); ``aggregates`` is (QIs,) or (nodes, QIs). See the module docstring.

    >>> round(arx_loss(np.array([10.0, 4.0]), 10, np.array([4, 2])), 6)  # all *, ground
    0.414214
    """
    agg = np.asarray(aggregates, dtype=float)
    q = agg.shape[-1]
    if q == 0:
        return np.zeros(agg.shape[:-1]) if agg.ndim > 1 else 0.0
    out = np.prod(arx_factors(agg, n_records, domain_sizes, weights), axis=-1) - 1.0
    return out if agg.ndim > 1 else float(out)


def arx_factors(agg: np.ndarray, n_records: int, domain_sizes, weights) -> np.ndarray:
    """arx-loss's factor of every aggregate (QIs on the last axis): Loss = prod - 1.

    >>> arx_factors(np.array([10.0, 4.0]), 10, np.array([4, 2]), None).round(6).tolist()
    [1.414214, 1.0]
    """
    d = np.asarray(domain_sizes, dtype=float)
    n = float(n_records)
    low = n / d
    span = n - low
    norm = np.divide(agg - low, span, out=np.zeros(np.broadcast_shapes(agg.shape, d.shape)),
                     where=span > 0)
    norm = np.floor(np.maximum(norm, 0.0) * _ARX_DIGITS) / _ARX_DIGITS
    q = agg.shape[-1]
    w = np.ones(q) if weights is None else np.asarray(weights, dtype=float)
    w = w / w.max() if w.max() > 0 else np.ones(q)
    return np.power(norm * w + 1.0, 1.0 / q)


def check_metric(metric: str) -> str:
    """The metric name, or a BlendinError listing the known ones."""
    if metric not in METRICS:
        raise BlendinError(
            f"unknown utility metric {metric!r}",
            fix=f"use one of {', '.join(METRICS)}",
        )
    return metric


def normalized_weights(qi_names: Sequence[str], weights: Mapping[str, float] | None) -> np.ndarray:
    """One weight per QI, scaled to a mean of 1 (all 1 when ``weights`` is None).

    QIs missing from ``weights`` weigh 1.

    >>> normalized_weights(["a", "b"], {"a": 3}).tolist()
    [1.5, 0.5]
    """
    q = len(qi_names)
    if not weights:
        return np.ones(q)
    unknown = [name for name in weights if name not in qi_names]
    if unknown:
        raise BlendinError(
            f"weights name {unknown[0]!r}, which is not a quasi-identifier",
            fix=f"weight only the quasi-identifiers: {', '.join(qi_names)}",
        )
    w = np.array([float(weights.get(name, 1.0)) for name in qi_names])
    bad = [n for n, v in zip(qi_names, w) if not np.isfinite(v) or v < 0]
    if bad or w.sum() <= 0:
        raise BlendinError(
            f"the weight of {(bad or list(qi_names))[0]!r} must be a number >= 0 "
            "(and not all weights 0)",
            fix="give each quasi-identifier a weight such as 1 or 2",
        )
    return w * (q / w.sum()) if q else w


def categorical_loss(leaves: np.ndarray, total: int) -> np.ndarray:
    """LM of a category cell covering ``leaves`` of ``total`` ground values."""
    leaves = np.asarray(leaves, dtype=float)
    return (leaves - 1) / (total - 1) if total > 1 else np.zeros_like(leaves)


def categorical_ncp(leaves: np.ndarray, total: int) -> np.ndarray:
    """NCP of a category cell: leaves / total, 0 for a single leaf."""
    leaves = np.asarray(leaves, dtype=float)
    return np.where(leaves > 1, leaves / max(total, 1), 0.0)


def range_share(width: np.ndarray, domain_width: float) -> np.ndarray:
    """LM and NCP of a numeric cell: its range width over the domain's."""
    width = np.asarray(width, dtype=float)
    return width / domain_width if domain_width > 0 else np.zeros_like(width)


def ground_frequencies(ft: FrequencyTable) -> list[np.ndarray]:
    """Records per ground value of each QI (float, indexed by ground code)."""
    weights = ft.counts.astype(float)  # converted once, not by every bincount
    return [np.bincount(ft.columns[i], weights=weights, minlength=len(h.ground))
            for i, h in enumerate(ft.hierarchies)]


def _is_numeric(h: Hierarchy) -> bool:
    return h.kind in ("numeric", "date") and h.numbers is not None


_COSTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True, eq=False)
class CellCosts:
    """Per QI and level, the cost of every generalized value (indexed by its code).

    ``loss[i][l]``, ``ncp[i][l]``, ``log_mass[i][l]`` (log2 of the records whose ground value
    the cell covers) are arrays over the labels of level ``l`` of QI ``i``; ``share[i][l]`` is
    l / (height - 1). ``ground_bits[i]`` is sum over records of log2 f(ground value).
    ``totals[metric][i][l]`` is the metric's sum over all records of QI ``i`` at level ``l``
    (no suppression), so a node's unsuppressed figure is a sum of one entry per QI.
    """

    loss: tuple[tuple[np.ndarray, ...], ...]
    ncp: tuple[tuple[np.ndarray, ...], ...]
    log_mass: tuple[tuple[np.ndarray, ...], ...]
    share: tuple[np.ndarray, ...]
    ground_bits: np.ndarray
    totals: Mapping[str, tuple[np.ndarray, ...]]
    n_records: int
    #: per QI and level, each label's domain share (arx-loss), and per QI the domain size
    arx_share: tuple[tuple[np.ndarray, ...], ...] = ()
    domain_sizes: np.ndarray | None = None

    @classmethod
    def of(cls, ft: FrequencyTable) -> CellCosts:
        """The costs of every cell of every level of ``ft``'s hierarchies (kept per table:
        repeated searches on one table share them)."""
        costs = _COSTS.get(ft)
        if costs is None:
            costs = _COSTS[ft] = cls._compute(ft)
        return costs

    @classmethod
    def _compute(cls, ft: FrequencyTable) -> CellCosts:
        # the totals' makers are kept with the costs, which are kept while ``ft`` lives: they
        # hold its hierarchies, never ``ft`` itself (it would never be let go)
        hierarchies = ft.hierarchies
        qis = [_QiCosts.of(h, f) for h, f in zip(hierarchies, ground_frequencies(ft))]
        n = float(ft.n_records)
        shares = [np.arange(h.height) / (h.height - 1) if h.height > 1 else np.zeros(h.height)
                  for h in hierarchies]
        totals = _Totals({
            "loss": lambda: tuple(c.total(c.loss) for c in qis),
            "gcp": lambda: tuple(c.total(c.ncp) for c in qis),
            "precision": lambda: tuple(share * n for share in shares),
            "entropy": lambda: tuple(c.total(c.log_mass) - c.ground_bits for c in qis),
            "height": lambda: tuple(np.arange(h.height, dtype=float) for h in hierarchies),
            "arx-loss": lambda: tuple(c.total(c.arx_share) for c in qis),
        })
        return cls(
            tuple(c.levels(c.loss) for c in qis), tuple(c.levels(c.ncp) for c in qis),
            tuple(c.levels(c.log_mass) for c in qis), tuple(shares),
            np.array([c.ground_bits for c in qis]), totals, int(n),
            tuple(c.levels(c.arx_share) for c in qis),
            np.array([domain_size(h) for h in hierarchies], dtype=float),
        )

    def cells(self, levels: Sequence[int], codes: np.ndarray) -> dict[str, np.ndarray]:
        """Per-class per-QI cell costs for classes with ``codes`` (classes, QIs) at ``levels``."""
        out = {}
        for name, table in (("loss", self.loss), ("ncp", self.ncp), ("log_mass", self.log_mass),
                            ("arx_share", self.arx_share)):
            cols = [table[i][lv][codes[:, i]] for i, lv in enumerate(levels)]
            out[name] = np.stack(cols, axis=1) if cols else np.zeros((len(codes), 0))
        share = np.array([self.share[i][lv] for i, lv in enumerate(levels)], dtype=float)
        out["share"] = np.broadcast_to(share, (len(codes), len(levels)))
        return out

    def unsuppressed(self, metric: str, levels: Sequence[int], weights: np.ndarray) -> float:
        """The node's figure if nothing were suppressed (a lower bound of its figure)."""
        raw = sum(w * self.totals[metric][i][lv] for i, (lv, w) in enumerate(zip(levels, weights)))
        return finish_cell_metric(metric, float(raw), self.n_records, len(levels))

    def arx_aggregates(self, nodes: np.ndarray) -> np.ndarray:
        """(nodes, QIs) arx-loss sums with nothing suppressed (nodes: (m, QIs) levels)."""
        cols = [self.totals["arx-loss"][i][nodes[:, i]] for i in range(nodes.shape[1])]
        return np.stack(cols, axis=1) if cols else np.zeros((len(nodes), 0))

    def unsuppressed_all(self, metric: str, nodes: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """:meth:`unsuppressed` for many nodes at once (nodes: (m, QIs) levels)."""
        if metric == "arx-loss":  # grows with every QI's sum: a bound too
            # each (QI, level)'s factor once, then gathered per node: the same figures as
            # arx_loss over every node's sums, without a power per node and QI
            totals = self.totals["arx-loss"]
            q = len(totals)
            if q == 0 or not len(nodes):
                return np.zeros(len(nodes))
            table = np.stack([np.resize(t, max(len(u) for u in totals)) for t in totals],
                             axis=1)
            factors = arx_factors(table, self.n_records, self.domain_sizes, weights)
            gathered = np.stack([factors[nodes[:, i], i] for i in range(q)], axis=1)
            return np.prod(gathered, axis=-1) - 1.0
        raw = np.zeros(len(nodes))
        for i, w in enumerate(weights):
            raw += w * self.totals[metric][i][nodes[:, i]]
        return finish_cell_metric(metric, raw, self.n_records, nodes.shape[1])


class _Totals(Mapping):
    """Each metric's totals, computed when first asked for (a search bounds one metric)."""

    def __init__(self, makers: Mapping[str, Callable[[], tuple[np.ndarray, ...]]]) -> None:
        self._makers = makers
        self._made: dict[str, tuple[np.ndarray, ...]] = {}

    def __getitem__(self, metric: str) -> tuple[np.ndarray, ...]:
        if metric not in self._made:
            self._made[metric] = self._makers[metric]()
        return self._made[metric]

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)


@dataclass(frozen=True, eq=False)
class _QiCosts:
    """One QI's cell costs over the labels of all its levels at once: label ``j`` of level
    ``l`` is entry ``starts[l] + j`` (one bincount or gather serves every level)."""

    hierarchy: Hierarchy
    freqs: np.ndarray
    starts: np.ndarray
    labels: np.ndarray  # the entry of every (level, ground value), levels by row
    loss: np.ndarray
    ncp: np.ndarray
    log_mass: np.ndarray
    arx_share: np.ndarray
    ground_bits: float

    @classmethod
    def of(cls, h: Hierarchy, freqs: np.ndarray) -> _QiCosts:
        starts, labels, loss, ncp, arx_share = _hierarchy_costs(h)
        mass = np.bincount(labels.ravel(), weights=np.tile(freqs, h.height),
                           minlength=int(starts[-1]))
        present = freqs[freqs > 0]
        return cls(h, freqs, starts, labels, loss, ncp, np.log2(np.where(mass > 0, mass, 1.0)),
                   arx_share, float((present * np.log2(present)).sum()))

    def levels(self, costs: np.ndarray) -> tuple[np.ndarray, ...]:
        """``costs`` of all labels cut into one array per level."""
        return tuple(costs[a:b] for a, b in zip(self.starts[:-1], self.starts[1:]))

    def total(self, costs: np.ndarray) -> np.ndarray:
        """Per level, the sum over records of each one's cost (nothing suppressed)."""
        return np.array([self.freqs @ row for row in costs[self.labels]])


_HIERARCHY_COSTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _hierarchy_costs(h: Hierarchy) -> tuple[np.ndarray, ...]:
    """What of the cell costs depends on the hierarchy alone (the entry of every label,
    see :class:`_QiCosts`; LM, NCP and ARX's share of every label), made once per hierarchy
    (a builder hands repeated runs on the same values the same hierarchy)."""
    made = _HIERARCHY_COSTS.get(h)
    if made is None:
        starts = np.cumsum([0, *(len(labels) for labels in h.labels)])
        labels = h.codes + starts[:-1, None]
        flat, n_labels, n_ground = labels.ravel(), int(starts[-1]), len(h.ground)
        leaves = np.bincount(flat, minlength=n_labels)
        if _is_numeric(h):
            loss = ncp = _range_shares(h, flat, n_labels)
        else:
            loss, ncp = categorical_loss(leaves, n_ground), categorical_ncp(leaves, n_ground)
        if h.domain_leaves is not None and h.domain_size:
            arx_share = np.concatenate(h.domain_leaves).astype(float) / float(h.domain_size)
        else:
            arx_share = leaves / float(n_ground)
        made = (starts, labels, loss, ncp, arx_share)
        for shared in made:  # every run on the hierarchy reads them: none may write
            shared.flags.writeable = False
        _HIERARCHY_COSTS[h] = made
    return made


def _range_shares(h: Hierarchy, flat: np.ndarray, n_labels: int) -> np.ndarray:
    """LM and NCP of every numeric label: the range its ground values span over the
    domain's (missing values, NaN, span nothing)."""
    numbers = np.asarray(h.numbers, dtype=float)
    values = np.tile(numbers, h.height)
    lo = np.full(n_labels, np.inf)
    hi = np.full(n_labels, -np.inf)
    np.fmin.at(lo, flat, values)
    np.fmax.at(hi, flat, values)
    width = np.where(np.isfinite(hi - lo), hi - lo, 0.0)
    dom = np.nanmax(numbers) - np.nanmin(numbers) if np.isfinite(numbers).any() else 0.0
    return range_share(width, float(dom))


def finish_cell_metric(metric: str, raw, n_records: int, n_qis: int):
    """Turn a weighted sum over records and QIs into the metric's figure."""
    if metric in ("loss", "gcp", "precision"):
        return raw / (n_records * n_qis) if n_records and n_qis else raw * 0.0
    return raw


def _difference(total: float, part: float) -> float:
    """``total - part``, where the two are sums of the same records' terms: 0 where they
    differ by rounding alone (a node that generalizes nothing showed an entropy of 1e-10
    bits; a value generalized costs at least about a bit, times its QI's weight, far above
    1e-12 of the sums).

    >>> _difference(1e6 + 1e-9, 1e6), _difference(1e6 + 1.0, 1e6)
    (0.0, 1.0)
    """
    difference = total - part
    return 0.0 if abs(difference) <= 1e-12 * (abs(total) + abs(part)) else difference


def class_metrics(
    sizes: np.ndarray,
    *,
    n_records: int,
    n_suppressed: int = 0,
    loss: np.ndarray | None = None,
    ncp: np.ndarray | None = None,
    share: np.ndarray | None = None,
    log_mass: np.ndarray | None = None,
    ground_bits: np.ndarray | None = None,
    levels: Sequence[int] | None = None,
    weights: np.ndarray | None = None,
    arx_share: np.ndarray | None = None,
    domain_sizes: np.ndarray | None = None,
) -> dict[str, float]:
    """Metrics of a release given its kept classes (the generic form, e.g. for Mondrian).

    ``sizes`` (classes,) are the kept classes' record counts; ``loss``, ``ncp``, ``share``
    (level / (height - 1)) and ``log_mass`` (log2 of the table's records whose ground value
    lies in the cell) are (classes, QIs) cell costs; each is optional and gives its metric.
    ``entropy`` needs ``log_mass`` and ``ground_bits`` (per QI, sum over all records of log2
    of their ground value's frequency); ``height`` needs ``levels``. ``n_suppressed`` records
    are counted as fully generalized. ``weights`` (QIs,) should have a mean of 1
    (:func:`normalized_weights`). ``arx-loss`` needs ``arx_share`` (each cell's domain share)
    and ``domain_sizes`` (per QI).

    >>> class_metrics(np.array([3, 1]), n_records=5, n_suppressed=1)
    {'discernibility': 15.0, 'aecs': 1.6666666666666667}
    """
    sizes = np.asarray(sizes, dtype=float)
    n = float(n_records)
    out: dict[str, float] = {}
    q = next((np.shape(a)[1] for a in (loss, ncp, share, log_mass, arx_share) if a is not None),
             None)
    if q is None and levels is not None:
        q = len(levels)
    w = np.ones(q or 0) if weights is None else np.asarray(weights, dtype=float)
    for name, cells in (("loss", loss), ("gcp", ncp), ("precision", share)):
        if cells is not None:
            raw = float(sizes @ (np.asarray(cells, dtype=float) @ w)) + n_suppressed * w.sum()
            out[name] = float(finish_cell_metric(name, raw, n_records, len(w)))
    if log_mass is not None and ground_bits is not None:
        kept = float(sizes @ (np.asarray(log_mass, dtype=float) @ w))
        sup = n_suppressed * np.log2(n) * w.sum() if n_suppressed else 0.0
        ground = float(np.asarray(ground_bits) @ w)
        out["entropy"] = _difference(kept + sup, ground)
    if levels is not None:
        out["height"] = float(np.asarray(levels, dtype=float) @ w)
    if arx_share is not None and domain_sizes is not None:
        sums = sizes @ np.asarray(arx_share, dtype=float) + n_suppressed
        out["arx-loss"] = arx_loss(sums, n_records, domain_sizes, w)
    out["discernibility"] = float(sizes @ sizes + n * n_suppressed)
    n_classes = len(sizes) + (1 if n_suppressed else 0)
    out["aecs"] = n / n_classes if n_classes else 0.0
    return out


def utility_of_node(
    ft: FrequencyTable,
    levels: Sequence[int],
    suppressed: np.ndarray | None = None,
    *,
    weights: Mapping[str, float] | None = None,
    costs: CellCosts | None = None,
) -> dict[str, float]:
    """Every metric of the full-domain release at ``levels``.

    ``suppressed`` is a bool per tuple of ``ft`` (its records are suppressed), or None.

    >>> import pandas as pd
    >>> from blendin.hierarchy.core import Hierarchy
    >>> h = Hierarchy.from_rows([["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
    >>> ft = FrequencyTable.from_table(pd.DataFrame({"x": ["1", "2", "3", "3"]}), {"x": h})
    >>> m = utility_of_node(ft, [1], np.array([False, False, True]))
    >>> m["loss"], m["precision"], m["discernibility"]
    (0.75, 0.75, 12.0)
    """
    levels = [int(v) for v in levels]
    costs = costs or CellCosts.of(ft)
    w = normalized_weights(ft.qi_names, weights)
    keep = np.ones(len(ft.counts), bool) if suppressed is None else ~np.asarray(suppressed, bool)
    codes = ft.generalized(levels)[keep]
    radices = [len(h.labels[lv]) for h, lv in zip(ft.hierarchies, levels)]

    key = combine_keys(codes, radices)
    inverse, n_classes = unique_inverse(key, math.prod(radices))
    sizes = np.bincount(inverse, weights=ft.counts[keep], minlength=n_classes)
    member = np.empty(n_classes, np.int64)  # a tuple of each class (all share its codes)
    member[inverse] = np.arange(len(inverse))
    cells = costs.cells(levels, codes[member])
    n_sup = int(ft.counts[~keep].sum())
    return class_metrics(
        sizes, n_records=ft.n_records, n_suppressed=n_sup, loss=cells["loss"], ncp=cells["ncp"],
        share=cells["share"], log_mass=cells["log_mass"], ground_bits=costs.ground_bits,
        levels=levels, weights=w, arx_share=cells["arx_share"], domain_sizes=costs.domain_sizes,
    )
