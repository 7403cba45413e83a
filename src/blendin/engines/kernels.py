"""Per-batch kernels every engine runs: pure pyarrow + NumPy functions of one batch of rows.

They hold only small, picklable state (hierarchies, sorted class keys, labels), so the
embedded engine calls them batch by batch and the Spark engine ships the very same objects
to its executors (``mapInArrow``): both engines recode a row the same way.

- :class:`FullDomainRecoder` applies a full-domain node (one gather per QI, suppressed
  classes found by their generalized key), and a release in parts;
- :class:`MondrianRecoder` applies a Mondrian partitioning (each row's tuple looked up among
  the frequency table's tuples, its group's labels taken);
- :class:`RowColumns` adds the optional class-number and source-row columns while a release
  streams (its state is one id per class, not per row);
- :class:`Shuffle` puts the rows of a release in a random order.

A recoder returns the *marked* batch (suppressed records kept, ``*`` in every QI) and the
mask of suppressed rows; the checker regroups the marked values, the writer drops the
masked rows when suppressed records are removed. The QI columns of a marked batch are
dictionary-encoded (the labels once, an index per row): no text is made per row, and the
checker and the Parquet writer work on the indices; :func:`decoded` gives plain text.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import as_text, combine_keys
from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable, generalized_codes, qi_matrix
from blendin.groupby import _Vocabulary, group_keys, text_codes
from blendin.hierarchy.core import SUPPRESSED, Hierarchy, first_seen
from blendin.io import to_arrow
from blendin.plan import ClassKeyer, Recoding
from blendin.search.mondrian import Partitioning, group_labels

SUPPRESSION_MODES = ("drop", "keep")


def as_table(batch: pa.Table | pa.RecordBatch) -> pa.Table:
    return batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])


# -- full-domain recoding ------------------------------------------------------------------


def ground_codes(column: pa.Array | pa.ChunkedArray, hierarchy: Hierarchy, name: str,
                 missing: str = "") -> np.ndarray:
    """Ground code (int32) of every value of ``column``, read as text.

    A dictionary-encoded column is encoded through its dictionary by
    :meth:`Hierarchy.encode` (each entry looked up once, then one gather); any other column
    by one hash look-up per row.

    >>> h = Hierarchy.from_rows([["a", "*"], ["b", "*"]])
    >>> ground_codes(pa.array(["b", "a", "b"]).dictionary_encode(), h, "x").tolist()
    [1, 0, 1]
    """
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    if not pa.types.is_dictionary(column.type):
        return hierarchy.encode(as_text(column, missing), name)
    parts = [np.zeros(0, np.int32)]
    for chunk in column.chunks:
        dictionary, indices = chunk.dictionary, chunk.indices
        if indices.null_count:  # a missing value: one more entry, read as missing
            indices = pc.fill_null(indices, len(dictionary))
            dictionary = pa.concat_arrays([dictionary, pa.nulls(1, dictionary.type)])
        # the entries as text, still indexed by the rows: only those in use must be covered
        texts = as_text(dictionary, missing).combine_chunks()
        parts.append(hierarchy.encode(pa.DictionaryArray.from_arrays(indices, texts), name))
    return np.concatenate(parts)


def labelled(codes: np.ndarray, dictionary: pa.Array) -> pa.DictionaryArray:
    """``codes`` as a column of the texts they index (no text is copied per row). The
    recoders make every code an index of their dictionary, so it is not checked again."""
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32, copy=False)),
                                          dictionary, safe=False)


def decoded(table: pa.Table, names: Collection[str] | None = None) -> pa.Table:
    """``table`` with its dictionary-encoded columns (of ``names``, or all) as plain values.

    >>> decoded(pa.table({"a": pa.array(["x", "y", "x"]).dictionary_encode()})).schema
    a: string
    """
    for i, field in enumerate(table.schema):
        if pa.types.is_dictionary(field.type) and (names is None or field.name in names):
            plain = field.type.value_type
            table = table.set_column(i, field.with_type(plain), pa.chunked_array(
                [_plain(chunk) for chunk in table.column(i).chunks], plain))
    return table


def _plain(chunk: pa.DictionaryArray) -> pa.Array:
    indices = chunk.indices
    if len(chunk) and not indices.null_count:
        codes = indices.to_numpy()
        if codes.min() == codes.max():  # one label on every row (a QI at its top, say)
            return repeated(chunk.dictionary[codes[0]], len(chunk))
    return chunk.cast(chunk.type.value_type)


def repeated(value: pa.Scalar, n: int) -> pa.Array:
    """``value`` ``n`` times. A text is laid out directly, its offsets a range and its
    bytes repeated: 7x faster than ``pa.repeat``, which copies it value by value.

    >>> repeated(pa.scalar("ab"), 3).to_pylist()
    ['ab', 'ab', 'ab']
    """
    text = value.as_buffer() if value.type == pa.string() and value.is_valid else None
    if text is None or len(text) * n >= 2**31:
        return pa.repeat(value, n)
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(text))
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                  pa.py_buffer(text.to_pybytes() * n)])


def plain_schema(schema: pa.Schema, names: Collection[str] | None = None) -> pa.Schema:
    """``schema`` with dictionary types (of ``names``, or all) replaced by their value types."""
    return pa.schema([
        field.with_type(field.type.value_type)
        if pa.types.is_dictionary(field.type) and (names is None or field.name in names)
        else field for field in schema], metadata=schema.metadata)


class FullDomainRecoder:
    """A full-domain node applied to one batch: ``recoder(batch) -> (marked, removed)``.

    ``marked`` is the batch with identifiers removed and each QI replaced by its labels,
    dictionary-encoded (the level's labels are the dictionary, the rows' generalized codes
    the indices); the rows of suppressed classes show ``*`` in every QI and are True in
    ``removed``. Other columns are kept as they are, in their order.

    With ``parts`` (a release in parts), the rows ``recoding`` suppresses go to the first
    part, those it suppresses to the next, and so on; only what the last part suppresses
    shows ``*``.

    >>> import pandas as pd
    >>> from blendin.models import KAnonymity
    >>> from blendin.plan import plan_node
    >>> sex = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
    >>> ft = FrequencyTable.from_table(pd.DataFrame({"sex": ["f", "f", "m"]}), {"sex": sex})
    >>> recoder = FullDomainRecoder(plan_node(ft, [0], [KAnonymity(2)]))
    >>> marked, removed = recoder(pa.table({"sex": ["f", "f", "m"]}))
    >>> marked.column("sex").to_pylist(), removed.tolist()
    (['f', 'f', '*'], [False, False, True])
    """

    #: each batch is recoded on its own (nothing is kept from one to the next): several
    #: can be recoded at once
    batchwise = True

    def __init__(self, recoding: Recoding, parts: Sequence[Recoding] = (), *,
                 persons=None) -> None:
        self.recoding, self.parts = recoding, tuple(parts)
        #: with a person key: ``persons(batch)`` marks the rows of suppressed people
        #: (:class:`blendin.people.PersonMask`), who are removed whole
        self.persons = persons
        #: each row also gets its person's class, in the hidden PERSON_CLASS column (for
        #: RowColumns: with event-level QIs a class is of people, not of equal labels)
        self.number_people = False
        stages = (recoding, *self.parts)
        # per QI: one dictionary holding the labels of every stage's level, and ``*``
        self.dictionaries, self.offsets, self.stars = [], [], []
        for i, hierarchy in enumerate(recoding.hierarchies):
            labels, offsets = [], []
            for stage in stages:
                offsets.append(len(labels))
                labels += [str(v) for v in hierarchy.labels[stage.levels[i]]]
            self.offsets.append(offsets)
            # a label ``*`` already (a QI at its top, say) is also the suppressed records':
            # the dictionary's texts stay distinct, which the release's regrouping reads
            # as codes instead of looking them up
            if SUPPRESSED not in labels:
                labels.append(SUPPRESSED)
            self.stars.append(labels.index(SUPPRESSED))
            self.dictionaries.append(pa.array(labels, pa.string()))
        # a QI with one label at every stage shows it on every row: its values need no
        # look-up (they were checked against the hierarchy when these same rows were counted)
        self.looked_up = [i for i, h in enumerate(recoding.hierarchies)
                          if any(len(h.labels[stage.levels[i]]) > 1 for stage in stages)]

    def __call__(self, batch: pa.Table | pa.RecordBatch) -> tuple[pa.Table, np.ndarray]:
        table = as_table(batch)
        main = self.recoding
        rows = table.num_rows
        ground = [ground_codes(table.column(name), h, name, main.missing)
                  if i in self.looked_up else None
                  for i, (name, h) in enumerate(zip(main.qi_names, main.hierarchies))]
        codes = generalized_codes(main.hierarchies, main.levels, ground, rows)
        removed = main.suppressed_rows(codes)
        if main.blanks is not None:  # suppression by cells: released with cells blank
            self._blank(codes, removed)
            removed[:] = False
        if self.persons is not None:
            removed |= self.persons(table)
        for stage, part in enumerate(self.parts, start=1):
            if not removed.any():
                break
            at_part = generalized_codes(part.hierarchies, part.levels, ground, rows)
            still = removed & part.suppressed_rows(at_part)
            back = removed & ~still
            for i, offsets in enumerate(self.offsets):
                np.copyto(codes[:, i], at_part[:, i] + offsets[stage], where=back)
            removed = still
        if removed.any():
            for i, star in enumerate(self.stars):
                np.copyto(codes[:, i], star, where=removed)
        shown = {name: labelled(codes[:, i], d)
                 for i, (name, d) in enumerate(zip(main.qi_names, self.dictionaries))}
        names = [n for n in table.column_names if n not in main.identifiers]
        marked = pa.table([shown[n] if n in shown else table.column(n) for n in names],
                          names=names)
        if self.number_people:
            marked = marked.append_column(PERSON_CLASS, pa.array(self.persons.class_of(table)))
        return marked, removed


    def _blank(self, codes: np.ndarray, removed: np.ndarray) -> None:
        """Show ``*`` in the cells the recoding blanks, in the ``removed`` rows."""
        rows = np.flatnonzero(removed)
        if not len(rows):
            return
        main = self.recoding
        at = np.searchsorted(main.suppressed_keys, main.keyer(codes[rows]))
        bits = main.blanks[at]
        for i, star in enumerate(self.stars):
            codes[rows[(bits >> i) & 1 == 1], i] = star


def blanked(marked: pa.Table, removed: np.ndarray, columns: Sequence[str]) -> pa.Table:
    """``marked`` with the ``columns`` (the sensitive ones) empty in the ``removed`` rows.

    A suppressed record kept in a release (``*`` in every QI) would otherwise show its
    sensitive values in a visible group of their own: were they all one diagnosis, anyone
    whose record is missing from the classes would be known to have it.

    >>> t = pa.table({"age": ["*", "20-29"], "dx": ["hiv", "flu"]})
    >>> blanked(t, np.array([True, False]), ["dx"]).column("dx").to_pylist()
    [None, 'flu']
    """
    if not removed.any():
        return marked
    mask = pa.array(removed)
    for name in columns:
        at = marked.schema.get_field_index(name)
        column = marked.column(at)
        marked = marked.set_column(at, marked.field(at), pc.if_else(
            mask, pa.scalar(None, column.type), column))
    return marked


def without_people(table: pa.Table, hidden: Sequence[str]
                   ) -> tuple[pa.Table, np.ndarray | None]:
    """``table`` without its ``hidden`` person key, and each row's person as a number (the
    order of first appearance); the table as it is and None without a key."""
    if not hidden:
        return table, None
    people = pc.dictionary_encode(as_text(table.column(hidden[0])).combine_chunks())
    return table.drop_columns(list(hidden)), people.indices.to_numpy()


def starred(marked: pa.Table, removed: np.ndarray, columns: Sequence[str]) -> pa.Table:
    """``marked`` with ``*`` in the ``columns`` (the QIs) of the ``removed`` rows.

    The recoders show ``*`` there already; this makes the rows the checker regroups agree
    with the rows released whatever a recoder did: a removed row is dropped from the
    release (or kept with ``*``), so the checker must count it as suppressed, never in the
    class its labels name.

    >>> t = pa.table({"age": pa.array(["20-29", "20-29"]).dictionary_encode()})
    >>> starred(t, np.array([False, True]), ["age"]).column("age").to_pylist()
    ['20-29', '*']
    """
    if not removed.any():
        return marked
    for name in columns:
        at = marked.schema.get_field_index(name)
        if at < 0:  # (not released)
            continue
        column, start, chunks = marked.column(at), 0, []
        for chunk in column.chunks:
            rows = removed[start:start + len(chunk)]
            start += len(chunk)
            if not rows.any():
                chunks.append(chunk)
            elif pa.types.is_dictionary(chunk.type):
                labels = chunk.dictionary
                found = np.flatnonzero(labels.to_numpy(zero_copy_only=False) == SUPPRESSED)
                if not len(found):
                    labels = pa.concat_arrays([labels, pa.array([SUPPRESSED], labels.type)])
                star = int(found[0]) if len(found) else len(labels) - 1
                index = pc.if_else(pa.array(rows), pa.scalar(star, chunk.indices.type),
                                   chunk.indices)
                chunks.append(pa.DictionaryArray.from_arrays(index, labels))
            else:
                chunks.append(pc.if_else(pa.array(rows), pa.scalar(SUPPRESSED, chunk.type),
                                         chunk))
        kind = chunks[0].type if chunks else column.type
        marked = marked.set_column(at, pa.field(name, kind),
                                   pa.chunked_array(chunks, kind) if chunks else column)
    return marked


def check_mode(suppressed: str) -> None:
    if suppressed not in SUPPRESSION_MODES:
        raise BlendinError(f"suppressed must be 'drop' or 'keep', got {suppressed!r}",
                           fix="use suppressed='drop' (remove records) or 'keep' (show *)")


def recode(batch: pa.Table | pa.RecordBatch, recoding: Recoding,
           suppressed: str = "drop") -> pa.Table:
    """Apply ``recoding`` to one chunk of rows (vectorized: one gather per QI), as text.

    Identifiers are removed, QIs replaced by their labels, the records of suppressed classes
    dropped (``"drop"``) or kept with ``*`` in every QI (``"keep"``); other columns are kept
    as they are and in their order.
    """
    check_mode(suppressed)
    marked, removed = FullDomainRecoder(recoding)(batch)
    if suppressed == "drop" and removed.any():
        marked = marked.filter(pa.array(~removed))
    return decoded(marked, recoding.qi_names)


def recode_all(batches: Iterable[pa.Table | pa.RecordBatch], recoding: Recoding,
               suppressed: str = "drop") -> pa.Table:
    """Recode every chunk and put the release together (one table)."""
    parts = [recode(b, recoding, suppressed) for b in batches]
    if not parts:
        raise BlendinError("the table has no rows", fix="give a table with at least one row")
    return pa.concat_tables(parts)


def recode_all_marked(batches: Iterable[pa.Table | pa.RecordBatch],
                      recoding: Recoding) -> tuple[pa.Table, np.ndarray]:
    """Every chunk recoded with suppressed records as ``*`` (as text), and the mask of
    those rows."""
    recoder = FullDomainRecoder(recoding)
    parts = [recoder(b) for b in batches]
    if not parts:
        raise BlendinError("the table has no rows", fix="give a table with at least one row")
    return (decoded(pa.concat_tables([t for t, _ in parts]), recoding.qi_names),
            np.concatenate([m for _, m in parts]))


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

    batchwise = True  # (see FullDomainRecoder)

    def __init__(self, ft: FrequencyTable, p: Partitioning, *, identifiers: Sequence[str] = (),
                 sets: bool | None = None, missing: str = "") -> None:
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
        codes = qi_matrix([ground_codes(table.column(n), h, n, self.missing)
                           for n, h in zip(self.qi_names, self.hierarchies)], table.num_rows)
        keys = self.keyer(codes)
        at = np.minimum(np.searchsorted(self.tuple_keys, keys), len(self.tuple_keys) - 1)
        if not (self.tuple_keys[at] == keys).all():
            raise BlendinError("the table has quasi-identifier values the frequency table "
                               "lacks", fix="build the frequency table from this same table")
        return self.group_of_key[at]

    def __call__(self, batch: pa.Table | pa.RecordBatch) -> tuple[pa.Table, np.ndarray]:
        table = as_table(batch)
        group = self.groups(table)
        index = np.where(group < 0, self.n_groups, group)
        names = [n for n in table.column_names if n not in self.identifiers]
        return pa.table([labelled(index, self.shown[n]) if n in self.shown
                         else table.column(n) for n in names], names=names), group < 0


# -- added columns -------------------------------------------------------------------------


@dataclass(frozen=True)
class Shuffle:
    """A release's rows in a random order, drawn from ``seed``; ``rows`` (about the rows
    released) sizes the parts a streamed release is shuffled in.

    Without it, released row i is source row i (of the rows released): anyone who holds
    the source could link every row back. The seed is fresh for every run unless one is
    given, as knowing it undoes the shuffle.

    >>> Shuffle(seed=0, rows=4).apply(pa.table({"n": [0, 1, 2, 3]})).column("n").to_pylist()
    [2, 0, 1, 3]
    """

    seed: int
    rows: int = 0

    def apply(self, table: pa.Table) -> pa.Table:
        """``table``'s rows in an order drawn uniformly at random (one take)."""
        return table.take(self.generator().permutation(table.num_rows))

    def generator(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)


