"""The embedded engine: pyarrow and NumPy in this process, in batches, bounded memory.

A file is read batch by batch twice: once to count its distinct tuples (the frequency
table), once to recode it. With a file path out, each recoded batch is written to a
temporary file beside the target and regrouped for the checker (a streaming group-by whose
state is one entry per distinct tuple); the file is renamed into place only after the
checker has passed. So peak memory follows the batch size and the number of distinct tuples,
never the number of rows. The work is spread over every core (Arrow and NumPy work without
the GIL): a CSV file's blocks are parsed side by side (:meth:`Source.batches`), each block's
values are looked up, or recoded, on a thread of its own while this thread counts the blocks
before it in order, and a CSV release is formatted in pieces side by side and written in
order. In-memory frames in and out work as they always did.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.engines.base import Release
from blendin.engines.kernels import (
    RowColumns,
    Shuffle,
    blanked,
    decoded,
    plain_schema,
    starred,
    without_people,
)
from blendin.engines.replay import Replay
from blendin.errors import BlendinError
from blendin.groupby import DistinctCounter, distinct_tuples
from blendin.io import (
    Source,
    _suffix,
    atomic_path,
    check_writable_types,
    escape_formula_text,
    output_delimiter,
    temp_name,
    write_table,
)
from blendin.models import dp
from blendin.models.dp import DifferentialPrivacy
from blendin.parallel import (
    MOST_AHEAD,
    InTurn,
    each,
    items_ahead,
    ordered,
    stream_pool,
    workers,
)
from blendin.progress import Reading

#: file types a release can be streamed to (Excel needs the whole table to colour classes)
STREAMED_SUFFIXES = (".csv", ".parquet")
#: bytes of CSV parsed per block (a window, parsed on a thread of its own beside those of
#: the next ones): with the blocks in flight, this bounds the memory reading takes
#: (2 MiB windows: smaller ones cost more per byte, larger ones more memory)
READ_BLOCK = 2 << 20
#: rows recoded, written and counted per batch: small blocks are put together to this size,
#: as every call into Arrow or NumPy has a fixed cost
BATCH_ROWS = 1 << 18
#: rows a thread looks up or recodes at once (blocks put together up to this size)
TASK_ROWS = 1 << 16
#: tasks made ready at once for the main thread to count, at most (looked up in a first
#: pass, recoded in a release): a thread makes one in about the time the main thread
#: counts one (64K CSV rows: 8.5 and 5.8 ms against 7.3 and 6.5 ms), so 3 keep it fed, and
#: each holds TASK_ROWS rows (with 16 threads, 8 at once held 100-150 MiB more)
COUNTED_AHEAD = 3
#: pieces of tables a writer may hold per thread while its threads write the ones before
WRITE_BEHIND = 2
#: rows of CSV, at least, formatted per piece
CSV_PIECE_ROWS = 1 << 15

Recoder = Callable[[pa.Table | pa.RecordBatch], tuple[pa.Table, np.ndarray]]


class EmbeddedEngine:
    """Rows in batches through pyarrow and NumPy, in this process.

    ``block_size`` is the bytes of CSV parsed per block (a Parquet block holds
    ``block_size // 64`` rows); blocks are put together into batches of about
    ``batch_rows`` rows. Both bound the memory a run takes, whatever the number of rows.

    >>> import pandas as pd
    >>> engine = EmbeddedEngine()
    >>> source = engine.source(pd.DataFrame({"sex": ["f", "m", "f"]}))
    >>> engine.distinct(source, ["sex"]).to_pydict()
    {'sex': ['f', 'm'], '__blendin_count__': [2, 1]}
    """

    name = "embedded"

    def __init__(self, block_size: int = READ_BLOCK, batch_rows: int = BATCH_ROWS) -> None:
        self.block_size = block_size
        self.batch_rows = batch_rows

    def source(self, data, spec=None) -> Source:
        """The input as a :class:`~blendin.io.Source` (a file read in batches, or a frame)."""
        if isinstance(data, Source):
            return data
        if isinstance(data, str | os.PathLike):
            return Source(data, delimiter=getattr(spec, "delimiter", None),
                          encoding=getattr(spec, "encoding", None), block_size=self.block_size)
        return Source(data)

    def distinct(self, source: Source, columns: Sequence[str], missing: str = "",
                 expected: Mapping[str, pa.Array] | None = None,
                 progress: Reading | None = None) -> pa.Table:
        """Distinct text tuples of ``columns`` with their counts, batch by batch (the
        ``expected`` texts of a column are looked up rather than encoded; ``progress`` is
        told the share of a file read, see :meth:`Source.batches`).

        An in-memory source keeps each column's codes, so that the release, which reads the
        quasi-identifiers ``encoded``, gathers instead of hashing every text again.
        """
        # codes kept by an earlier call on the same Table are read (a gather), not texts,
        # and stay kept; the other columns' codes are kept from this pass
        memory = source.kind == "memory"
        recalled = source.recall_codes(columns, missing) if memory else []
        new = [name for name in columns if memory and name not in recalled]
        replay = _replay_for(source, columns, missing)
        counter = DistinctCounter(columns, missing, expected=expected,
                                  keep_codes=bool(new) or replay is not None)
        # a file read once is read whole (its other columns too), for the passes after
        read = columns if replay is None else [
            *columns, *(name for name in source.columns if name not in columns)]
        # the texts of several blocks looked up at once, on threads; counted in order here
        looked_up = ordered(lambda batch: (batch, counter.looked_up(batch)), self.batches(
            source, read, encoded=columns, progress=progress, rows=self.task_rows),
            ahead=min(items_ahead(), COUNTED_AHEAD))
        try:
            for batch, found in looked_up:
                counter.add(batch, found)
                if replay is not None and batch.num_rows:  # (a batch of none adds no codes)
                    replay.add(batch, dict(zip(columns, counter.batch_codes.pop())))
            distinct = counter.result()
        except BaseException:
            if replay is not None:
                replay.close()
            raise
        if replay is not None:
            replay.finish({name: vocabulary.values for name, vocabulary
                           in zip(counter.columns, counter.vocabularies)})
            source.replay = replay if replay.usable else None
        for name in new:
            source.keep_codes(name, counter.codes(name), missing)
        return distinct

    def sample(self, source: Source, columns: Sequence[str], missing: str,
               model: DifferentialPrivacy) -> tuple[Source, pa.Table]:
        """Differential privacy's sample drawn from the rows, in row order: the source (the
        release draws it again) and the distinct tuples of ``columns`` with the 0/1 column
        ``MARK`` of the records sampled."""
        return source, distinct_tuples(dp.sampled(self.batches(source, columns), model,
                                                  mark=dp.MARK), [*columns, dp.MARK], missing)

    @property
    def task_rows(self) -> int:
        """Rows a thread works on at once: enough that each call into Arrow does much (with
        one thread, a whole batch)."""
        return min(TASK_ROWS, self.batch_rows) if workers() > 1 else self.batch_rows

    def batches(self, source: Source, columns: Sequence[str] | None = None, *,
                encoded: Collection[str] = (), progress: Reading | None = None,
                rows: int | None = None) -> Iterator[pa.Table]:
        """The source's rows in tables of about ``rows`` (by default ``batch_rows``) rows
        (only ``columns``; the ``encoded`` text columns dictionary-encoded, see
        :meth:`Source.batches`)."""
        return in_tables(source.batches(columns, encoded=encoded, progress=progress),
                         rows or self.batch_rows)

    @contextmanager
    def release(self, source: Source, recoder: Recoder, *, check_columns: Sequence[str],
                missing: str = "", suppressed: str = "drop",
                row_columns: RowColumns | None = None, output: str | os.PathLike | None = None,
                delimiter: str = ",", escape_formulas: bool = False,
                labelled: Sequence[str] = (), progress: Reading | None = None,
                shuffle: Shuffle | None = None, blank: Sequence[str] = (),
                hidden: Sequence[str] = ()) -> Iterator[Release]:
        """Recode every batch, regroup it for the checker and keep or write it
        (``progress`` as in :meth:`distinct`), the rows in a random order with ``shuffle``,
        the ``blank`` columns (the sensitive ones) empty in suppressed records. The
        ``hidden`` columns (a person key) are regrouped for the checker, never released.

        Without ``output`` the release is one in-memory table (``Release.data``). With a
        ``.csv`` or ``.parquet`` ``output`` each batch is written to a temporary file as it
        is made (shuffled, it goes through temporary parts first, :class:`_Shuffler`,
        unless the source's kept rows come in the shuffle's order already);
        leaving the block renames it into place, an exception removes it. The ``labelled``
        columns (the recoded QIs) are released as text, the others with the source's types.
        """
        if _in_order(source, shuffle):  # read in the release's order: written as read
            shuffle = None
        # the texts of a column released as it is were seen by the first pass: looked up,
        # not hashed anew (the recoded columns' labels are new texts)
        seen = {name: texts for name in check_columns if name not in labelled
                and (texts := source.known_texts(name)) is not None}
        counter = DistinctCounter(check_columns, missing, expected=seen)
        drop = suppressed == "drop"
        shown = ShownSchema(source.types(), labelled)
        numbered = row_columns if row_columns is not None and row_columns.active else None
        # a file shuffled through parts is written after the last row is read: its bar's
        # first half reads the rows, the second writes them
        parted = output is not None and shuffle is not None and progress is not None
        reading = (lambda share: progress(share / 2)) if parted else progress
        # in memory the hidden columns travel with the rows, to number each row's person
        made = self._recoded(source, recoder, numbered, counter, labelled, drop, reading,
                             blank, hidden if output is not None else ())
        if output is None:
            parts = list(made)
            table = pa.concat_tables(parts)
            if shuffle is not None:
                table = shuffle.apply(table)
            if numbered is not None:
                table = numbered(table)
            table, people = without_people(table, hidden)
            table = shown.decoded(table)
            yield Release(counter.result(), table.column_names, data=table,
                          batches=len(parts), rows=table.num_rows, people=people)
            return
        path = Path(output)

        with atomic_path(path) as temp:
            with BatchWriter(temp, path, delimiter=delimiter, escape_formulas=escape_formulas,
                             shown=shown, unstated=shown.encoded) as writer, \
                    _Shuffler(path, shuffle, self.batch_rows,
                              (lambda share: progress(0.5 + share / 2)) if parted else None
                              ) as order:
                for table in order(made):
                    writer.write(numbered(table) if numbered is not None else table)
            yield Release(counter.result(), writer.columns, path=path, batches=writer.batches,
                          rows=writer.rows)

    def _recoded(self, source: Source, recoder: Recoder, numbered: RowColumns | None,
                 counter: DistinctCounter, labelled: Sequence[str], drop: bool,
                 progress: Reading | None = None, blank: Sequence[str] = (),
                 hidden: Sequence[str] = ()) -> Iterator[pa.Table]:
        """The released rows in tables of about ``batch_rows`` (the ``drop``ped records
        left out, the ``hidden`` columns too), every recoded row counted by ``counter``."""
        # the QIs come as codes (released as labels); the source rows are numbered before
        # the recoder chooses the rows to release (a subset, a sample)
        batches = self.batches(source, encoded=labelled, progress=progress,
                               rows=self.task_rows)
        if numbered is not None:
            batches = (numbered.number_source(batch) for batch in batches)

        def recode(batch: pa.RecordBatch) -> tuple[pa.Table, list, pa.Table]:
            marked, removed = recoder(batch)
            marked = blanked(marked, removed, blank)  # as the checker is to see them
            # a removed row is counted as suppressed, whatever labels the recoder gave it:
            # the release drops it (or shows it so)
            marked = starred(marked, removed, labelled)
            checked = marked.select(counter.columns)
            released = kept(marked.drop_columns(hidden) if hidden else marked, removed, drop)
            return checked, counter.looked_up(checked), released

        # a recoder that keeps nothing from one batch to the next recodes several at once
        made = (ordered(recode, batches, ahead=min(items_ahead(), COUNTED_AHEAD))
                if getattr(recoder, "batchwise", False) else map(recode, batches))
        group: list[pa.Table] = []
        rows = 0
        for checked, found, released in made:
            counter.add(checked, found)
            group.append(released)
            rows += checked.num_rows
            if rows >= self.batch_rows:  # written and kept in batches of batch_rows
                yield pa.concat_tables(group)
                group, rows = [], 0
        if group:
            yield pa.concat_tables(group)

    def write(self, table: pa.Table, path: str | os.PathLike, **options) -> Path:
        """Write an in-memory release atomically (see :func:`blendin.io.write_table`)."""
        return write_table(table, path, **options)


def in_tables(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """``batches`` put together in tables of about ``rows`` rows (the last one fewer).

    >>> batches = [pa.record_batch({"a": [i]}) for i in range(5)]
    >>> [t.num_rows for t in in_tables(batches, 2)]
    [2, 2, 1]
    """
    group, count = [], 0
    for batch in batches:
        group.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield pa.Table.from_batches(group)
            group, count = [], 0
    if group:
        yield pa.Table.from_batches(group)


def _replay_for(source: Source, columns: Sequence[str], missing: str) -> Replay | None:
    """Where the rows of this pass over ``source`` are kept for the passes after it: a CSV
    file, or a Parquet file released shuffled, that anonymize reads more than once, whose
    texts among ``columns`` its codes give back (no ``missing`` text: an empty text would be
    coded as it; other columns, a Parquet file's numbers say, are kept as read), its columns
    flat. None where it cannot be made, or need not."""
    if source.kind not in ("csv", "parquet") or not source.once or not columns or missing:
        return None
    if source.kind == "parquet" and source.order is None:
        return None  # (read again in its order, a Parquet file costs less than kept)
    kinds = source.types()
    # (a Parquet file's dictionaries and nested values would be kept as read: not so)
    if any(pa.types.is_dictionary(kind) or pa.types.is_nested(kind) for kind in kinds.values()):
        return None
    coded = [name for name in columns
             if pa.types.is_string(kinds[name]) or pa.types.is_large_string(kinds[name])]
    if source.replay is not None:  # a pass of its own: its rows, as read now
        source.replay.close()
        source.replay = None
    try:
        return Replay(coded, source.scratch, order=source.order,
                      parts=1 if source.order is None else _replay_parts(source),
                      kinds={name: kinds[name] for name in coded})
    except OSError:  # no folder to write in: the file is read again
        return None


def _replay_parts(source: Source) -> int:
    """The parts a shuffled replay keeps the rows in: about PART_BYTES of a CSV file each
    (a compressed file's text taken as COMPRESSED_TEXT times its size), SHUFFLE_PART_ROWS
    of a Parquet file's rows each."""
    if source.kind == "parquet":
        import pyarrow.parquet as pq

        return -(-pq.ParquetFile(source.path).metadata.num_rows // SHUFFLE_PART_ROWS)
    text = source.path.stat().st_size * (COMPRESSED_TEXT if source.codec else 1)
    return -(-text // PART_BYTES)


def _in_order(source: Source, shuffle: Shuffle | None) -> bool:
    """Whether ``source``'s rows are read in ``shuffle``'s order already (a CSV file kept
    shuffled by its seed, see :mod:`blendin.engines.replay`)."""
    replay = source.replay
    return (shuffle is not None and replay is not None and replay.usable
            and replay.order == shuffle.seed)


#: rows a part of a shuffled release holds on average (each part is permuted in memory)
SHUFFLE_PART_ROWS = 1 << 20
#: bytes of a CSV file whose rows a part of its shuffled replay holds, about (1M rows of 64
#: bytes, as SHUFFLE_PART_ROWS)
PART_BYTES = 64 << 20
#: a compressed CSV file's text, in times its size, for the parts of its replay: CSV text
#: compresses 4-12x (adult-like rows, gzip: 12x), so a part holds at most PART_BYTES of it
#: unless the text compresses more than this (the order is as uniform either way)
COMPRESSED_TEXT = 16


class _Shuffler:
    """The tables of a streamed release in a uniformly random order of rows, in bounded
    memory: every row goes to one of several temporary parts at random (Arrow IPC files
    beside the target, named as :func:`blendin.io.atomic_path` names its files, so a
    killed run's are removed as stale), then each part is read back, permuted, and handed
    on in tables of ``batch_rows``. Rows assigned to parts uniformly and permuted within
    them come out in a uniformly random order. Without ``shuffle`` the tables pass as they
    come.
    """

    def __init__(self, target: Path, shuffle: Shuffle | None, batch_rows: int,
                 told: Reading | None = None) -> None:
        self.target = target
        self.shuffle = shuffle
        self.batch_rows = batch_rows
        #: hears the share of the rows handed on from the parts
        self.told = told
        self.paths: list[Path] = []

    def __enter__(self) -> _Shuffler:
        return self

    def __exit__(self, *exc) -> None:
        for path in self.paths:
            path.unlink(missing_ok=True)

    def __call__(self, tables: Iterator[pa.Table]) -> Iterator[pa.Table]:
        if self.shuffle is None:
            yield from tables
            return
        rng = self.shuffle.generator()
        n_parts = max(1, -(-self.shuffle.rows // SHUFFLE_PART_ROWS))
        writers: list = []
        schema = None
        rows = handed = 0
        try:
            for table in tables:
                if schema is None:
                    schema = table.schema
                    writers = [self._open(i, schema) for i in range(n_parts)]
                table = table.cast(schema) if table.schema != schema else table
                # (drawn as ever; as small integers a stable argsort is a radix sort)
                part = rng.integers(0, n_parts, table.num_rows)
                self._scatter(table, part.astype(np.min_scalar_type(n_parts)), writers)
                rows += table.num_rows
        finally:
            for writer in writers:
                writer.close()
        if not rows and schema is not None:  # every row removed: the file still has columns
            yield schema.empty_table()
            return
        for path in self.paths:  # one part in memory at a time, its columns taken at once
            part = pa.ipc.open_stream(pa.memory_map(str(path))).read_all()
            part = _taken(part, rng.permutation(part.num_rows))
            for start in range(0, part.num_rows, self.batch_rows):
                yield part.slice(start, self.batch_rows)
                handed += min(self.batch_rows, part.num_rows - start)
                if self.told is not None:
                    self.told(handed / rows)
            path.unlink()

    def _open(self, i: int, schema: pa.Schema) -> _Part:
        path = self.target.parent / temp_name(self.target.name, i)
        self.paths.append(path)  # known before it exists: removed whatever happens next
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return _Part(path, schema)

    @staticmethod
    def _scatter(table: pa.Table, part: np.ndarray, writers: list[_Part]) -> None:
        """Each row of ``table`` to the writer of its ``part`` (one take, then slices)."""
        grouped = _taken(table, np.argsort(part, kind="stable"))
        counts = np.bincount(part, minlength=len(writers))
        for writer, start, count in zip(writers, np.cumsum(counts) - counts, counts):
            if count:
                writer.write_table(grouped.slice(int(start), int(count)))


def _taken(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """``table.take(rows)``, the columns taken on several threads at once."""
    columns = list(table.columns)

    def take(j: int) -> None:
        columns[j] = columns[j].take(rows)

    each(take, range(len(columns)))
    return pa.table(columns, schema=table.schema)


class _Part:
    """One temporary part of a shuffled release: an Arrow IPC stream (dictionaries may
    change from one table to the next)."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.sink = pa.OSFile(str(path), "wb")
        self.writer = pa.ipc.new_stream(self.sink, schema)

    def write_table(self, table: pa.Table) -> None:
        self.writer.write_table(table)

    def close(self) -> None:
        try:
            self.writer.close()
        finally:
            self.sink.close()


class ShownSchema:
    """The types a release shows: the ``labelled`` columns as text, the others as the
    source has them. Batches travel dictionary-encoded (labels once, an index per row);
    that is how they are made, not a type the user asked for.

    >>> shown = ShownSchema({"age": pa.string()}, labelled=["age"])
    >>> shown(pa.schema([("age", pa.dictionary(pa.int32(), pa.string()))]))
    age: string
    """

    def __init__(self, source_types: dict[str, pa.DataType], labelled: Sequence[str]) -> None:
        self.kept = {name for name, kind in source_types.items()
                     if pa.types.is_dictionary(kind) and name not in labelled}
        #: the columns dictionary-encoded as made or as the source has them (not those
        #: only read so: a Parquet file's texts)
        self.encoded = self.kept | set(labelled)

    def __call__(self, schema: pa.Schema) -> pa.Schema:
        return plain_schema(schema, [n for n in schema.names if n not in self.kept])

    def decoded(self, table: pa.Table) -> pa.Table:
        """``table`` as shown."""
        return decoded(table, [n for n in table.column_names if n not in self.kept])


def kept(marked: pa.Table, removed: np.ndarray, drop: bool) -> pa.Table:
    """The rows of ``marked`` released: all of them, or those not ``removed``.

    The removed rows may have been the only ones pointing at the last entry of a recoder's
    dictionaries (the ``*`` of suppression, unless a label is ``*`` too): the dictionaries
    lose the entries past the last one still used, so that a file's indices are no wider
    than the labels need (1 bit, not 2, for two labels).
    """
    if not (drop and removed.any()):
        return marked
    keep = pa.array(~removed)
    # column by column: a table's filter would cut every column into the chunks of the
    # most chunked one (a text column read in 1 MiB blocks), and writing them costs more
    columns = [pc.filter(column, keep) for column in marked.columns]
    columns = [pa.chunked_array([_used(chunk) for chunk in column.chunks], column.type)
               if pa.types.is_dictionary(column.type) else column for column in columns]
    return pa.table(columns, schema=marked.schema)


def _used(chunk: pa.DictionaryArray) -> pa.DictionaryArray:
    """``chunk`` with its dictionary cut after the last entry an index points to."""
    last = pc.max(chunk.indices).as_py()
    if last is None or last + 1 == len(chunk.dictionary):
        return chunk
    return pa.DictionaryArray.from_arrays(chunk.indices, chunk.dictionary.slice(0, last + 1))


class BatchWriter:
    """Writes tables one after another to one CSV or Parquet file (the first sets the
    columns and types).

    ``shown`` gives the schema the file is to be read back with (by default the tables'
    own): dictionary columns are written to Parquet as they are (the indices, no text made
    per row, no min/max statistics) when a file without Arrow's stored schema reads back
    exactly as shown; otherwise, and for CSV, they are decoded first. The ``unstated``
    dictionary columns (by default all) are written without min/max statistics.
    """

    def __init__(self, temp: str, target: Path, *, delimiter: str = ",",
                 escape_formulas: bool = False,
                 shown: Callable[[pa.Schema], pa.Schema] | None = None,
                 unstated: Collection[str] | None = None) -> None:
        self.temp = temp
        self.suffix = _suffix(target)
        if self.suffix not in STREAMED_SUFFIXES:
            raise BlendinError(f"cannot stream a release to {str(target)!r}",
                               fix=f"write one of {', '.join(STREAMED_SUFFIXES)}")
        self.delimiter = output_delimiter(delimiter)
        self.escape_formulas = escape_formulas
        self.shown = shown or (lambda schema: schema)
        self.unstated = unstated
        self.writer = None
        self.schema: pa.Schema | None = None
        self.columns: list[str] = []
        self.batches = 0
        self.rows = 0
        #: encoding and compressing run in Arrow without the GIL, beside the caller making
        #: the next table: a thread writes Parquet (one file, one writer); CSV is formatted
        #: on every core, a piece of a table each, and that thread writes the texts in order
        #: (with one thread, it formats and writes them)
        self._threads = 1 if self.suffix == ".parquet" else min(workers(), MOST_AHEAD)
        self._format = stream_pool() if self._threads > 1 else None
        self._write = InTurn(min(WRITE_BEHIND * self._threads, MOST_AHEAD),
                             name="blendin-write")
        self.sink = None

    def __enter__(self) -> BatchWriter:
        return self

    @property
    def opened(self) -> bool:
        """Whether a first table set the file's columns."""
        return self.schema is not None

    def __exit__(self, error_type, *exc) -> None:
        try:
            self._write.finish(raise_error=error_type is None)
        finally:
            if self.writer is not None:
                self.writer.close()
            if self.sink is not None:
                self.sink.close()

    def _open(self, schema: pa.Schema, shown: pa.Schema) -> None:
        self.columns = list(shown.names)
        if self.suffix == ".parquet":
            import pyarrow.parquet as pq

            encoded = _reads_back(schema, shown)
            self.schema = schema if encoded else shown
            # min/max statistics of a dictionary column cost a hash of every row (Arrow
            # finds the entries in use first): a third of the writing; they are kept for
            # the other columns (a text column only read as a dictionary among them)
            plain = [f.name for f in self.schema if not pa.types.is_dictionary(f.type)
                     or (self.unstated is not None and f.name not in self.unstated)]
            self.writer = pq.ParquetWriter(self.temp, self.schema, store_schema=not encoded,
                                           write_statistics=plain)
        else:
            import pyarrow.csv as pcsv

            self.schema = shown
            check_writable_types(shown, self.suffix)
            if self._format is None:  # one thread: Arrow formats and writes as it goes
                self.writer = pcsv.CSVWriter(self.temp, shown, write_options=pcsv.WriteOptions(
                    delimiter=self.delimiter))
                return
            self.sink = open(self.temp, "wb")  # noqa: SIM115 (closed on leaving the writer)
            self.sink.write(self._csv_text(shown.empty_table(), header=True))

    def write(self, table: pa.Table) -> None:
        if not self.opened:
            self._open(table.schema, self.shown(table.schema))
        if not table.num_rows:
            return
        size = max(CSV_PIECE_ROWS, -(-table.num_rows // self._threads))
        for start in range(0, table.num_rows, size):
            piece = table.slice(start, size)
            if self.writer is not None:
                self._write(self._written, piece)
            else:  # formatted on any thread, written in turn
                self._write(self._put, self._format.submit(self._text, piece))
        self.batches += 1
        self.rows += table.num_rows

    def _shown(self, table: pa.Table) -> pa.Table:
        """``table`` as the file holds it."""
        if table.schema != self.schema:
            table = table.cast(self.schema)
        if self.escape_formulas and self.suffix == ".csv":
            table = escape_formula_text(table)
        return table

    def _written(self, table: pa.Table) -> None:
        self.writer.write_table(self._shown(table))

    def _text(self, table: pa.Table) -> pa.Buffer:
        """``table``'s rows as the CSV file's text."""
        return self._csv_text(self._shown(table))

    def _put(self, text: Future) -> None:
        self.sink.write(text.result())

    def _csv_text(self, table: pa.Table, header: bool = False) -> pa.Buffer:
        import pyarrow.csv as pcsv

        text = pa.BufferOutputStream()
        pcsv.write_csv(table, text, write_options=pcsv.WriteOptions(
            delimiter=self.delimiter, include_header=header))
        return text.getvalue()


def _reads_back(schema: pa.Schema, shown: pa.Schema) -> bool:
    """Whether Parquet columns written from ``schema``, without Arrow's stored schema, are
    read back with the ``shown`` types (a string dictionary reads back as strings; a time
    zone, say, would be lost)."""
    import pyarrow.parquet as pq

    if schema.equals(shown):
        return False
    buffer = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), buffer, store_schema=False)
    back = pq.read_schema(pa.BufferReader(buffer.getvalue()))
    return back.remove_metadata().equals(shown.remove_metadata())
