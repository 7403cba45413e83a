"""Encoding and the frequency table: the only summary of the data the search needs.

A table is reduced, chunk by chunk, to its distinct (quasi-identifier, sensitive) text tuples
with counts by the engine's group-by; hierarchies are built from the distinct values, and the
tuples are encoded to integer ground codes (of dictionary-encoded tuples, only the
dictionaries are looked up). Equivalence classes at any generalization are then group-sums
over this small table, never over rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import COUNT, combine_keys, stable_order
from blendin.groupby import distinct_tuples
from blendin.hierarchy.core import Hierarchy, first_seen
from blendin.io import to_arrow


@dataclass(frozen=True, eq=False)
class SensitiveDomain:
    """The values of a sensitive attribute and their distribution over the whole table.

    ``numbers`` orders the values for the ordered distance of t-closeness (None when the
    values are not numbers); ``hierarchy`` serves the hierarchical distance.
    """

    name: str
    labels: np.ndarray
    overall: np.ndarray
    hierarchy: Hierarchy | None = None

    @property
    def numbers(self) -> np.ndarray | None:
        try:
            return self.labels.astype(float)
        except ValueError:
            return None


@dataclass(frozen=True, eq=False)
class Classes:
    """Equivalence classes: their sizes and, per sensitive attribute, their histograms.

    ``histograms[name]`` has shape (classes, values of ``domains[name]``); ``population``,
    for a model with a population (delta-presence, k-map against a table), the people of
    the population in each class at the same generalization.
    """

    sizes: np.ndarray
    histograms: Mapping[str, np.ndarray]
    domains: Mapping[str, SensitiveDomain]
    population: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.sizes)

    def subset(self, mask: np.ndarray) -> Classes:
        """Only the classes where ``mask`` is true."""
        return Classes(
            self.sizes[mask], {k: v[mask] for k, v in self.histograms.items()}, self.domains,
            None if self.population is None else self.population[mask],
        )


class Cells(NamedTuple):
    """The nonzero cells of a (tuples, values) histogram, in (tuple, value) order: tuple
    ``rows[i]`` holds ``counts[i]`` records of value ``values[i]`` (int64 all three).

    A tuple holds few of an attribute's values (on fars, 61k cells of 1.9M), so the
    histograms are kept as their cells: grouping sums these, never a dense matrix.
    """

    rows: np.ndarray
    values: np.ndarray
    counts: np.ndarray

    def dense(self, n_rows: int, width: int) -> np.ndarray:
        """The (n_rows, width) int64 histogram.

        >>> Cells(np.array([0, 2]), np.array([1, 0]), np.array([3, 4])).dense(3, 2).tolist()
        [[0, 3], [0, 0], [4, 0]]
        """
        return summed(self.rows, self.values, self.counts, n_rows, width)


#: the most cells of a (classes, values) histogram made at once (int64: 128 MiB): a
#: sensitive column of many values (free text, codes) is checked a slice of classes at a
#: time, as its classes x values grow with the square of the rows
HISTOGRAM_CELLS = 1 << 24


def class_slices(n_classes: int, width: int) -> list[slice]:
    """The classes in slices whose histogram of ``width`` values holds at most
    ``HISTOGRAM_CELLS`` cells (one slice where all fit, as they mostly do).

    >>> class_slices(5, 1 << 23)
    [slice(0, 2, None), slice(2, 4, None), slice(4, 5, None)]
    """
    step = max(1, HISTOGRAM_CELLS // max(width, 1))
    return [slice(i, min(i + step, n_classes)) for i in range(0, max(n_classes, 1), step)]


def in_slices(class_of: np.ndarray, parts: Sequence[slice]) -> list[np.ndarray]:
    """Per slice of classes (contiguous, in order), the positions of ``class_of`` that fall
    in it: sorted once, so that each slice costs its own rows, not all of them again.

    >>> [p.tolist() for p in in_slices(np.array([2, 0, 1, 2]), [slice(0, 2), slice(2, 3)])]
    [[1, 2], [0, 3]]
    """
    order = np.argsort(class_of, kind="stable")
    cut = np.searchsorted(class_of[order], [p.start for p in parts] + [parts[-1].stop])
    return [order[lo:hi] for lo, hi in zip(cut[:-1], cut[1:])]


def summed(rows: np.ndarray, values: np.ndarray, counts: np.ndarray, n_rows: int,
           width: int) -> np.ndarray:
    """The dense (n_rows, width) int64 histogram of (row, value, count) cells (a cell may
    repeat: its counts add up).

    >>> summed(np.array([1, 1]), np.array([0, 0]), np.array([2, 5]), 2, 1).tolist()
    [[0], [7]]
    """
    flat = np.bincount(rows * width + values, weights=counts, minlength=n_rows * width)
    return flat.astype(np.int64).reshape(n_rows, width)


@dataclass(frozen=True, eq=False)
class FrequencyTable:
    """Distinct quasi-identifier tuples (ground codes) with counts and sensitive values.

    ``tuples`` is int32 (n, QIs); ``counts`` int64 (n,). ``cells[name]`` holds the
    nonzero cells of the histogram of that attribute's values within each tuple (codes
    of ``domains[name].labels``); ``sensitive[name]`` is that histogram as an (n, values)
    int64 matrix, built on first use.

    >>> import pandas as pd
    >>> from blendin.hierarchy.core import Hierarchy
    >>> df = pd.DataFrame({"sex": ["m", "f", "m"], "dx": ["flu", "flu", "gout"]})
    >>> sex = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
    >>> ft = FrequencyTable.from_table(df, {"sex": sex}, ["dx"])
    >>> ft.counts.tolist(), ft.n_records, ft.sensitive["dx"].tolist()
    ([1, 2], 3, [[1, 0], [1, 1]])
    """

    qi_names: tuple[str, ...]
    hierarchies: tuple[Hierarchy, ...]
    tuples: np.ndarray
    counts: np.ndarray
    cells: Mapping[str, Cells]
    domains: Mapping[str, SensitiveDomain]

    @property
    def n_records(self) -> int:
        return int(self.counts.sum())

    @property
    def heights(self) -> tuple[int, ...]:
        return tuple(h.height for h in self.hierarchies)

    @cached_property
    def columns(self) -> tuple[np.ndarray, ...]:
        """Each QI's ground codes, contiguous (a column of ``tuples`` is strided, and a
        gather or count over it several times slower) and as NumPy's index type (which
        every gather and count would convert them to, each time)."""
        return tuple(self.tuples.T.astype(np.intp))

    @cached_property
    def sensitive(self) -> dict[str, np.ndarray]:
        """Per sensitive attribute, the (tuples, values) int64 histogram as a matrix."""
        return {name: cells.dense(len(self.counts), len(self.domains[name].labels))
                for name, cells in self.cells.items()}

    def subset(self, keep: np.ndarray) -> FrequencyTable:
        """The tuples ``keep`` (a bool mask), with the domains (overall distributions) of
        the whole table."""
        rank = np.cumsum(keep) - 1
        cells = {}
        for name, (rows, values, counts) in self.cells.items():
            kept = keep[rows]
            cells[name] = Cells(rank[rows[kept]], values[kept], counts[kept])
        return FrequencyTable(self.qi_names, self.hierarchies, self.tuples[keep],
                              self.counts[keep], cells, self.domains)

    @classmethod
    def from_table(
        cls,
        data,
        hierarchies: Mapping[str, Hierarchy],
        sensitive: Sequence[str] = (),
        *,
        sensitive_hierarchies: Mapping[str, Hierarchy] | None = None,
        missing: str = "",
    ) -> FrequencyTable:
        """Build from an in-memory table (pandas, polars, pyarrow) with built hierarchies."""
        table = to_arrow(data)
        columns = [*hierarchies, *sensitive]
        return cls.from_distinct(
            distinct_tuples(table.to_batches(max_chunksize=1 << 20) or [table], columns, missing),
            hierarchies,
            sensitive,
            sensitive_hierarchies=sensitive_hierarchies,
        )

    @classmethod
    def from_distinct(
        cls,
        distinct: pa.Table,
        hierarchies: Mapping[str, Hierarchy],
        sensitive: Sequence[str] = (),
        *,
        sensitive_hierarchies: Mapping[str, Hierarchy] | None = None,
    ) -> FrequencyTable:
        """Encode the output of :func:`distinct_tuples` with the given hierarchies."""
        names = tuple(hierarchies)
        codes = [hierarchies[n].encode(distinct.column(n), n) for n in names]
        # one int64 key per tuple orders the tuples as a row-wise sort would, at a 1-D cost
        key = combine_keys(codes, [len(hierarchies[n].ground) for n in names])
        coded = {}
        for name in sensitive:
            hierarchy = (sensitive_hierarchies or {}).get(name)
            values = distinct.column(name)
            coded[name] = ((hierarchy.encode(values, name), hierarchy.ground)
                           if hierarchy is not None else _codes_in_order_seen(values))
        order = stable_order(_refined(key, *coded[sensitive[0]]) if sensitive else key)
        starts = _starts(key[order])
        tuple_of_row = np.empty(len(key), np.int64)
        tuple_of_row[order] = np.cumsum(starts) - 1
        firsts = order[starts]
        # each tuple's codes, and the codes of every row let go before the cells are made
        tuples = qi_matrix([np.take(c, firsts) for c in codes], len(firsts))
        del codes, key
        row_counts = distinct.column(COUNT).to_numpy().astype(np.int64)
        counts = _run_sums(row_counts[order], starts)
        cells, domains = {}, {}
        for name in sensitive:
            hierarchy = (sensitive_hierarchies or {}).get(name)
            value_codes, labels = coded[name]
            cells[name] = _cells(tuple_of_row, value_codes, row_counts, len(labels), order)
            overall = np.bincount(value_codes, weights=row_counts, minlength=len(labels))
            domains[name] = SensitiveDomain(name, labels, overall.astype(np.int64), hierarchy)
        return cls(names, tuple(hierarchies[n] for n in names), tuples, counts, cells, domains)

    def classes(self, class_of_tuple: np.ndarray, n_classes: int) -> Classes:
        """Group tuples into classes: ``class_of_tuple[i]`` is tuple i's class id."""
        sizes = np.bincount(class_of_tuple, weights=self.counts, minlength=n_classes)
        hists = {name: summed(np.take(class_of_tuple, rows), values, counts, n_classes,
                              len(self.domains[name].labels))
                 for name, (rows, values, counts) in self.cells.items()}
        return Classes(sizes.astype(np.int64), hists, self.domains)

    def classes_of(self, tuples: np.ndarray, class_of: np.ndarray, n_classes: int,
                   sensitive: Sequence[str] | None = None) -> Classes:
        """The classes of some tuples (indexes, or a mask): ``class_of[i]`` is the class of
        the i-th of them; the histograms of ``sensitive`` (all when None) summed from the
        cells, never from a (tuples, values) matrix.

        >>> import pandas as pd
        >>> from blendin.hierarchy.core import Hierarchy
        >>> df = pd.DataFrame({"sex": ["m", "f", "m"], "dx": ["flu", "flu", "gout"]})
        >>> sex = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
        >>> ft = FrequencyTable.from_table(df, {"sex": sex}, ["dx"])
        >>> ft.classes_of(np.array([1]), np.array([0]), 1).histograms["dx"].tolist()
        [[1, 1]]
        """
        tuples = np.flatnonzero(tuples) if tuples.dtype == bool else np.asarray(tuples)
        sizes = np.bincount(class_of, weights=self.counts[tuples], minlength=n_classes)
        position = np.full(len(self.counts), -1, np.int64)  # each tuple's class, or none
        position[tuples] = class_of
        hists = {}
        for name, (rows, values, counts) in self.cells.items():
            if sensitive is not None and name not in sensitive:
                continue
            of = position[rows]
            inside = of >= 0
            hists[name] = summed(of[inside], values[inside], counts[inside], n_classes,
                                 len(self.domains[name].labels))
        return Classes(sizes.astype(np.int64), hists, self.domains)

    def generalized(self, levels: Sequence[int]) -> np.ndarray:
        """Codes of every tuple at the given level per QI, shape (n, QIs) (see
        :func:`generalized_codes`)."""
        return generalized_codes(self.hierarchies, levels, self.columns, len(self.counts))

    def classes_at(self, levels: Sequence[int]) -> tuple[Classes, np.ndarray]:
        """Equivalence classes at a lattice node and each tuple's class id."""
        key = combine_keys(self.generalized(levels), [
            len(h.labels[lvl]) for h, lvl in zip(self.hierarchies, levels)])
        uniq, class_of_tuple = np.unique(key, return_inverse=True)
        class_of_tuple = class_of_tuple.reshape(-1)
        return self.classes(class_of_tuple, len(uniq)), class_of_tuple