#: the hidden column that carries each row's number in the source through a release (the
#: rows released may be a subset or a sample, and are shuffled)
SOURCE_ROW = "__blendin_source_row__"
#: the hidden column that carries each row's person's class (see FullDomainRecoder)
PERSON_CLASS = "__blendin_person_class__"


class RowColumns:
    """Adds, batch after batch, each row's class (1, 2, ... in order of first appearance in
    the release, empty when suppressed) and its source row number (1 = first row);
    ``index_base=0`` numbers both from 0.

    The source row is numbered as the source is read (:meth:`number_source`, before the
    rows to release are chosen and shuffled) and travels in a hidden column; the classes
    are numbered as the release is written. The state is one entry per class seen so far,
    never per row.

    >>> add = RowColumns(["age"], group_column="group", original_row="row")
    >>> first = add.number_source(pa.table({"age": ["20-29", "*"]}))
    >>> later = add.number_source(pa.table({"age": ["30-39", "20-29"]}))
    >>> add(later).to_pydict()  # released first (shuffled, say)
    {'age': ['30-39', '20-29'], 'group': [1, 2], 'row': [3, 4]}
    >>> add(first).to_pydict()
    {'age': ['20-29', '*'], 'group': [2, None], 'row': [1, 2]}
    """

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
        # each QI's texts seen so far, coded; the classes numbered so far as rows of their
        # texts' codes (class i + 1 in row i)
        self.vocabularies = [_Vocabulary() for _ in self.qis]
        self.known = np.zeros((0, len(self.qis)), np.int32)
        #: the people's classes numbered so far (class -> number), for people_ids
        self.people_numbers: dict[int, int] = {}
        #: source rows numbered so far
        self.read = 0

    def fresh(self) -> RowColumns:
        """A RowColumns with the same options that has numbered nothing yet."""
        return RowColumns(self.qis, group_column=self.group_column,
                          original_row=self.original_row, index_base=self.base)

    @property
    def active(self) -> bool:
        return self.group_column is not None or self.original_row is not None

    def number_source(self, batch: pa.Table | pa.RecordBatch, start: int | None = None
                      ) -> pa.Table:
        """``batch`` of source rows with their numbers in the source (0, 1, ... counting
        on from the batch before, or from ``start``) in the hidden :data:`SOURCE_ROW`
        column, when the source row is asked for."""
        table = as_table(batch)
        if self.original_row is None:
            return table
        first = self.read if start is None else start
        self.read = first + table.num_rows
        return table.append_column(SOURCE_ROW, pa.array(
            np.arange(first, first + table.num_rows, dtype=np.int64)))

    def __call__(self, table: pa.Table) -> pa.Table:
        people = None
        if PERSON_CLASS in table.column_names:  # each row's person's class
            people = table.column(PERSON_CLASS).to_numpy()
            table = table.drop_columns([PERSON_CLASS])
        for name in (self.group_column, self.original_row):
            if name is not None and name in table.column_names:
                raise BlendinError(f"the release already has a column {name!r}",
                                   fix="choose another name for the added column")
        hidden = table.column(SOURCE_ROW) if SOURCE_ROW in table.column_names else None
        if hidden is not None:
            table = table.drop_columns([SOURCE_ROW])
        if self.group_column is not None:
            ids = self.class_ids(table) if people is None else self.people_ids(people)
            table = table.append_column(self.group_column,
                                        pa.array(ids - 1 + self.base, mask=ids <= 0))
        if self.original_row is not None:
            if hidden is None:
                raise BlendinError("the source rows were not numbered as they were read",
                                   fix="this is a bug in blendin; please report it")
            table = table.append_column(self.original_row, pc.add(hidden, self.base))
        return table

    def people_ids(self, classes: np.ndarray) -> np.ndarray:
        """Each row's class, 1, 2, ... in order of first appearance (0 when suppressed),
        from its person's class (-1 when suppressed)."""
        ids = np.zeros(len(classes), np.int64)
        shown = classes >= 0
        values, first, inverse = np.unique(classes[shown], return_index=True,
                                           return_inverse=True)
        for value in values[np.argsort(first)]:  # each class once, in order of appearance
            self.people_numbers.setdefault(int(value), len(self.people_numbers) + 1)
        ids[shown] = np.array([self.people_numbers[int(v)] for v in values],
                              np.int64)[inverse.reshape(-1)]
        return ids

    def class_ids(self, table: pa.Table) -> np.ndarray:
        """Class of every row, 1, 2, ... (0 when suppressed), the classes not met before
        numbered on in order of first appearance."""
        n = table.num_rows
        if not self.qis:
            return np.ones(n, np.int64)
        codes = [text_codes(table.column(q), v) for q, v in zip(self.qis, self.vocabularies)]
        stars = tuple(int(v.codes(pa.array([SUPPRESSED]))[0]) for v in self.vocabularies)
        radices = [max(len(v.values), 1) for v in self.vocabularies]
        group, groups = group_keys(combine_keys(codes, radices),
                                   math.prod(radices))
        first = first_seen(group, groups)
        classes = np.stack([c[first] for c in codes], axis=1)  # in order of appearance
        shown = ~(classes == np.array(stars)).all(axis=1)
        # grouped with the classes known, which come first (known class i is group i): a
        # class new to the stream takes the next group, in order of appearance
        known = len(self.known)
        both = np.concatenate([self.known, classes[shown]])
        number, _ = group_keys(combine_keys(both, radices), math.prod(radices))
        number = number[known:]
        self.known = np.concatenate([self.known, classes[shown][number >= known]])
        ids = np.zeros(groups, np.int64)
        ids[shown] = number + 1
        return ids[group]


