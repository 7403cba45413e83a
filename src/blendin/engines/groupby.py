"""Arrow group-bys over batches of rows: the distinct text tuples of some columns, counted.

The frequency table and the checker both start here: rows are reduced, batch by batch, to
their distinct (quasi-identifier, sensitive) tuples with counts. Memory holds the distinct
tuples (small however many rows there are), never the rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.errors import BlendinError
from blendin.frequency import COUNT, as_text, combine_keys

#: rows handed to one call of Arrow's group-by
GROUP_ROWS = 1 << 19


class _Vocabulary:
    """The distinct texts of one column seen so far, each with a stable code (0, 1, ...)."""

    def __init__(self) -> None:
        self.values = pa.array([], pa.string())

    def codes(self, column: pa.Array) -> np.ndarray:
        """Code of every value of a text column (new values get the next codes)."""
        encoded = pc.dictionary_encode(column)
        local = encoded.dictionary
        known = pc.index_in(local, value_set=self.values)
        if known.null_count:
            new = pc.filter(local, pc.is_null(known))
            start = len(self.values)
            self.values = pa.concat_arrays([self.values, new.cast(pa.string())])
            fresh = np.cumsum(known.is_null().to_numpy(zero_copy_only=False)) - 1 + start
            known = pa.array(np.where(known.is_null().to_numpy(zero_copy_only=False), fresh,
                                      known.fill_null(0).to_numpy(zero_copy_only=False)))
        mapping = np.asarray(known.to_numpy(zero_copy_only=False), dtype=np.int32)
        return mapping[encoded.indices.to_numpy(zero_copy_only=False)]


class DistinctCounter:
    """A streaming group-by: add batches, get the distinct tuples of ``columns`` counted.

    Each column's texts are dictionary-encoded against a vocabulary that grows as values
    appear, so a batch becomes a small integer matrix; batches are coalesced into about
    ``group_rows`` rows and merged into the running distinct tuples by one int64 key per
    tuple. The state is the distinct tuples (codes and counts) and the vocabularies: memory
    follows the number of distinct tuples, not of rows.

    >>> counter = DistinctCounter(["sex"])
    >>> counter.add(pa.table({"sex": ["f", "m", "f"]}))
    >>> counter.add(pa.table({"sex": ["m", None]}))
    >>> sorted(zip(*counter.result().to_pydict().values()))
    [('', 1), ('f', 2), ('m', 2)]
    """

    def __init__(self, columns: Sequence[str], missing: str = "",
                 group_rows: int = GROUP_ROWS) -> None:
        self.columns = list(columns)
        self.missing = missing
        self.group_rows = group_rows
        self.vocabularies = [_Vocabulary() for _ in self.columns]
        self.tuples = np.zeros((0, len(self.columns)), np.int32)
        self.counts = np.zeros(0, np.int64)
        self.pending: list[np.ndarray] = []
        self.pending_rows = 0
        self.rows = 0

    def add(self, batch: pa.Table | pa.RecordBatch) -> None:
        n = batch.num_rows
        if not n:
            return
        codes = np.empty((n, len(self.columns)), np.int32)
        for j, (name, vocabulary) in enumerate(zip(self.columns, self.vocabularies)):
            text = as_text(batch.column(name), self.missing).combine_chunks()
            codes[:, j] = vocabulary.codes(text)
        self.pending.append(codes)
        self.pending_rows += n
        self.rows += n
        if self.pending_rows >= self.group_rows:
            self._merge()

    def _merge(self) -> None:
        if not self.pending:
            return
        stacked = np.concatenate([self.tuples, *self.pending])
        weights = np.concatenate([self.counts, np.ones(self.pending_rows, np.int64)])
        self.pending, self.pending_rows = [], 0
        radices = [max(len(v.values), 1) for v in self.vocabularies]
        key = combine_keys(stacked, radices)
        # a hash table, not a sort: linear in the rows (pandas' factorize on int64 keys)
        from pandas import factorize

        inverse, uniques = factorize(key)
        first = np.empty(len(uniques), np.int64)
        first[inverse[::-1]] = np.arange(len(key) - 1, -1, -1)
        self.counts = np.bincount(inverse, weights=weights,
                                  minlength=len(uniques)).astype(np.int64)
        self.tuples = stacked[first]

    def result(self) -> pa.Table:
        """The distinct tuples with their counts (column ``COUNT``)."""
        self._merge()
        if not self.rows:
            raise BlendinError("the table has no rows", fix="give a table with at least one row")
        columns = {name: vocabulary.values.take(pa.array(self.tuples[:, j]))
                   for j, (name, vocabulary) in enumerate(zip(self.columns, self.vocabularies))}
        return pa.table({**columns, COUNT: pa.array(self.counts)})


def distinct_tuples(
    batches: Iterable[pa.Table | pa.RecordBatch], columns: Sequence[str], missing: str = ""
) -> pa.Table:
    """Distinct text tuples of ``columns`` with their counts, reduced chunk by chunk.

    >>> distinct_tuples([pa.table({"a": ["x", "y", "x"]})], ["a"]).sort_by("a").to_pydict()
    {'a': ['x', 'y'], '__blendin_count__': [2, 1]}
    """
    counter = DistinctCounter(columns, missing)
    for batch in batches:
        counter.add(batch)
    return counter.result()
