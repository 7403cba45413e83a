"""A CSV file parsed once: the first pass keeps the rows it read in a temporary file, and
every later pass reads them there instead of parsing the file again.

The file holds Arrow record batches, one after another: the columns the first pass codes
(the quasi-identifiers, the sensitive columns) as their codes, in one or two bytes where
their texts are few, and the other columns as read. A later pass reads a coded column as a
dictionary (its codes and the texts of the first pass's vocabulary), as it reads a kept
column of an in-memory table, or as text decoded from them: the text as read, where no
text stands for the missing value (``[input] missing`` is empty, as by default; where it is
not, an empty text is coded as it, and the file is read again). The file is made beside the
release being written (a folder sized for the rows), else in the system's temporary folder
(``TMPDIR``), and unlinked at once where the system allows, so a killed run leaves
nothing; where it cannot be written (no space, say), the passes read the CSV file as
before.

Reading once is also reading one version: a file rewritten during a run is released as the
first pass read it, which the frequency table counted.

>>> import numpy as np, pyarrow as pa
>>> replay = Replay(["sex"])
>>> replay.add(pa.table({"sex": ["f", "m"], "dx": ["a", "b"]}), [np.array([0, 1], np.int8)])
>>> replay.finish({"sex": pa.array(["f", "m"])})
>>> [b.to_pydict() for b in replay.batches(["dx", "sex"])]
[{'dx': ['a', 'b'], 'sex': ['f', 'm']}]
>>> replay.close()
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
from collections.abc import Collection, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa

from blendin.parallel import InTurn
from blendin.progress import Reading

#: batches the first pass may hand on while earlier ones are being written
WRITE_BEHIND = 4


class Replay:
    """The rows of one pass over a file, kept for the next passes (see the module)."""

    def __init__(self, coded: Sequence[str], folder: str | os.PathLike | None = None
                 ) -> None:
        self.coded = list(coded)
        self.file = tempfile.TemporaryFile(prefix="blendin-replay-", suffix=".arrow",  # noqa: SIM115
                                           dir=folder)
        # closed by close(), or when this object goes (with the source that holds it)
        self._closing = weakref.finalize(self, self.file.close)
        self.index: list[tuple[int, int, pa.Schema]] = []  # offset, length, schema
        self.vocabularies: dict[str, pa.Array] = {}
        self.rows = 0
        self.failed: OSError | None = None
        self._end = 0
        self._lock = threading.Lock()
        self._write = InTurn(WRITE_BEHIND, name="blendin-replay")

    @property
    def usable(self) -> bool:
        """Whether every row of the pass was kept (nothing went wrong writing them)."""
        return self.failed is None and self._write is None and not self.file.closed

    def add(self, table: pa.Table | pa.RecordBatch, codes: Sequence[np.ndarray]) -> None:
        """Keep the rows of ``table`` (in order), its ``coded`` columns as ``codes``."""
        if self.failed is not None or not table.num_rows:
            return
        columns = {name: table.column(name) for name in table.column_names}
        for name, code in zip(self.coded, codes):
            columns[name] = pa.array(code)
        kept = pa.table(columns)
        self.rows += kept.num_rows
        self._write(self._written, kept)

    def _written(self, table: pa.Table) -> None:
        if self.failed is not None:
            return
        try:
            for batch in table.to_batches():
                data = batch.serialize()
                self.file.write(data)
                self.index.append((self._end, data.size, batch.schema))
                self._end += data.size
        except OSError as error:  # (no space left, say): the passes read the file again
            self.failed = error

    def finish(self, vocabularies: Mapping[str, pa.Array]) -> None:
        """The pass is over: each coded column's texts (its codes index them)."""
        try:
            self._write.finish()
            self.file.flush()
        except OSError as error:
            self.failed = error
        finally:
            self._write = None
        self.vocabularies = dict(vocabularies)
        if self.failed is not None:
            self.close()

    def batches(self, columns: Sequence[str], encoded: Collection[str] = (),
                progress: Reading | None = None) -> Iterator[pa.RecordBatch]:
        """The kept rows' ``columns``, in order; the coded ones ``encoded`` as
        dictionaries, the others as text. ``progress`` hears the share of rows read."""
        read = 0
        for offset, length, schema in self.index:
            batch = pa.ipc.read_record_batch(pa.py_buffer(self._read(offset, length)), schema)
            arrays = []
            for name in columns:
                column = batch.column(name)
                texts = self.vocabularies.get(name)
                if texts is not None:
                    column = pa.DictionaryArray.from_arrays(column.cast(pa.int32()), texts,
                                                            safe=False)
                    if name not in encoded:
                        column = column.dictionary_decode()
                arrays.append(column)
            read += batch.num_rows
            if progress is not None:
                progress(read / max(self.rows, 1))
            yield pa.RecordBatch.from_arrays(arrays, names=list(columns))

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