# -- Mondrian, row by row (the release without an engine's streaming) -----------------------


def mondrian_release(
    data,
    ft: FrequencyTable,
    p: Partitioning,
    *,
    identifiers: Sequence[str] = (),
    sets: bool | None = None,
    group_column: str | None = None,
    original_row_column: str | None = None,
    suppressed: str = "keep",
    missing: str = "",
) -> pa.Table:
    """The released table: rows in source order, each QI replaced by its group's value.

    Identifier columns are removed; sensitive and other columns are kept unchanged and in
    place. Rows of suppressed groups show ``*`` in every QI (``suppressed="keep"``) or are
    left out (``"drop"``). ``group_column`` (e.g. ``"group"``) adds each row's group number
    (1, 2, ... in the order of the frequency table; empty for suppressed rows).
    ``original_row_column`` adds the source row number (1 = first data row): anyone who holds
    the source can then link every released row back to its person, so only add it for
    internal use. ``data`` is anything :func:`blendin.io.to_arrow` reads; for data read in
    chunks use :func:`mondrian_release_batches`.

    >>> import pandas as pd
    >>> from blendin.models import KAnonymity
    >>> sex = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
    >>> df = pd.DataFrame({"name": ["a", "b", "c", "d"], "sex": ["m", "f", "m", "f"]})
    >>> ft = FrequencyTable.from_table(df, {"sex": sex})
    >>> from blendin.search.mondrian import mondrian
    >>> p = mondrian(ft, [KAnonymity(2)])
    >>> out = mondrian_release(df, ft, p, identifiers=["name"], group_column="group")
    >>> out.column_names, out.column("sex").to_pylist(), out.column("group").to_pylist()
    (['sex', 'group'], ['m', 'f', 'm', 'f'], [2, 1, 2, 1])
    """
    table = to_arrow(data)
    parts = list(mondrian_release_batches(
        [table], ft, p, identifiers=identifiers, sets=sets, group_column=group_column,
        original_row_column=original_row_column, suppressed=suppressed, missing=missing))
    return parts[0]


