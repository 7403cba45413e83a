"""Local (cell) suppression to k: blank the fewest quasi-identifier cells so that every
record is compatible with at least k records, a blank matching any value (sdcMicro's
``localSuppression`` rule).

Everything works on distinct tuples of codes with their record counts (a frequency table):
records with equal values are blanked alike. A blank is held in a boolean mask beside the
codes; a blank pattern is a bit set of columns.

The counting (:func:`compatible`) groups the table by blank pattern: a row of pattern A is
compatible with the rows of pattern B that equal it on the columns blank in neither, which is
one group-by of B's rows on those columns and one look-up, for each pair of patterns present.

The search (:func:`suppress_cells`) gives each record that falls short the smallest set of
blanks that brings it to k against the current table, preferring the columns first in
``priority`` (sets of one column in priority order, then pairs, ...). Blanks only ever add
compatible records, so a set that reaches k stays enough whatever is blanked later; the
records are then committed one by one, smallest count first, and a record that another's
blanks already brought to k keeps all its values. One whose count moved but not to k is
planned again in the next round, against the table as it then is.

>>> codes = np.array([[0, 0], [0, 1], [1, 1]])   # distinct tuples
>>> blank = suppress_cells(codes, np.array([2, 1, 2]), 2)
>>> blank.astype(int).tolist()                    # (0, 1) shows (*, 1): like (1, 1)
[[0, 0], [1, 0], [0, 0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np

from blendin.codes import combine_keys
from blendin.errors import BlendinError


def patterns(blank: np.ndarray) -> np.ndarray:
    """Each row's blank columns as one bit set (column j is bit j).

    >>> patterns(np.array([[True, False, True], [False, False, False]])).tolist()
    [5, 0]
    """
    weights = np.left_shift(np.int64(1), np.arange(blank.shape[1], dtype=np.int64))
    return blank.astype(np.int64) @ weights


def compatible(codes: np.ndarray, blank: np.ndarray, counts: np.ndarray,
               query: np.ndarray | None = None, query_blank: np.ndarray | None = None
               ) -> np.ndarray:
    """For each query row (by default each row of the table), the records of the table
    compatible with it: equal on every column where neither is blank (itself included).
    ``counts`` may be weights: their sum is then given.

    >>> codes = np.array([[0, 0], [0, 1], [1, 1]])
    >>> blank = np.array([[False, False], [False, True], [False, False]])
    >>> compatible(codes, blank, np.array([1, 1, 1])).tolist()
    [2, 2, 1]
    """
    if query is None:
        query, query_blank = codes, blank
    counts = np.asarray(counts)  # records, or weights (sums of sampling weights)
    out = np.zeros(len(query), counts.dtype)
    table_patterns, query_patterns = patterns(blank), patterns(query_blank)
    columns = codes.shape[1]
    for b in np.unique(table_patterns):
        rows = table_patterns == b
        for a in np.unique(query_patterns):
            asked = query_patterns == a
            free = [j for j in range(columns) if not (int(a | b) >> j) & 1]
            out[asked] += _matches(codes[rows][:, free], counts[rows],
                                   query[asked][:, free])
    return out


def _matches(table: np.ndarray, counts: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Per query row, the counts of the table rows equal to it (on every column given)."""
    if not table.shape[1]:
        return np.full(len(query), counts.sum(), counts.dtype)
    stacked = np.concatenate([table, query])
    radices = [int(c.max()) + 1 for c in stacked.T]
    key = combine_keys(stacked, radices)  # together: a ranked key stays comparable
    keys, inverse = np.unique(key[:len(table)], return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=counts, minlength=len(keys))
    asked = key[len(table):]
    at = np.minimum(np.searchsorted(keys, asked), max(len(keys) - 1, 0))
    hit = keys[at] == asked if len(keys) else np.zeros(len(asked), bool)
    return np.where(hit, sums[at] if len(keys) else 0, 0).astype(counts.dtype)


def suppress_cells(codes: np.ndarray, counts: np.ndarray, k: int, *,
                   priority: Sequence[int] = (),
                   blank: np.ndarray | None = None) -> np.ndarray:
    """The blank mask (rows × columns) that makes every row compatible with at least ``k``
    records, blanking only rows that fall short and as few cells as it finds.

    ``codes`` are distinct tuples (one row each, non-negative codes) and ``counts`` their
    records; ``priority`` names the columns blanked first, in order, the others following
    with the most distinct values first (sdcMicro's default importance); ``blank`` holds
    blanks already there.
    """
    codes = np.asarray(codes, np.int64)
    counts = np.asarray(counts, np.int64)
    rows, columns = codes.shape
    if int(counts.sum()) < k:
        raise BlendinError(
            f"the table holds {int(counts.sum()):,} records, fewer than k = {k}: no cell "
            "suppression makes a record compatible with k", fix="lower k, or give more records")
    blank = np.zeros((rows, columns), bool) if blank is None else blank.copy()
    distinct = [len(np.unique(c)) for c in codes.T]
    order = [*priority, *sorted((j for j in range(columns) if j not in priority),
                                key=lambda j: -distinct[j])]
    todo = np.flatnonzero(compatible(codes, blank, counts) < k)
    planned = todo
    while len(todo):
        todo = _round(codes, counts, blank, todo, k, order)
    _restore(codes, counts, blank, planned, k, order[::-1])
    return blank


