"""Per-batch kernels every engine runs: pure pyarrow + NumPy functions of one batch of rows.

They hold only small, picklable state (hierarchies, sorted class keys, labels), so the
embedded engine calls them batch by batch and the Spark engine ships the very same objects
to its executors (``mapInArrow``): both engines recode a row the same way.

- :class:`FullDomainRecoder` applies a full-domain node (one gather per QI, suppressed
  classes found by their generalized key);
- :class:`MondrianRecoder` applies a Mondrian partitioning (each row's tuple looked up among
  the frequency table's tuples, its group's labels taken);
- :class:`RowColumns` adds the optional class-number and source-row columns while a release
  streams (its state is one id per class, not per row).

A recoder returns the *marked* batch (suppressed records kept, ``*`` in every QI) and the
mask of suppressed rows; the checker regroups the marked values, the writer drops the
masked rows when suppressed records are removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable, as_text
from blendin.hierarchy.core import SUPPRESSED, Hierarchy

if TYPE_CHECKING:
    from blendin.release import Recoding
    from blendin.search.mondrian import Partitioning

SUPPRESSION_MODES = ("drop", "keep")


def as_table(batch: pa.Table | pa.RecordBatch) -> pa.Table:
    return batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])


# -- full-domain recoding ------------------------------------------------------------------


def _label_column(hierarchy: Hierarchy, level: int, codes: np.ndarray,
                  blank: np.ndarray | None) -> pa.Array:
    """Labels of generalized ``codes`` as a string column; rows in ``blank`` become ``*``."""
    labels = [str(v) for v in hierarchy.labels[level]]
    codes = codes.astype(np.int32)
    if blank is not None and blank.any():
        if SUPPRESSED in labels:
            star = labels.index(SUPPRESSED)
        else:
            star = len(labels)
            labels.append(SUPPRESSED)
        codes = np.where(blank, np.int32(star), codes)
    dictionary = pa.array(labels, type=pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(codes), dictionary).cast(pa.string())


def recode_marked(batch: pa.Table | pa.RecordBatch,
                  recoding: Recoding) -> tuple[pa.Table, np.ndarray]:
    """The chunk recoded with suppressed records kept as ``*``, and which rows those are."""
    table = as_table(batch)
    generalized = {}
    for name, hierarchy, level in zip(recoding.qi_names, recoding.hierarchies,
                                      recoding.levels):
        ground = hierarchy.encode(as_text(table.column(name), recoding.missing), name)
        generalized[name] = hierarchy.codes[level][ground]
    matrix = (np.stack([generalized[n] for n in recoding.qi_names], axis=1)
              if recoding.qi_names else np.zeros((table.num_rows, 0), dtype=np.int32))
    removed = recoding.suppressed_rows(matrix)
    columns, names = [], []
    positions = dict(zip(recoding.qi_names, range(len(recoding.qi_names))))
    for name in table.column_names:
        if name in recoding.identifiers:
            continue
        if name in positions:
            i = positions[name]
            column = _label_column(recoding.hierarchies[i], recoding.levels[i],
                                   generalized[name], removed)
        else:
            column = table.column(name)
        columns.append(column)
        names.append(name)
    return pa.table(columns, names=names), removed


def check_mode(suppressed: str) -> None:
    if suppressed not in SUPPRESSION_MODES:
        raise BlendinError(f"suppressed must be 'drop' or 'keep', got {suppressed!r}",
                           fix="use suppressed='drop' (remove records) or 'keep' (show *)")


def recode(batch: pa.Table | pa.RecordBatch, recoding: Recoding,
           suppressed: str = "drop") -> pa.Table:
    """Apply ``recoding`` to one chunk of rows (vectorized: one gather per QI).

    Identifiers are removed, QIs replaced by their labels, the records of suppressed classes
    dropped (``"drop"``) or kept with ``*`` in every QI (``"keep"``); other columns are kept
    as they are and in their order.
    """
    check_mode(suppressed)
    marked, removed = recode_marked(batch, recoding)
    if suppressed == "drop" and removed.any():
        return marked.filter(pa.array(~removed))
    return marked


def recode_all(batches: Iterable[pa.Table | pa.RecordBatch], recoding: Recoding,
               suppressed: str = "drop") -> pa.Table:
    """Recode every chunk and put the release together (one table)."""
    parts = [recode(b, recoding, suppressed) for b in batches]
    if not parts:
        raise BlendinError("the table has no rows", fix="give a table with at least one row")
    return pa.concat_tables(parts)


def recode_all_marked(batches: Iterable[pa.Table | pa.RecordBatch],
                      recoding: Recoding) -> tuple[pa.Table, np.ndarray]:
    """Every chunk recoded with suppressed records as ``*``, and the mask of those rows."""
    parts = [recode_marked(b, recoding) for b in batches]
    if not parts:
        raise BlendinError("the table has no rows", fix="give a table with at least one row")
    return (pa.concat_tables([t for t, _ in parts]),
            np.concatenate([m for _, m in parts]))


def recode_parts_marked(batch: pa.Table | pa.RecordBatch, main: Recoding,
                        parts: Sequence[Recoding]) -> tuple[pa.Table, np.ndarray]:
    """Like :func:`recode_marked` for a release in parts: the rows ``main`` suppresses go
    to the first part, those it suppresses to the next, and so on; what the last part
    suppresses shows ``*``."""
    table = as_table(batch)
    ground = {name: h.encode(as_text(table.column(name), main.missing), name)
              for name, h in zip(main.qi_names, main.hierarchies)}

    def at(recoding: Recoding) -> np.ndarray:
        cols = [h.codes[lv][ground[n]] for n, h, lv in zip(
            recoding.qi_names, recoding.hierarchies, recoding.levels)]
        return np.stack(cols, axis=1) if cols else np.zeros((table.num_rows, 0), np.int32)

    matrix = at(main)
    removed = main.suppressed_rows(matrix)
    columns = {n: _label_column(h, lv, matrix[:, i], None) for i, (n, h, lv) in enumerate(
        zip(main.qi_names, main.hierarchies, main.levels))}
    for part in parts:
        if not removed.any():
            break
        codes = at(part)
        still = removed & part.suppressed_rows(codes)
        back = pa.array(removed & ~still)
        for i, (n, h, lv) in enumerate(zip(part.qi_names, part.hierarchies, part.levels)):
            columns[n] = pc.if_else(back, _label_column(h, lv, codes[:, i], None), columns[n])
        removed = still
    star = pa.scalar(SUPPRESSED, pa.string())
    names, out = [], []
    for name in table.column_names:
        if name in main.identifiers:
            continue
        column = table.column(name)
        if name in columns:
            column = pc.if_else(pa.array(removed), star, columns[name])
        names.append(name)
        out.append(column)
    return pa.table(out, names=names), removed


class PartsRecoder:
    """A release in parts (the suppressed records of one node recoded at further nodes):
    ``recoder(batch) -> (marked, removed)``, see :func:`recode_parts_marked`."""

    def __init__(self, main: Recoding, parts: Sequence[Recoding]) -> None:
        self.main, self.parts = main, list(parts)

    def __call__(self, batch: pa.Table | pa.RecordBatch) -> tuple[pa.Table, np.ndarray]:
        return recode_parts_marked(batch, self.main, self.parts)


class FullDomainRecoder:
    """A full-domain node applied to one batch: ``recoder(batch) -> (marked, removed)``."""

    def __init__(self, recoding: Recoding) -> None:
        self.recoding = recoding

    def __call__(self, batch: pa.Table | pa.RecordBatch) -> tuple[pa.Table, np.ndarray]:
        return recode_marked(batch, self.recoding)


# -- Mondrian ------------------------------------------------------------------------------


class MondrianRecoder:
    """A Mondrian partitioning applied to one batch: each row's QI tuple is looked up among
    the frequency table's tuples (sorted keys, one binary search per row) and its group's
    labels are taken; rows of suppressed tuples show ``*``.

    >>> import pandas as pd
    >>> from blendin.models import KAnonymity
    >>> from blendin.search.mondrian import mondrian
    >>> sex = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
    >>> df = pd.DataFrame({"name": ["a", "b", "c", "d"], "sex": ["m", "f", "m", "f"]})
    >>> ft = FrequencyTable.from_table(df, {"sex": sex})
    >>> marked, removed = MondrianRecoder(ft, mondrian(ft, [KAnonymity(2)]),
    ...                                   identifiers=["name"])(pa.Table.from_pandas(df))
    >>> marked.column("sex").to_pylist(), removed.tolist()
    (['m', 'f', 'm', 'f'], [False, False, False, False])
    """

    def __init__(self, ft: FrequencyTable, p: Partitioning, *, identifiers: Sequence[str] = (),
                 sets: bool | None = None, missing: str = "") -> None:
        from blendin.release import ClassKeyer
        from blendin.search.mondrian import group_labels

        self.qi_names = tuple(ft.qi_names)
        self.hierarchies = tuple(ft.hierarchies)
        self.identifiers = tuple(identifiers)
        self.missing = missing
        self.keyer = ClassKeyer([len(h.ground) for h in ft.hierarchies], ft.tuples)
        keys = self.keyer(ft.tuples)
        order = np.argsort(keys, kind="stable")
        self.tuple_keys = keys[order]
        self.group_of_key = np.asarray(p.group_of_tuple)[order].astype(np.int64)
        self.n_groups = int(p.n_groups)
        self.shown = {name: pa.array(np.append(lab, SUPPRESSED).tolist(), type=pa.string())
                      for name, lab in zip(ft.qi_names, group_labels(ft, p, sets=sets))}

    def groups(self, table: pa.Table) -> np.ndarray:
        """Group (0-based; -1 when suppressed) of every row."""
        if not self.qi_names:
            return np.full(table.num_rows, 0 if self.n_groups else -1, np.int64)
        codes = np.stack([h.encode(as_text(table.column(n), self.missing), n)
                          for n, h in zip(self.qi_names, self.hierarchies)], axis=1)
        keys = self.keyer(codes)
        at = np.minimum(np.searchsorted(self.tuple_keys, keys), len(self.tuple_keys) - 1)
        if not (self.tuple_keys[at] == keys).all():
            raise BlendinError("the table has quasi-identifier values the frequency table "
                               "lacks", fix="build the frequency table from this same table")
        return self.group_of_key[at]

    def __call__(self, batch: pa.Table | pa.RecordBatch) -> tuple[pa.Table, np.ndarray]:
        table = as_table(batch)
        group = self.groups(table)
        index = pa.array(np.where(group < 0, self.n_groups, group))
        names, columns = [], []
        for name in table.column_names:
            if name in self.identifiers:
                continue
            names.append(name)
            columns.append(self.shown[name].take(index) if name in self.shown
                           else table.column(name))
        return pa.table(columns, names=names), group < 0


# -- added columns -------------------------------------------------------------------------


class RowColumns:
    """Adds, batch after batch, each row's class (1, 2, ... in order of first appearance,
    empty when suppressed) and its source row number (1 = first row); ``index_base=0``
    numbers both from 0.

    The state is one entry per class seen so far, never per row.

    >>> add = RowColumns(["age"], group_column="group", original_row="row")
    >>> add(pa.table({"age": ["20-29", "*"]})).to_pydict()
    {'age': ['20-29', '*'], 'group': [1, None], 'row': [1, 2]}
    >>> add(pa.table({"age": ["30-39", "20-29"]})).to_pydict()
    {'age': ['30-39', '20-29'], 'group': [2, 1], 'row': [3, 4]}
    """

    #: joins a row's QI labels into one text key (a control character no label holds)
    SEPARATOR = "\x1f"

    def __init__(self, quasi_identifiers: Sequence[str], *, group_column: str | None = None,
                 original_row: str | None = None, index_base: int = 1) -> None:
        if index_base not in (0, 1):
            raise BlendinError(f"index_base must be 0 or 1, got {index_base!r}",
                               fix="number rows and classes from 1 (--index-base 1) or 0 "
                               "(--index-base 0)")
        self.qis = list(quasi_identifiers)
        self.base = index_base
        self.group_column = group_column
        self.original_row = original_row
        self.ids: dict[str, int] = {}
        self.rows = 0

    @property
    def active(self) -> bool:
        return self.group_column is not None or self.original_row is not None

    def __call__(self, table: pa.Table) -> pa.Table:
        for name in (self.group_column, self.original_row):
            if name is not None and name in table.column_names:
                raise BlendinError(f"the release already has a column {name!r}",
                                   fix="choose another name for the added column")
        if self.group_column is not None:
            ids = self._class_ids(table)
            table = table.append_column(self.group_column,
                                        pa.array(ids - 1 + self.base, mask=ids <= 0))
        if self.original_row is not None:
            numbers = np.arange(self.rows, self.rows + table.num_rows) + self.base
            table = table.append_column(self.original_row, pa.array(numbers))
        self.rows += table.num_rows
        return table

    def _class_ids(self, table: pa.Table) -> np.ndarray:
        """Class of every row, 1, 2, ... (0 when suppressed)."""
        n = table.num_rows
        if not self.qis:
            return np.ones(n, np.int64)
        texts = [pc.fill_null(pc.cast(table.column(q), pa.string()), "") for q in self.qis]
        suppressed = np.ones(n, bool)
        for text in texts:
            suppressed &= pc.equal(text, SUPPRESSED).to_numpy(zero_copy_only=False)
        key = pc.binary_join_element_wise(*texts, self.SEPARATOR) if len(texts) > 1 else texts[0]
        encoded = pc.dictionary_encode(key).combine_chunks()
        index = encoded.indices.to_numpy(zero_copy_only=False)
        labels = encoded.dictionary.to_pylist()
        starred = np.zeros(len(labels), bool)
        starred[index[suppressed]] = True
        # dictionary codes follow first appearance; new classes take the next numbers
        # (a loop over the batch's classes, not its rows)
        ids = np.zeros(len(labels), np.int64)
        for code, label in enumerate(labels):
            if not starred[code]:
                ids[code] = self.ids.setdefault(label, len(self.ids) + 1)
        return ids[index]
