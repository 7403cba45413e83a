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
    scaled = x / np.sqrt(np.where(variance > 0, variance, 1.0))
    group = np.full(n, -1, dtype=np.int64)
    left = np.arange(n)  # the records not yet grouped, and their scaled values
    points = scaled
    total = points.sum(axis=0)  # kept up to date: the centroid without a pass
    number = 0
    while len(left) >= 2 * k:
        start = int(np.argmax(_distance(points, total / len(left))))
        rounds = 2 if len(left) >= 3 * k else 1
        taken = np.zeros(len(left), dtype=bool)
        for _ in range(rounds):
            away = _distance(points, points[start])
            away[taken] = np.inf
            nearest = np.argpartition(away, k - 1)[:k]
            taken[nearest] = True
            group[left[nearest]] = number
            number += 1
            away[taken] = -np.inf
            start = int(np.argmax(away))  # the farthest from this group's first record
        total = total - points[taken].sum(axis=0)
        left, points = left[~taken], points[~taken]
    if len(left):
        group[left] = number
    return group


def _distance(points: np.ndarray, origin: np.ndarray) -> np.ndarray:
    gap = points - origin
    return np.einsum("ij,ij->i", gap, gap)


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