def _restore(codes, counts, blank, rows, k, order) -> None:
    """Give back each blanked cell of ``rows`` (the last in priority first) that no row
    needs: with its value back, its row and every row that matched it only through the
    blank still have ``k`` compatible records (``blank`` in place)."""
    now = compatible(codes, blank, counts)
    near = _Near(codes, blank)
    for column in order:
        for row in rows[blank[rows, column]]:
            after = blank[row].copy()
            after[column] = False
            # the rows that match it now or after: equal or blank on another column it shows
            seen = near(row, after, besides=column)
            same = codes[seen] == codes[row]
            was = np.all(same | blank[seen] | blank[row], axis=1)
            still = np.all(same | blank[seen] | after, axis=1)
            lost = seen[was & ~still]
            own = int(counts[seen[still]].sum())
            if own < k or np.any(now[lost] - counts[row] < k):
                continue
            near.set(row, after)
            now[lost] -= counts[row]
            now[row] = own


class _Near:
    """The rows that can match a row: those equal to it, or blank, on one column it shows
    (the one that leaves the fewest), found by a binary search in that column's order
    instead of a comparison with every row. ``blank`` is the table's, kept up to date
    through :meth:`set`."""

    def __init__(self, codes: np.ndarray, blank: np.ndarray) -> None:
        self.codes, self.blank = codes, blank
        self.order = [np.argsort(c, kind="stable") for c in codes.T]
        self.sorted = [c[o] for c, o in zip(codes.T, self.order)]
        self.blanks = blank.sum(axis=0)

    def set(self, row: int, blank: np.ndarray) -> None:
        self.blanks += blank.astype(np.int64) - self.blank[row]
        self.blank[row] = blank

    def __call__(self, row: int, shown_blank: np.ndarray, besides: int | None = None
                 ) -> np.ndarray:
        best, rows = None, len(self.codes) + 1
        for column in np.flatnonzero(~shown_blank):
            if column == besides:
                continue
            value = self.codes[row, column]
            lo, hi = np.searchsorted(self.sorted[column], [value, value + 1])
            if hi - lo + self.blanks[column] < rows:
                best, rows, span = column, hi - lo + self.blanks[column], (lo, hi)
        if best is None:
            return np.arange(len(self.codes))
        equal = self.order[best][span[0]:span[1]]
        blank = self.blank[:, best]
        return np.concatenate([equal[~blank[equal]], np.flatnonzero(blank)])


def _round(codes, counts, blank, todo, k, priority) -> np.ndarray:
    """Plan every row of ``todo`` against the table as it is, commit the plans in order
    of need (``blank`` in place), and return the rows left for another round."""
    now = compatible(codes, blank, counts, codes[todo], blank[todo])
    planned, reached = _plans(codes, counts, blank, todo, k, priority)
    start = now.copy()
    again = []
    near = _Near(codes[todo], blank[todo])  # among the rows of todo, at their blanks
    for i in np.argsort(now, kind="stable"):  # the most at risk first, as sdcMicro
        if now[i] >= k:
            continue  # another's blanks brought it to k
        if now[i] != start[i]:
            again.append(todo[i])  # its plan was made for another table: plan it afresh
            continue
        row = todo[i]
        before = blank[row].copy()
        blank[row] |= planned[i]
        near.set(i, blank[row])
        # the others this row now matches, and did not before, count its records too
        seen = near(i, blank[row])
        others = near.blank[seen]
        same = near.codes[seen] == codes[row]
        was = np.all(same | others | before, axis=1)
        is_now = np.all(same | others | blank[row], axis=1)
        now[seen[is_now & ~was]] += counts[row]
        now[i] = reached[i]
    return np.array(again, np.int64)


#: sets of up to this many cells are tried in full; a row that needs more grows its set one
#: cell at a time (C(24, 3) = 2,024 sets, where all of 24 columns' would be 16 million)
EXHAUSTIVE = 3


def _plans(codes, counts, blank, todo, k, priority):
    """Per row of ``todo``: the fewest further blanks that bring it to ``k`` (the first such
    set in priority order, among sets of up to EXHAUSTIVE cells; then grown greedily) and
    the count it then reaches."""
    columns = codes.shape[1]
    planned = np.zeros((len(todo), columns), bool)
    reached = np.zeros(len(todo), np.int64)
    open_ = np.ones(len(todo), bool)
    for size in range(1, min(columns, EXHAUSTIVE) + 1):
        for chosen in combinations(priority, size):
            extra = np.zeros(columns, bool)
            extra[list(chosen)] = True
            # a set that blanks a blank cell again is a smaller set, tried already
            asked = open_ & ~np.any(blank[todo] & extra, axis=1)
            if not asked.any():
                continue
            rows = todo[asked]
            count = compatible(codes, blank, counts, codes[rows], blank[rows] | extra)
            done = np.flatnonzero(asked)[count >= k]
            planned[done] = extra
            reached[done] = count[count >= k]
            open_[done] = False
            if not open_.any():
                return planned, reached
    _grown(codes, counts, blank, todo, k, priority, planned, reached, open_)
    return planned, reached


def _grown(codes, counts, blank, todo, k, priority, planned, reached, open_) -> None:
    """The rows still ``open_`` blank, one cell at a time, the cell that brings them the
    most compatible records (the first in priority order among equals), until they reach
    ``k`` (in place). Blanking every cell reaches any k the table allows."""
    while open_.any():
        rows = np.flatnonzero(open_)
        best = np.full(len(rows), -1, np.int64)
        gain = np.full(len(rows), -1, np.int64)
        for column in priority:
            shown = ~(blank[todo[rows], column] | planned[rows, column])
            if not shown.any():
                continue
            trial = blank[todo[rows]] | planned[rows]
            trial[:, column] = True
            count = compatible(codes, blank, counts, codes[todo[rows]], trial)
            better = shown & (count > gain)
            best[better], gain[better] = column, count[better]
        planned[rows, best] = True
        done = gain >= k
        reached[rows[done]] = gain[done]
        open_[rows[done]] = False
