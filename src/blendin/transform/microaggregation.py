"""Microaggregation (MDAV, Domingo-Ferrer & Mateo-Sanz): numeric columns released as the means
of groups of at least ``k`` similar records, so each record shares its values with ``k - 1``
others by construction.

MDAV works on the columns together, each scaled by its variance (as sdcMicro's ``mdav``):
while at least ``3k`` records are left, the record farthest from their centroid and the record
farthest from that one each gather their ``k - 1`` nearest into a group; between ``2k`` and
``3k - 1`` left, one group is made this way and the rest is the last group; fewer than ``2k``
form one group. Every group has ``k`` to ``2k - 1`` records.

Information loss is measured as sdcMicro does: IL1 (``Σ 100 |x - x'| / |x|`` over the cells
whose value is not 0), IL1s (``Σ |x - x'| / (sd · √2)`` over the cells) and the squared
error ``Σ (x - x')²``.

>>> import numpy as np
>>> x = np.array([[1.0], [2.0], [3.0], [10.0], [11.0], [12.0]])
>>> groups = mdav(x, 3)
>>> aggregated(x, groups).ravel().tolist()
[2.0, 2.0, 2.0, 11.0, 11.0, 11.0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from blendin.errors import BlendinError


def mdav(x: np.ndarray, k: int) -> np.ndarray:
    """The MDAV group of each row of ``x`` (rows × numeric columns, no NaN): group numbers
    0, 1, ... each held by ``k`` to ``2k - 1`` rows (all rows in one group when fewer
    than ``2k``)."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or np.isnan(x).any():
        raise BlendinError("microaggregation needs numbers in every cell",
                           fix="fill or drop the missing values first")
    n = len(x)
    if k < 1:
        raise BlendinError(f"microaggregation needs k of 1 or more, got {k}",
                           fix="give e.g. k = 3")
    variance = x.var(axis=0)
    # centred too (distances do not change): the expansion below then loses no precision
    # to a large mean
    scaled = (x - x.mean(axis=0)) / np.sqrt(np.where(variance > 0, variance, 1.0))
    group = np.full(n, -1, dtype=np.int64)
    # the records not yet grouped (the first ``live`` of ``left``) and their scaled values;
    # a group's records leave by taking the places of the last ones (a few moves, not a
    # copy). A squared distance is |p|² - 2 p·o + |o|²: one matrix-vector product a pass
    left = np.arange(n)
    points = scaled.copy()
    norms = np.einsum("ij,ij->i", points, points)
    total = scaled.sum(axis=0)  # kept up to date: the centroid without a pass
    live, number = n, 0
    while live >= 2 * k:
        view, squares = points[:live], norms[:live]
        start = int(np.argmax(_distance(view, squares, total / live)))
        taken = []
        for _ in range(2 if live >= 3 * k else 1):
            away = _distance(view, squares, view[start])
            for earlier in taken:
                away[earlier] = np.inf
            nearest = _nearest(away, k)
            taken.append(nearest)
            group[left[nearest]] = number
            number += 1
            total -= view[nearest].sum(axis=0)
            away[np.concatenate(taken)] = -np.inf
            start = int(np.argmax(away))  # the farthest from this group's first record
        live = _remove(np.concatenate(taken), live, left, points, norms)
    if live:
        group[left[:live]] = number
    return group


def _remove(gone: np.ndarray, live: int, left: np.ndarray, points: np.ndarray,
            norms: np.ndarray) -> int:
    """Drop the rows ``gone`` from the first ``live`` rows: the last rows that stay move
    into their places. Returns the rows left."""
    after = live - len(gone)
    holes = gone[gone < after]
    tail = np.ones(live - after, bool)
    tail[gone[gone >= after] - after] = False
    movers = np.flatnonzero(tail) + after
    left[holes] = left[movers]
    points[holes] = points[movers]
    norms[holes] = norms[movers]
    return after


