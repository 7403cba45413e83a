"""A CSV or Parquet file read once: the first pass keeps the rows it read in a temporary
file, and every later pass reads them there instead of parsing the file again.

The file holds Arrow record batches, one after another: the columns the first pass codes
(the quasi-identifiers, the sensitive columns) as their codes, in one or two bytes where
their texts are few, and the other columns as read. A later pass reads a coded column as a
dictionary (its codes and the texts of the first pass's vocabulary), as it reads a kept
column of an in-memory table, or as text decoded from them: the text as read, where no
text stands for the missing value (``[input] missing`` is empty, as by default; where it is
not, an empty text is coded as it, and the file is read again). The file is made beside the
release being written (a folder sized for the rows), else in the system's temporary folder
(``TMPDIR``), and unlinked at once where the system allows, so a killed run leaves
nothing; where it cannot be written (no space, say), the passes read the file again.

A Parquet file released shuffled is kept so too: its texts among those columns
(``string``, or ``large_string``, given back as such) as codes, their nulls as nulls, and
its other columns (numbers, dates) as read; not where a column is a dictionary or nested.
Reading it again would cost little, but the kept rows come coded and in the release's
order: the release neither codes the texts again nor shuffles the rows. (Released in its
own order, it is read again: keeping a wide file would cost more than that saves.)

Reading once is also reading one version: a file rewritten during a run is released as the
first pass read it, which the frequency table counted.

Given the seed of the release's random ``order``, the rows are kept shuffled: each row goes
to one of the ``parts`` by a hash of the seed and its place in the file, and a later pass
reads the parts one after another, each permuted by a generator drawn from the seed. Rows
placed uniformly at random among parts and permuted within them come in a uniformly random
order, so the release writes them as it reads them: no shuffle of its own, the writing
beside the recoding. The same seed gives the same order, however the rows were batched.

>>> import numpy as np, pyarrow as pa
>>> replay = Replay(["sex"])
>>> replay.add(pa.table({"sex": ["f", "m"], "dx": ["a", "b"]}), {"sex": np.array([0, 1], np.int8)})
>>> replay.finish({"sex": pa.array(["f", "m"])})
>>> [b.to_pydict() for b in replay.batches(["dx", "sex"])]
[{'dx': ['a', 'b'], 'sex': ['f', 'm']}]
>>> replay.close()
>>> shuffled = Replay([], order=7, parts=2)
>>> shuffled.add(pa.table({"n": list(range(6))}), {})
>>> shuffled.finish({})
>>> sorted(n for b in shuffled.batches(["n"]) for n in b.column(0).to_pylist())
[0, 1, 2, 3, 4, 5]
>>> shuffled.close()
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
from collections.abc import Collection, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.parallel import InTurn
from blendin.progress import Reading

#: batches the first pass may hand on while earlier ones are being written
WRITE_BEHIND = 4
#: rows a shuffled pass holds per part before it writes them (each part's rows of a write
#: go to the file in one piece: a piece a batch would be hundreds of rows at 100 parts;
#: 100M rows, 125 parts: 4,096 took 1.5-1.65 GiB, 1,024 1.5 GiB at the same speed)
PIECE_ROWS = 1024
#: splitmix64's increment and multipliers: a row's part from the seed and its place
_GOLDEN, _MIX1, _MIX2 = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9),
                         np.uint64(0x94D049BB133111EB))


class Replay:
    """The rows of one pass over a file, kept for the next passes (see the module)."""

    def __init__(self, coded: Sequence[str], folder: str | os.PathLike | None = None, *,
                 order: int | None = None, parts: int = 1,
                 kinds: Mapping[str, pa.DataType] | None = None) -> None:
        self.coded = list(coded)
        #: a coded column's type in the file where it is not ``string`` (``large_string``)
        self.kinds = {name: kind for name, kind in (kinds or {}).items()
                      if kind != pa.string()}
        #: the seed the rows are kept shuffled by (None: kept in the file's order), in parts
        self.order, self.parts = order, max(1, parts) if order is not None else 1
        self.file = tempfile.TemporaryFile(prefix="blendin-replay-", suffix=".arrow",  # noqa: SIM115
                                           dir=folder)
        # closed by close(), or when this object goes (with the source that holds it)
        self._closing = weakref.finalize(self, self.file.close)
        #: where each part's pieces lie: (offset, length, schema) each
        self.index: list[list[tuple[int, int, pa.Schema]]] = [[] for _ in range(self.parts)]
        self.vocabularies: dict[str, pa.Array] = {}
        self.rows = 0
        self.batch_rows = 1  # the most rows added at once
        self._held: list[pa.Table] = []  # added, not yet handed to the writing thread
        self._held_rows = 0
        self.failed: OSError | None = None
        self._end = 0
        self._lock = threading.Lock()
        self._write = InTurn(WRITE_BEHIND, name="blendin-replay")

    @property
    def usable(self) -> bool:
        """Whether every row of the pass was kept (nothing went wrong writing them)."""
        return self.failed is None and self._write is None and not self.file.closed

    def add(self, table: pa.Table | pa.RecordBatch, codes: Mapping[str, np.ndarray]) -> None:
        """Keep the rows of ``table`` (in order), its ``coded`` columns as their ``codes``
        (by column)."""
        if self.failed is not None or not table.num_rows:
            return
        columns = {name: table.column(name) for name in table.column_names}
        for name in self.coded:
            column = columns[name]  # (a Parquet file's nulls kept, not coded as missing)
            nulls = column.is_null().to_numpy(zero_copy_only=False) if column.null_count else None
            columns[name] = pa.array(codes[name], mask=nulls)
        kept = pa.table(columns)
        self.batch_rows = max(self.batch_rows, kept.num_rows)
        self._held.append(kept)
        self._held_rows += kept.num_rows
        self.rows += kept.num_rows
        if self._held_rows >= PIECE_ROWS * (self.parts - 1) + 1:  # (in order: at once)
            self._hand_on()

    def _hand_on(self) -> None:
        """The rows held, to the writing thread (a batch's codes may be narrower than the
        next one's: put together at the wider)."""
        if self._held:
            held = pa.concat_tables(self._held, promote_options="permissive")
            self._write(self._written, held, self.rows - self._held_rows)
            self._held, self._held_rows = [], 0

    def _written(self, table: pa.Table, start: int) -> None:
        """Keep ``table``, whose first row is row ``start`` of the pass: in order, or its
        rows grouped by part (one take, then a slice per part)."""
        if self.failed is not None:
            return
        try:
            if self.order is None:
                self._kept(table, 0)
                return
            part = _parts(start, table.num_rows, self.order, self.parts)
            counts = np.bincount(part, minlength=self.parts)
            grouped = _permuted(table, np.argsort(part, kind="stable"))
            for i, begin, count in zip(range(self.parts), np.cumsum(counts) - counts, counts):
                if count:
                    self._kept(grouped.slice(int(begin), int(count)), i)
        except OSError as error:  # (no space left, say): the passes read the file again
            self.failed = error

    def _kept(self, table: pa.Table, part: int) -> None:
        for batch in table.to_batches():
            data = batch.serialize()
            self.file.write(data)
            self.index[part].append((self._end, data.size, batch.schema))
            self._end += data.size

    def finish(self, vocabularies: Mapping[str, pa.Array]) -> None:
        """The pass is over: each coded column's texts (its codes index them; others
        given are left)."""
        try:
            self._hand_on()
            self._write.finish()
            self.file.flush()
        except OSError as error:
            self.failed = error
        finally:
            self._write = None
        self.vocabularies = {name: vocabularies[name] for name in self.coded}
        if self.failed is not None:
            self.close()

    def batches(self, columns: Sequence[str], encoded: Collection[str] = (),
                progress: Reading | None = None) -> Iterator[pa.RecordBatch]:
        """The kept rows' ``columns``, in order (shuffled, see the module); the coded ones
        ``encoded`` as dictionaries, the others as text. ``progress`` hears the share of rows
        read."""
        read = 0
        for batch in self._kept_batches():
            arrays = []
            for name in columns:
                column = batch.column(name)
                texts = self.vocabularies.get(name)
                if texts is not None:
                    column = pa.DictionaryArray.from_arrays(column.cast(pa.int32()), texts,
                                                            safe=False)
                    if name not in encoded:
                        column = column.dictionary_decode()
                        if name in self.kinds:
                            column = column.cast(self.kinds[name])
                arrays.append(column)
            read += batch.num_rows
            if progress is not None:
                progress(read / max(self.rows, 1))
            yield pa.RecordBatch.from_arrays(arrays, names=list(columns))

    def _kept_batches(self) -> Iterator[pa.RecordBatch]:
        """The kept batches in the file's order, or part after part, each permuted."""
        if self.order is None:
            for offset, length, schema in self.index[0]:
                yield self._batch(offset, length, schema)
            return
        for part, pieces in enumerate(self.index):
            if not pieces:
                continue
            table = pa.concat_tables([pa.Table.from_batches([self._batch(*piece)])
                                      for piece in pieces], promote_options="permissive")
            order = np.random.default_rng([self.order, part]).permutation(table.num_rows)
            table = _permuted(table, order)  # (the part as read let go: one copy held)
            # (in batches of the first pass's size: as many rows as a thread works on)
            yield from table.to_batches(max_chunksize=self.batch_rows)

    def _batch(self, offset: int, length: int, schema: pa.Schema) -> pa.RecordBatch:
        return pa.ipc.read_record_batch(pa.py_buffer(self._read(offset, length)), schema)

    def _read(self, offset: int, length: int) -> bytes:
        if hasattr(os, "pread"):  # (no shared position: passes may read side by side)
            return os.pread(self.file.fileno(), length, offset)
        with self._lock:
            self.file.seek(offset)
            return self.file.read(length)

    def close(self) -> None:
        """Let the kept rows go (the file is removed)."""
        if self._write is not None:
            self._write.finish(raise_error=False)
            self._write = None
        self._closing()


def _permuted(table: pa.Table, order: np.ndarray) -> pa.Table:
    """``table.take(order)`` for a permutation ``order`` of its rows: in range by
    construction, so no column checks it again (a third of taking a part's codes)."""
    return pc.take(table, order, boundscheck=False)


def _parts(start: int, rows: int, seed: int, parts: int) -> np.ndarray:
    """The part of each of ``rows`` rows from row ``start`` on: splitmix64 of the seed and
    the row's place, mapped to 0 .. ``parts - 1`` (the same whatever the batches); in one
    or two bytes where the parts are few, which NumPy's stable sort orders by radix (a
    fifth of its time on 8-byte integers)."""
    z = (np.arange(start + 1, start + rows + 1, dtype=np.uint64) * _GOLDEN
         + np.uint64(seed % 2**64))
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z ^= z >> np.uint64(31)
    narrow = np.uint8 if parts <= 1 << 8 else np.uint16 if parts <= 1 << 16 else np.intp
    return ((z >> np.uint64(32)) * np.uint64(parts) >> np.uint64(32)).astype(narrow)