def mondrian_release_batches(
    batches: Iterable[pa.Table | pa.RecordBatch],
    ft: FrequencyTable,
    p: Partitioning,
    *,
    identifiers: Sequence[str] = (),
    sets: bool | None = None,
    group_column: str | None = None,
    original_row_column: str | None = None,
    suppressed: str = "keep",
    missing: str = "",
) -> Iterator[pa.Table]:
    """:func:`mondrian_release` chunk by chunk: one release table per source batch.

    Labels are made once; row numbers continue across batches.
    """
    if suppressed not in ("keep", "drop"):
        raise BlendinError(f"suppressed must be 'keep' or 'drop', got {suppressed!r}",
                           fix="use 'keep' (show * in every QI) or 'drop' (leave rows out)")
    shown = {name: pa.array(np.append(lab, SUPPRESSED).tolist(), type=pa.string())
             for name, lab in zip(ft.qi_names, group_labels(ft, p, sets=sets))}
    offset = 0
    for batch in batches:
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        group = _group_of_rows(table, ft, p, missing)
        extras = {group_column: pa.array(group + 1, mask=group < 0),
                  original_row_column: pa.array(np.arange(1, table.num_rows + 1) + offset)}
        offset += table.num_rows
        index = pa.array(np.where(group < 0, p.n_groups, group))
        names, columns = [], []
        for name in table.column_names:
            if name not in identifiers:
                names.append(name)
                columns.append(shown[name].take(index) if name in shown
                               else table.column(name))
        for extra, values in extras.items():
            if extra is None:
                continue
            if extra in names:
                raise BlendinError(f"the release already has a column named {extra!r}",
                                   fix="choose another name for the added column")
            names.append(extra)
            columns.append(values)
        out = pa.table(columns, names=names)
        yield out.filter(pa.array(group >= 0)) if suppressed == "drop" else out