def _nearest(away: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` smallest of ``away`` (changed): a few argmin passes for a small ``k``,
    faster than a partition of the whole array."""
    if k > 6:
        return np.argpartition(away, k - 1)[:k]
    nearest = np.empty(k, np.int64)
    for i in range(k):
        nearest[i] = at = away.argmin()
        away[at] = np.inf
    return nearest


def _distance(points: np.ndarray, squares: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """Squared distance of every point to ``origin`` (``squares``: the points' own)."""
    out = points @ origin
    out *= -2.0
    out += squares
    out += origin @ origin
    return out


def aggregated(x: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Each row of ``x`` replaced by the mean of its group."""
    x = np.asarray(x, dtype=float)
    sizes = np.bincount(group)
    means = np.stack([np.bincount(group, weights=x[:, j]) / sizes
                      for j in range(x.shape[1])], axis=1)
    return means[group]


@dataclass(frozen=True)
class Loss:
    """Information loss of microaggregated values (sdcMicro's ``dUtility`` measures)."""

    il1: float
    il1s: float
    squared_error: float

    @classmethod
    def of(cls, x: np.ndarray, released: np.ndarray) -> Loss:
        """The loss of ``released`` against the original ``x`` (same shape)."""
        x = np.asarray(x, dtype=float)
        released = np.asarray(released, dtype=float)
        gap = np.abs(x - released)
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = 100 * gap / np.abs(x)
        il1 = float(relative[np.isfinite(relative)].sum())
        sd = x.std(axis=0, ddof=1) if len(x) > 1 else np.ones(x.shape[1])
        scaled = gap / (np.where(sd > 0, sd, 1.0) * np.sqrt(2))
        return cls(il1, float(scaled.sum()), float(np.square(x - released).sum()))


def optimal(x: np.ndarray, k: int) -> np.ndarray:
    """The group of each value of ``x`` (one column) in the univariate microaggregation of
    least squared error (Hansen & Mukherjee): the sorted values cut into runs of ``k`` to
    ``2k - 1``, the cuts chosen by dynamic programming over the prefix sums.

    >>> optimal(np.array([1.0, 9.0, 2.0, 10.0, 3.0, 11.0, 12.0]), 3).tolist()
    [0, 1, 0, 1, 0, 1, 1]
    """
    x = np.asarray(x, dtype=float).reshape(-1)
    if np.isnan(x).any():
        raise BlendinError("microaggregation needs numbers in every cell",
                           fix="fill or drop the missing values first")
    if k < 1:
        raise BlendinError(f"microaggregation needs k of 1 or more, got {k}",
                           fix="give e.g. k = 3")
    n = len(x)
    order = np.argsort(x, kind="stable")
    if n < 2 * k:
        return np.zeros(n, np.int64)
    values = x[order]
    sums = np.concatenate([[0.0], np.cumsum(values)])
    squares = np.concatenate([[0.0], np.cumsum(values * values)])
    cost = np.full(n + 1, np.inf)
    cost[0] = 0.0
    cut = np.zeros(n + 1, np.int64)
    sizes = np.arange(k, 2 * k)
    # the ends i of a block of k depend only on ends at least k before: one step a block
    for first in range(k, n + 1, k):
        ends = np.arange(first, min(first + k, n + 1))
        starts = ends[:, None] - sizes[None, :]
        ok = starts >= 0
        starts = np.maximum(starts, 0)
        size = ends[:, None] - starts
        gap = sums[ends][:, None] - sums[starts]
        error = squares[ends][:, None] - squares[starts] - gap * gap / size
        total = np.where(ok, cost[starts] + error, np.inf)
        best = np.argmin(total, axis=1)
        cost[ends] = total[np.arange(len(ends)), best]
        cut[ends] = starts[np.arange(len(ends)), best]
    bounds = [n]
    while bounds[-1] > 0:
        bounds.append(int(cut[bounds[-1]]))
    edges = np.array(bounds[::-1])
    group = np.empty(n, np.int64)
    group[order] = np.repeat(np.arange(len(edges) - 1), np.diff(edges))
    return group


#: microaggregation methods: MDAV over the columns together, or the optimal univariate
#: partition of each column alone
METHODS = ("mdav", "optimal")


@dataclass(frozen=True)
class Microaggregate:
    """Release numeric columns as the means of groups of at least ``k`` records:
    ``"mdav"`` groups the columns given together (each scaled by its variance),
    ``"optimal"`` groups each column alone with the least squared error.

    >>> Microaggregate(3).groups(np.array([[1.0], [2.0], [3.0], [10.0], [11.0], [12.0]]))
    [array([0, 0, 0, 1, 1, 1])]
    """

    k: int
    method: str = "mdav"

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 2:
            raise BlendinError(f"microaggregate k must be a whole number of 2 or more, got "
                               f"{self.k!r}", fix="write e.g. microaggregate = { k = 3 }")
        if self.method not in METHODS:
            raise BlendinError(f"unknown microaggregation method {self.method!r}",
                               fix=f"use one of: {', '.join(METHODS)}")

    def groups(self, x: np.ndarray) -> list[np.ndarray]:
        """The group of each row: one grouping for MDAV, one a column for ``optimal``."""
        if self.method == "mdav":
            return [mdav(x, self.k)]
        return [optimal(column, self.k) for column in np.asarray(x, float).T]

    def to_toml(self) -> dict:
        return {"microaggregate": {"k": self.k, **({"method": self.method}
                                                   if self.method != "mdav" else {})}}


def smallest_group(x: np.ndarray) -> int:
    """The fewest records sharing one released tuple of ``x`` (rows × columns)."""
    if not len(x):
        return 0
    _, counts = np.unique(np.asarray(x), axis=0, return_counts=True)
    return int(counts.min())
