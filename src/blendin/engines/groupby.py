"""Arrow group-bys over batches of rows: the distinct text tuples of some columns, counted.

The frequency table and the checker both start here: rows are reduced, batch by batch, to
their distinct (quasi-identifier, sensitive) tuples with counts. Memory holds the distinct
tuples (small however many rows there are), never the rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa

from blendin.errors import BlendinError
from blendin.frequency import COUNT, as_text

#: rows handed to one call of Arrow's group-by
GROUP_ROWS = 1 << 20


class DistinctCounter:
    """A streaming group-by: add batches, get the distinct tuples of ``columns`` counted.

    Batches are coalesced into calls of about ``GROUP_ROWS`` rows (Arrow's group-by has a
    fixed cost per call that dominates on small batches); partial results are merged
    whenever they hold more rows than the last merge left, so memory follows the number of
    distinct tuples, not of rows.

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
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.partials: list[pa.Table] = []
        self.partial_rows = 0
        self.merged_rows = 0
        self.rows = 0

    def add(self, batch: pa.Table | pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        self.pending.append(pa.table({c: as_text(batch.column(c), self.missing)
                                      for c in self.columns}))
        self.pending_rows += batch.num_rows
        self.rows += batch.num_rows
        if self.pending_rows >= self.group_rows:
            self._group_pending()

    def _group_pending(self) -> None:
        if not self.pending:
            return
        table = pa.concat_tables(self.pending)
        self.pending, self.pending_rows = [], 0
        partial = table.group_by(self.columns).aggregate([([], "count_all")])
        self.partials.append(partial.rename_columns([*self.columns, COUNT]))
        self.partial_rows += partial.num_rows
        if len(self.partials) > 1 and self.partial_rows > max(2 * self.merged_rows,
                                                               self.group_rows):
            self._merge()

    def _merge(self) -> None:
        merged = pa.concat_tables(self.partials)
        if len(self.partials) > 1:
            merged = merged.group_by(self.columns).aggregate([(COUNT, "sum")])
            merged = merged.rename_columns([*self.columns, COUNT])
        self.partials = [merged]
        self.partial_rows = self.merged_rows = merged.num_rows

    def result(self) -> pa.Table:
        """The distinct tuples with their counts (column ``COUNT``)."""
        self._group_pending()
        if not self.partials:
            raise BlendinError("the table has no rows", fix="give a table with at least one row")
        self._merge()
        return self.partials[0]


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