def group_of_rows(data, ft: FrequencyTable, p: Partitioning, missing: str = "") -> np.ndarray:
    """Group (0-based; -1 when suppressed) of every row of the source table."""
    return _group_of_rows(to_arrow(data), ft, p, missing)


def _group_of_rows(table: pa.Table, ft: FrequencyTable, p: Partitioning,
                   missing: str) -> np.ndarray:
    codes = [h.encode(as_text(table.column(n), missing), n)
             for n, h in zip(ft.qi_names, ft.hierarchies)]
    if not codes:
        return np.zeros(table.num_rows, np.int64) if p.n_groups else np.full(
            table.num_rows, -1, np.int64)
    rows = np.stack(codes, axis=1)
    # one key space for tuples and rows, so a ranking fallback stays consistent
    keys = combine_keys(np.concatenate([ft.tuples, rows]), [len(h.ground)
                                                            for h in ft.hierarchies])
    tuple_keys, row_keys = keys[: len(ft.tuples)], keys[len(ft.tuples):]
    order = np.argsort(tuple_keys)
    at = order[np.minimum(np.searchsorted(tuple_keys[order], row_keys), len(order) - 1)]
    if not (tuple_keys[at] == row_keys).all():
        raise BlendinError("the table has quasi-identifier values the frequency table lacks",
                           fix="build the frequency table from this same table")
    return p.group_of_tuple[at]