def qi_matrix(codes: Sequence[np.ndarray], rows: int) -> np.ndarray:
    """Per-QI code arrays as one (rows, QIs) int32 matrix stored column by column.

    >>> qi_matrix([np.array([1, 2]), np.array([3, 4])], 2).tolist()
    [[1, 3], [2, 4]]
    """
    matrix = np.empty((rows, len(codes)), np.int32, order="F")
    for i, c in enumerate(codes):
        matrix[:, i] = c
    return matrix


def generalized_codes(hierarchies: Sequence[Hierarchy], levels: Sequence[int],
                      ground: Sequence[np.ndarray | None], rows: int) -> np.ndarray:
    """Each QI's codes at ``levels`` from its ``ground`` codes, as one (rows, QIs) int32
    matrix stored column by column (each QI's codes contiguous for the keys that read
    them). A level with a single label is code 0 on every row: no gather (its ground codes
    may be None).

    >>> h = Hierarchy.from_rows([["a", "x"], ["b", "x"], ["c", "y"]])
    >>> generalized_codes([h], [1], [np.array([2, 0, 1])], 3).ravel().tolist()
    [1, 0, 0]
    """
    out = np.zeros((rows, len(ground)), np.int32, order="F")
    for i, (h, level, codes) in enumerate(zip(hierarchies, levels, ground)):
        if len(h.labels[level]) > 1:
            np.take(h.codes[level], codes, out=out[:, i], mode="clip")  # unbuffered
    return out


