"""l-diversity: distinct, entropy and recursive (c, l) (Machanavajjhala et al., TKDD 2007)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from blendin.errors import BlendinError, Unmeetable
from blendin.frequency import Classes, SensitiveDomain
from blendin.models.base import (
    RELATIVE_TOLERANCE,
    _attribute,
    _real,
    _SensitiveModel,
    _whole_number,
    at_least,
)


class _LDiversity(_SensitiveModel):
    """Shared checks of the l-diversity variants."""

    def _check_l(self) -> None:
        self.attribute = _attribute(self.key, self.attribute)
        _whole_number(self.key, "l", self.l, "set l = 2 or more")

    def validate(self, n_records: int, domains: Mapping[str, SensitiveDomain]) -> None:
        super().validate(n_records, domains)
        distinct = int(np.count_nonzero(np.asarray(domains[self.attribute].overall)))
        if self.l > distinct:
            raise Unmeetable(
                f"{self.key}: l = {self.l} but {self.attribute!r} has only {distinct} distinct "
                "value(s) in the whole table, so no class can be that diverse",
                fix=f"choose l <= {distinct}",
            )


class DistinctLDiversity(_LDiversity):
    """Every class holds at least ``l`` distinct values of the sensitive attribute.

    Machanavajjhala et al. (2007), "distinct l-diversity": ``|{s : n(E, s) > 0}| >= l``.
    Monotone, with suppression too: a class with l distinct values keeps them when merged
    with any other class (ARX treats it the same way). The figure is the smallest number of
    distinct values in a class.

    >>> import numpy as np
    >>> from blendin.frequency import Classes, SensitiveDomain
    >>> dx = SensitiveDomain("dx", np.array(["flu", "gout", "hiv"], dtype=object),
    ...                      np.array([4, 3, 1]))
    >>> classes = Classes(np.array([4, 4]), {"dx": np.array([[2, 2, 0], [2, 1, 1]])},
    ...                   {"dx": dx})
    >>> DistinctLDiversity("dx", 3).holds(classes).tolist()
    [False, True]
    >>> DistinctLDiversity("dx", 3).figure(classes)
    2.0
    """

    key = "distinct-l-diversity"
    figure_name = "smallest number of distinct values"

    def __init__(self, attribute: str, l: int) -> None:  # noqa: E741 (the papers' name)
        self.attribute = attribute
        self.l = l
        self._check()
        self.l = int(l)

    def _check(self) -> None:
        self._check_l()

    def per_class(self, classes: Classes) -> np.ndarray:
        return np.count_nonzero(self.histogram(classes), axis=1).astype(float)

    def holds(self, classes: Classes) -> np.ndarray:
        return np.count_nonzero(self.histogram(classes), axis=1) >= self.l


def entropies(histograms: np.ndarray) -> np.ndarray:
    """Shannon entropy (natural log) of every row of a count matrix, with 0 log 0 = 0.

    ``H = log n - (sum r log r) / n`` for counts r summing to n; an empty row has entropy 0.

    >>> entropies(np.array([[2, 2, 0], [5, 0, 0]])).round(4).tolist()
    [0.6931, 0.0]
    """
    counts = np.asarray(histograms, dtype=float)
    n = counts.sum(axis=1)
    # r log r with log(max(r, 1)): zero where r is 0 or 1, and no log(0) warning
    weighted = (counts * np.log(np.maximum(counts, 1.0))).sum(axis=1)
    safe_n = np.maximum(n, 1.0)
    # clipped: a single value gives log n - log n, which may round a hair below zero
    return np.maximum(np.where(n > 0, np.log(safe_n) - weighted / safe_n, 0.0), 0.0)


class EntropyLDiversity(_LDiversity):
    """The sensitive values of every class have entropy at least ``log(l)``.

    Machanavajjhala et al. (2007), "entropy l-diversity":
    ``-sum_s p(E, s) log p(E, s) >= log(l)`` with ``p(E, s)`` the share of value s in class
    E and ``0 log 0 = 0``; compared with a slack of 1e-12 of log(l) so that a class exactly
    at log(l) (l equally frequent values) passes, and one a hair below (20,000 and 20,001
    records of two values: 3e-10 below log 2) fails. ``l`` may be fractional.

    Monotone without suppression: entropy is concave, so a merged class has at least the
    smaller entropy of its parts (the paper's monotonicity property). NOT monotone with
    suppression: merging a diverse class into a large uniform one can fall below log(l),
    so generalizing can add violating records (ARX treats it the same way). The figure is
    the smallest ``exp(entropy)``: the effective number of values, comparable with l.

    >>> import numpy as np
    >>> from blendin.frequency import Classes, SensitiveDomain
    >>> dx = SensitiveDomain("dx", np.array(["flu", "gout"], dtype=object), np.array([5, 3]))
    >>> classes = Classes(np.array([4, 4]), {"dx": np.array([[2, 2], [3, 1]])}, {"dx": dx})
    >>> EntropyLDiversity("dx", 2).holds(classes).tolist()
    [True, False]
    >>> round(EntropyLDiversity("dx", 2).figure(classes), 3)
    1.755
    """

    key = "entropy-l-diversity"
    figure_name = "smallest effective l (exp of entropy)"
    monotone_with_suppression = False

    def __init__(self, attribute: str, l: float) -> None:  # noqa: E741 (the papers' name)
        self.attribute = attribute
        self.l = l
        self._check()
        self.l = int(l) if isinstance(l, int | np.integer) else float(l)

    def _check(self) -> None:
        self.attribute = _attribute(self.key, self.attribute)
        _real(self.key, "l", self.l, "set l = 2 or more")
        if self.l < 1:
            raise BlendinError(f"{self.key}: l must be >= 1, got {self.l!r}",
                               fix="set l = 2 or more")

    def per_class(self, classes: Classes) -> np.ndarray:
        return np.exp(entropies(self.histogram(classes)))

    def holds(self, classes: Classes) -> np.ndarray:
        return at_least(entropies(self.histogram(classes)), np.log(self.l))



def recursive_levels(histograms: np.ndarray, c: float) -> np.ndarray:
    """For every row, the largest l for which it is recursive (c, l)-diverse (0 if none).

    Row counts sorted decreasing are r_1 >= r_2 >= ... >= r_m; (c, l) holds when
    ``r_1 < c (r_l + ... + r_m)``. The right side shrinks as l grows, so the l that hold
    are 1..L and L is the number of l that hold.

    >>> recursive_levels(np.array([[3, 2, 1], [6, 1, 1]]), 2.0).tolist()  # 3 < 2*1 fails
    [2, 1]
    """
    return _recursive_table(histograms, c).sum(axis=1)


def _recursive_table(histograms: np.ndarray, c: float) -> np.ndarray:
    """(rows, values) bool: column i tells whether (c, l = i + 1) holds."""
    r = -np.sort(-np.asarray(histograms, dtype=float), axis=1)
    tail = np.cumsum(r[:, ::-1], axis=1)[:, ::-1]  # tail[:, i] = r_{i+1} + ... + r_m
    bound = c * tail
    return bound - r[:, :1] > RELATIVE_TOLERANCE * bound


class RecursiveCLDiversity(_LDiversity):
    """In every class the most frequent value is not too frequent: ``r_1 < c (r_l + ... + r_m)``.

    Machanavajjhala et al. (2007), "recursive (c, l)-diversity", with ``r_i`` the i-th
    largest count of a sensitive value in the class (a class with fewer than l values
    fails). Monotone without suppression (proven in the paper); NOT monotone with
    suppression, for the same reason as entropy l-diversity (ARX agrees). The figure is,
    for the model's c, the largest l for which every class is (c, l)-diverse: 3 means each
    class is (c, 3)-diverse and some class is not (c, 4)-diverse; 0 means some class fails
    even l = 1.

    >>> import numpy as np
    >>> from blendin.frequency import Classes, SensitiveDomain
    >>> dx = SensitiveDomain("dx", np.array(["a", "b", "c"], dtype=object), np.array([9, 3, 2]))
    >>> classes = Classes(np.array([6, 8]), {"dx": np.array([[3, 2, 1], [6, 1, 1]])},
    ...                   {"dx": dx})
    >>> RecursiveCLDiversity("dx", 2, 2).holds(classes).tolist()  # 3 < 2*3, 6 < 2*2 fails
    [True, False]
    >>> RecursiveCLDiversity("dx", 4, 2).figure(classes)  # (4, 3): 3 < 4, 6 < 4 fails
    2.0
    """

    key = "recursive-cl-diversity"
    figure_name = "smallest l reached at the given c"
    monotone_with_suppression = False

    def __init__(self, attribute: str, c: float, l: int) -> None:  # noqa: E741
        self.attribute = attribute
        self.c = c
        self.l = l
        self._check()
        self.c = int(c) if isinstance(c, int | np.integer) else float(c)
        self.l = int(l)

    def _check(self) -> None:
        self._check_l()
        _real(self.key, "c", self.c, "set c to a positive number, e.g. c = 3")
        if self.c <= 0:
            raise BlendinError(f"{self.key}: c must be > 0, got {self.c!r}",
                               fix="set c to a positive number, e.g. c = 3")

    def per_class(self, classes: Classes) -> np.ndarray:
        return recursive_levels(self.histogram(classes), self.c).astype(float)

    def holds(self, classes: Classes) -> np.ndarray:
        table = _recursive_table(self.histogram(classes), self.c)
        if self.l > table.shape[1]:
            return np.zeros(table.shape[0], dtype=bool)
        return table[:, self.l - 1]