def _refined(key: np.ndarray, value_codes: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``key`` ordered by a sensitive value within each tuple too, when that fits in int64:
    sorting by it leaves that attribute's cells sorted already (see :func:`_cells`)."""
    width = len(labels)
    span = int(key.max()) + 1 if len(key) else 1
    return key * width + value_codes if span * width < 2**62 else key


def _starts(ordered: np.ndarray) -> np.ndarray:
    """True where a sorted array's run of equal values starts."""
    starts = np.empty(len(ordered), bool)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    return starts


def _run_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The sum of each run of ``values`` (runs begin where ``starts``), exact in int64."""
    return np.add.reduceat(values, np.flatnonzero(starts)) if len(values) else values


def _cells(tuple_of_row: np.ndarray, value_codes: np.ndarray, row_counts: np.ndarray,
           width: int, order: np.ndarray) -> Cells:
    """The histogram cells of the distinct rows (a cell gets several rows when there are
    other sensitive attributes). ``order`` sorts the rows by tuple: the (tuple, value)
    pairs in that order are sorted but within each tuple's short run, which a stable sort
    (a merge of runs) orders in near-linear time."""
    rows, values = tuple_of_row[order], value_codes[order].astype(np.int64)
    pair = rows * width + values
    if (pair[1:] > pair[:-1]).all():  # each row its own cell, in order (one attribute)
        return Cells(rows, values, row_counts[order])
    by_pair = np.argsort(pair, kind="stable")
    ordered = pair[by_pair]
    starts = _starts(ordered)
    rows, values = np.divmod(ordered[starts], width)
    return Cells(rows, values, _run_sums(row_counts[order][by_pair], starts))


def _codes_in_order_seen(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's code among the distinct values of a text column (numbered in order of
    first appearance) and those values."""
    if pa.types.is_dictionary(column.type) and column.num_chunks != 1:
        column = column.cast(column.type.value_type)  # one dictionary for every chunk
    if not pa.types.is_dictionary(column.type):
        column = pa.chunked_array([pc.dictionary_encode(column.combine_chunks())])
    chunk = column.chunk(0)
    indices = chunk.indices.to_numpy()
    first = first_seen(indices, len(chunk.dictionary))
    seen = np.argsort(first, kind="stable")[: np.count_nonzero(first < len(indices))]
    rank = np.empty(len(first), np.int32)
    rank[seen] = np.arange(len(seen))
    labels = np.array(chunk.dictionary.take(pa.array(seen)).to_pylist(), dtype=object)
    return rank[indices], labels
