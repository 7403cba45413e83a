"""Reading tables of any kind into Arrow, and giving results back in the kind given.

A :class:`Source` reads a CSV or Parquet file in chunks (so a file larger than memory can be
reduced to its frequency table) or wraps an in-memory pandas, polars or pyarrow table.
:func:`write_table` writes atomically: a temporary file in the target's folder, then a rename,
so a failed write leaves nothing half-written.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import os
import re
import secrets
import shutil
import weakref
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

from blendin.errors import BlendinError, preview
from blendin.outputs import deferred, process_alive, refuse_when_stopped
from blendin.parallel import ordered, read_ahead, workers
from blendin.progress import Reading

#: bytes of CSV parsed per chunk: large enough to be fast, small enough to stream
BLOCK_SIZE = 64 << 20
#: bytes of a file parsed ahead of the block in use (whole blocks, at least one)
READ_AHEAD_BYTES = 8 << 20
#: rows per batch handed out from an in-memory table
MEMORY_CHUNK = 1 << 20
#: the most columns a CSV header may name, and the longest it may be (in characters, 1 MiB
#: of ASCII): more is not a table to anonymize but a wrong delimiter or not a CSV file,
#: refused from the header alone, before any row is parsed (every row of a CSV file is split
#: into all its columns, even where a pass reads a few) and without reading further
MAX_COLUMNS = 20_000
MAX_HEADER_CHARS = 1 << 20
#: the codes a pass kept (:meth:`Source.keep_codes`) per in-memory pyarrow Table, by the
#: column and the text read for a missing value: a Table is immutable, so they stay true
#: while it lives, and a later call on the same Table hashes no text again (as ARX's
#: ``Data`` keeps its dictionary-encoded handle); they go with the Table
_TABLE_CODES: dict[int, dict[tuple[str, str], pa.ChunkedArray]] = {}
DELIMITERS = ",;\t|"
CSV_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz", ".txt.gz", ".csv.bz2", ".csv.zst")
PARQUET_SUFFIXES = (".parquet", ".pq")
#: bytes per block, at least, where a CSV file is read on block after block
STREAM_BLOCK = 4 << 20
#: bytes per block, at most, that a CSV file is read again with where one record is longer
#: than a block (Arrow: "straddling object straddles two block boundaries")
MAX_CSV_BLOCK = 1 << 30
#: blocks a window of CSV may grow to while no line break is found that ends a record
WINDOW_GROWTH = 8
#: the value of every field of the record put after a window of CSV to see that the window
#: ended between records (control characters around a name: not a value a table holds)
WINDOW_MARK = "\x01\x02blendin-window-end\x03\x01"
#: Arrow's codec for a compressed CSV file's last suffix
COMPRESSION = {"gz": "gzip", "bz2": "bz2", "zst": "zstd"}
WRITE_SUFFIXES = (".csv", ".parquet", ".xlsx")
#: Excel's row limit, header included
XLSX_MAX_ROWS = 1_048_576


def to_arrow(data) -> pa.Table:
    """A pyarrow Table from a pandas or polars DataFrame, a pyarrow Table, or a query's rows
    (a polars LazyFrame, a DuckDB relation: run once, here).

    >>> import pandas as pd
    >>> to_arrow(pd.DataFrame({"a": [1, 2]})).num_rows
    2
    """
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, Source):
        return data.read_all()
    module = type(data).__module__.split(".")[0]
    if module == "pyspark" and hasattr(data, "toArrow"):
        return data.toArrow()  # a Spark DataFrame, collected to this process
    if module == "pandas":
        _check_unique([str(c) for c in data.columns])
        try:
            return pa.Table.from_pandas(data, preserve_index=False)
        except (pa.ArrowTypeError, pa.ArrowInvalid) as error:
            raise _unconvertible(data, error) from None
    if module == "polars":
        if type(data).__name__ == "LazyFrame":
            data = data.collect()  # a query: run it once, here
        return data.to_arrow()
    if module in ("duckdb", "_duckdb") and type(data).__name__ == "DuckDBPyRelation":
        return data.to_arrow_table()
    raise BlendinError(
        f"cannot read a {type(data).__name__} as a table",
        fix="pass a pandas or polars DataFrame, a pyarrow Table, a DuckDB relation, or a "
            "file path",
    )


def _codes_of(table: pa.Table) -> dict[tuple[str, str], pa.ChunkedArray]:
    """The codes kept for ``table`` (see ``_TABLE_CODES``), dropped when it is."""
    key = id(table)
    if key not in _TABLE_CODES:
        _TABLE_CODES[key] = {}
        weakref.finalize(table, _TABLE_CODES.pop, key, None)
    return _TABLE_CODES[key]


def from_arrow(table: pa.Table, like):
    """``table`` as the same kind of object as ``like`` (pandas, polars or pyarrow).

    Anything else (a file path, a :class:`Source`) gives a pyarrow Table.

    >>> import pandas as pd
    >>> type(from_arrow(pa.table({"a": [1]}), pd.DataFrame())).__name__
    'DataFrame'
    """
    module = type(like).__module__.split(".")[0]
    if module == "pandas":
        return _as_pandas(table, like)
    if module == "polars":
        return _as_polars(table, like)
    return table


def _as_pandas(table: pa.Table, like):
    """``table`` as a pandas DataFrame, each column the input holds with the same Arrow type
    (kept as it was) given back its pandas dtype: Arrow alone makes a nullable ``Int64``
    column with a gap ``float64`` (9007199254740993 read back as ...992), a ``boolean``
    one ``object``, a ``string`` one ``str`` with NaN for NA. Spark, which holds neither a
    time zone per column nor categories, gives a zoned time in its session's zone (the
    instant is put back in the input's zone) and a category column as text (the
    categories are put back where every value is one of them).

    >>> import pandas as pd
    >>> like = pd.DataFrame({"n": pd.array([2**53 + 1, None], dtype="Int64")})
    >>> _as_pandas(pa.Table.from_pandas(like), like)["n"].tolist()
    [9007199254740993, <NA>]
    """
    import pandas as pd

    frame = table.to_pandas()
    given = {str(c): c for c in like.columns}
    for name in frame.columns:
        if name not in given:
            continue
        want = like[given[name]].dtype
        column = table.column(name)
        if frame[name].dtype == want:
            continue
        if isinstance(want, pd.DatetimeTZDtype) and isinstance(frame[name].dtype,
                                                               pd.DatetimeTZDtype):
            frame[name] = frame[name].dt.tz_convert(want.tz)
            continue
        if isinstance(want, pd.CategoricalDtype):
            if (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)) \
                    and frame[name].dropna().isin(want.categories).all():
                frame[name] = frame[name].astype(want)
            continue
        if (not isinstance(want, pd.api.extensions.ExtensionDtype)
                or not hasattr(want, "__from_arrow__")):
            continue
        if column.type != pa.array(like[given[name]].iloc[:0]).type:
            continue  # generalized (labels): text now
        frame[name] = pd.Series(want.__from_arrow__(column), index=frame.index, name=name)
    return frame


def _as_polars(table: pa.Table, like):
    """``table`` as a polars DataFrame, an ``Enum`` column of the input that still holds
    only its categories an ``Enum`` again (Arrow makes it ``Categorical``)."""
    import polars as pl

    frame = pl.from_arrow(table)
    if not isinstance(frame, pl.DataFrame):
        return frame
    for name, want in like.collect_schema().items():  # (a LazyFrame's: not run again)
        if (isinstance(want, pl.Enum) and name in frame.columns
                and frame.schema[name] != want):
            with contextlib.suppress(pl.exceptions.PolarsError):  # generalized: labels
                frame = frame.with_columns(pl.col(name).cast(want, strict=True))
    return frame


def _unconvertible(frame, error: Exception) -> BlendinError:
    """The error for a pandas column Arrow cannot hold (values of several kinds in one
    object column), naming the column and the kinds it mixes."""
    for column in frame.columns:
        try:
            pa.array(frame[column], from_pandas=True)
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            kinds = sorted({type(v).__name__ for v in frame[column].dropna()})
            return BlendinError(
                f"column {str(column)!r} holds values of several kinds ({', '.join(kinds)}) "
                "that no one column type holds",
                fix=f"make it one kind first, e.g. df[{str(column)!r}] = "
                f"df[{str(column)!r}].astype(\"string\") for text (missing values stay "
                "missing), or pd.to_numeric(...) for numbers")
    return BlendinError(f"cannot read the DataFrame as a table: {error}",
                        fix="give each column values of one kind")


def _check_unique(names: Sequence[str]) -> None:
    seen, dupes = set(), []
    for name in names:
        if name in seen and name not in dupes:
            dupes.append(name)
        seen.add(name)
    if dupes:
        raise BlendinError(
            f"the table has duplicate column names: {preview(dupes)}",
            fix="give every column a distinct name in the header",
        )


def file_kind(path: str | os.PathLike) -> str:
    """``"parquet"`` or ``"csv"``, as the name of ``path`` says.

    >>> file_kind("release.parquet"), file_kind("release.csv.gz")
    ('parquet', 'csv')
    """
    return "parquet" if _suffix(Path(path)) in PARQUET_SUFFIXES else "csv"


def _suffix(path: Path) -> str:
    """The extension, compression included: ``data.csv.gz`` -> ``.csv.gz``."""
    suffixes = [s.lower() for s in path.suffixes]
    if len(suffixes) >= 2 and suffixes[-1] in (".gz", ".bz2", ".zst"):
        return "".join(suffixes[-2:])
    return suffixes[-1] if suffixes else ""


class Source:
    """A table to read: a CSV or Parquet file, or an in-memory pandas/polars/pyarrow table.

    CSV files are read in chunks of ``block_size`` bytes with every column as text, so values
    keep their exact spelling (``007`` stays ``007``) and a file larger than memory works.
    The delimiter is sniffed among ``, ; tab |`` unless given.

    >>> import pandas as pd
    >>> src = Source(pd.DataFrame({"age": [30, 41], "sex": ["f", "m"]}))
    >>> src.columns, src.read_all().num_rows
    (['age', 'sex'], 2)
    """

    def __init__(
        self,
        data,
        *,
        delimiter: str | None = None,
        encoding: str | None = "utf-8",
        block_size: int = BLOCK_SIZE,
        kind: str | None = None,
        empty_ok: bool = False,
    ) -> None:
        self.delimiter = delimiter_option(delimiter)
        self.empty_ok = empty_ok  # a table of no rows is one (a related table may be)
        self.encoding = encoding or "utf-8"
        self.block_size = block_size
        self.path: Path | None = None
        self._table: pa.Table | None = None
        self._codes: dict[str, pa.ChunkedArray] = {}
        self._shared: dict[tuple[str, str], pa.ChunkedArray] = {}
        #: a CSV or Parquet file read more than once keeps its first pass's rows (``once``,
        #: set by anonymize); the passes after it read them there (``replay``, the
        #: embedded engine's :class:`~blendin.engines.replay.Replay`)
        self.once = False
        self.scratch: str | os.PathLike | None = None  # the folder they are kept in
        #: the seed of the release's random order, where they are kept in it
        self.order: int | None = None
        self.replay = None
        if isinstance(data, str | os.PathLike):
            self.path = Path(data)
            self.kind = kind or self._file_kind()  # given: a file under a temporary name
            self.columns = self._read_header()
        else:
            self.kind = "memory"
            self._table = to_arrow(data)
            #: codes kept for the caller's own Table outlive this source (a converted
            #: DataFrame is new at every call: its codes go with this source)
            if self._table is data:
                self._shared = _codes_of(data)
            self.columns = list(self._table.column_names)
            _check_unique(self.columns)
            if self._table.num_rows == 0 and not empty_ok:
                raise _no_rows("the table")

    @property
    def name(self) -> str:
        return str(self.path) if self.path is not None else "the table"

    @property
    def codec(self) -> str | None:
        """The compression a file is read through (by its suffix), or None."""
        return None if self.path is None else COMPRESSION.get(
            _suffix(self.path).rpartition(".")[2])

    # -- reading ---------------------------------------------------------------------------

    def batches(self, columns: Sequence[str] | None = None, *,
                encoded: Collection[str] = (),
                progress: Reading | None = None,
                in_order: bool = False) -> Iterator[pa.RecordBatch]:
        """The rows chunk by chunk (only ``columns`` when given); can be iterated again.

        The ``encoded`` columns come dictionary-encoded (each text once per chunk, an index
        per row), cheaper to group and recode than a text per row: a Parquet file's text
        columns as it stores them; an in-memory table's columns whose codes were kept
        (:meth:`keep_codes`). A file calls ``progress`` with the share of it read so far
        (0 to 1: bytes of a CSV file, rows of a Parquet one) as the chunks come. The rows
        a first pass kept come in the release's random order where it kept them so;
        ``in_order`` reads the file's own order then (to name a row by its place).
        """
        wanted = list(self.columns if columns is None else columns)
        known = set(self.columns)  # (a list would make this quadratic in wide tables)
        missing = [c for c in wanted if c not in known]
        if missing:
            raise BlendinError(
                f"{self.name} has no column(s) {preview(missing)}",
                fix=f"use one of its columns: {preview(self.columns, 10)}",
            )
        if columns is not None:
            self.check_flat(wanted, "a quasi-identifier or sensitive attribute")
        if self.kind == "memory":
            table = self._table.select(wanted)
            for name in set(encoded) & set(wanted) & set(self._codes):
                table = table.set_column(table.column_names.index(name), name,
                                         self._codes[name])
            # slices of ~1M rows (zero-copy): group-bys on them stay cache-friendly
            yield from table.to_batches(max_chunksize=MEMORY_CHUNK)
            return
        if (self.replay is not None and self.replay.usable
                and not (in_order and self.replay.order is not None)):
            reader = self.replay.batches(wanted, encoded, progress)
        else:
            reader = (self._csv_batches(wanted, progress) if self.kind == "csv" else
                      self._parquet_batches(wanted, encoded, progress))
        rows = 0
        # parsing runs in Arrow without the GIL: a thread reads the next blocks meanwhile
        for batch in read_ahead(reader, max(1, READ_AHEAD_BYTES // self.block_size)):
            rows += batch.num_rows
            if batch.num_rows:
                yield batch
        if rows == 0 and not self.empty_ok:
            raise _no_rows(self.name)

    def keep_codes(self, name: str, codes: pa.ChunkedArray, missing: str = "") -> None:
        """Read the column ``name`` of an in-memory table, when asked for ``encoded``, as
        ``codes``: the same values read as text (:func:`blendin.frequency.as_text`, with
        ``missing``), dictionary-encoded. A first pass that has hashed every text keeps its
        codes (4 bytes a row, beside the rows memory holds already), so that the next reads
        hash none; on a pyarrow Table they serve later sources of it too
        (:meth:`recall_codes`)."""
        if self.kind == "memory":
            self._codes[name] = codes
            kind = self._table.schema.field(name).type
            # (numbers, or a dictionary's indices, may be a NumPy array's memory that its
            # owner changes after the call: only texts, Arrow's own, serve later calls)
            if pa.types.is_string(kind) or pa.types.is_large_string(kind):
                self._shared[name, missing] = codes

    def recall_codes(self, names: Sequence[str], missing: str = "") -> list[str]:
        """Which of the columns ``names`` an earlier pass over this source, or over another
        source of the same pyarrow Table, kept codes of with ``missing``; from now on they
        are read as those codes, and the others as they are (not as codes kept with
        another missing text)."""
        recalled = [name for name in names if (name, missing) in self._shared]
        for name in names:
            self._codes.pop(name, None)
        self._codes.update({name: self._shared[name, missing] for name in recalled})
        return recalled

    def known_texts(self, name: str) -> pa.Array | None:
        """The texts of the column ``name`` (read as text) that a first pass has seen, when
        it kept their codes (:meth:`keep_codes`), else None."""
        codes = self._codes.get(name)
        return codes.chunk(0).dictionary if codes is not None and codes.num_chunks else None

    def check_flat(self, columns: Sequence[str], role: str) -> None:
        """Refuse a column of lists, maps or structs (nested values) in ``role``."""
        columns = set(columns)
        nested = [(c, t) for c, t in self.types().items() if c in columns and _is_nested(t)]
        if nested:
            name, kind = nested[0]
            raise BlendinError(
                f"column {name!r} holds nested values ({kind}), which cannot be {role}",
                fix=f"flatten {name!r} into plain values first, or leave it out of the spec")

    def types(self) -> dict[str, pa.DataType]:
        """The type of each column (text for a CSV file, as it is read)."""
        if self.kind == "memory":
            return dict(zip(self._table.column_names, self._table.schema.types))
        if self.kind == "parquet":
            import pyarrow.parquet as pq

            schema = pq.ParquetFile(self.path).schema_arrow
            return dict(zip(schema.names, schema.types))
        return {c: pa.string() for c in self.columns}

    def read_all(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The whole table (only ``columns`` when given) in memory."""
        if self.kind == "memory" and columns is None:
            return self._table
        names = list(self.columns if columns is None else columns)
        batches = list(self.batches(names))
        return pa.Table.from_batches(batches) if batches else pa.table(
            {c: pa.array([], pa.string()) for c in names})

    # -- files ---------------------------------------------------------------------------

    def _file_kind(self) -> str:
        path = self.path
        if not path.exists():
            # a web address: Path made its "//" one "/"
            if re.match(r"^[a-z][a-z0-9+.-]*:/[^/]", str(path), re.IGNORECASE):
                raise BlendinError(f"{re.sub(':/', '://', str(path), count=1)!r} is not a "
                                   "file blendin can read",
                                   fix="download it first, or give a path on this machine")
            near = _near_files(path)
            raise BlendinError(
                f"file {str(path)!r} does not exist",
                fix=f"did you mean {near!r}?" if near else "check the path",
            )
        if path.is_dir():
            raise BlendinError(f"{str(path)!r} is a folder, not a file",
                               fix="give the path of a CSV or Parquet file")
        suffix = _suffix(path)
        if suffix in PARQUET_SUFFIXES:
            return "parquet"
        if suffix in CSV_SUFFIXES or not suffix:
            return "csv"
        raise BlendinError(
            f"cannot read {str(path)!r}: unknown file type {suffix!r}",
            fix="give a .csv (.csv.gz) or .parquet file",
        )

    def _read_header(self) -> list[str]:
        if self.kind == "parquet":
            import pyarrow.parquet as pq

            try:
                names = pq.ParquetFile(self.path).schema_arrow.names
            except (pa.ArrowException, OSError) as error:
                raise BlendinError(f"cannot read {self.name} as Parquet: {error}",
                                   fix="check that the file is a Parquet file") from None
            _check_unique(names)
            return names
        return self._read_csv_header()

    def _read_csv_header(self) -> list[str]:
        # a byte order mark before the first name, quoted or not, is no part of it
        text = self._head_text().removeprefix("\ufeff")
        if not text.strip():
            raise BlendinError(f"{self.name} is empty", fix="give a file with a header and rows")
        header = _first_record(text)
        if self.delimiter is None:
            rest = text[len(header):].splitlines()[1:50]
            if len(rest) > 1 and not text.endswith("\n"):
                rest = rest[:-1]  # the last line may be cut off
            self.delimiter = _sniff("\n".join([header.replace("\n", " "), *rest]))
        try:
            names = next(csv.reader(io.StringIO(header, newline=""), delimiter=self.delimiter))
        except csv.Error as error:  # a column name over csv's field limit (128 KiB)
            raise BlendinError(f"cannot read the header of {self.name}: {error}",
                               fix=_header_fix(self.delimiter)) from None
        if len(names) > MAX_COLUMNS:
            raise BlendinError(
                f"the header of {self.name} gives {len(names)} columns with delimiter "
                f"{self.delimiter!r}; blendin reads at most {MAX_COLUMNS}",
                fix=_header_fix(self.delimiter))
        if len(names) == 1:
            other = next((d for d in ";\t|," if d != self.delimiter and d in header), None)
            if other is not None:
                shown = {"\t": "'\\t'"}.get(other, repr(other))
                raise BlendinError(
                    f"{self.name}: the header gives one column with delimiter "
                    f"{self.delimiter!r}, but it contains {shown}",
                    fix=f"pass --delimiter {shown} (or set [input] delimiter)",
                )
        _check_unique(names)
        return names

    def _head_text(self, chunk: int = 1 << 16) -> str:
        """The start of the file as text: at least the whole header record (up to
        ``MAX_HEADER_CHARS`` long: a longer one is an error, read no further) and, when the
        file has them, some lines after it (to sniff the delimiter)."""
        data = b""
        with pa.input_stream(str(self.path), compression="detect") as stream:
            while True:
                try:
                    more = stream.read(chunk)
                except OSError as error:  # (a file named .gz, say, that is not compressed)
                    if self.codec is None:
                        raise
                    raise BlendinError(
                        f"{self.name} cannot be read as {self.codec} compressed text: {error}",
                        fix=f"check the file, or name it without .{self.path.suffix[1:]} "
                            "if it is not compressed") from None
                data += more
                text = self._decode_head(data)
                header = _first_record(text)
                if len(header) > MAX_HEADER_CHARS:
                    raise BlendinError(
                        f"the header of {self.name} (its first line) is longer than "
                        f"{MAX_HEADER_CHARS >> 20} MiB", fix=_header_fix(self.delimiter))
                if not more or len(text) - len(header) > chunk // 2:
                    return text
                chunk = min(chunk * 2, 64 << 20)

    def _decode_head(self, head: bytes) -> str:
        try:
            decoder = codecs.getincrementaldecoder(self.encoding)()
        except LookupError:
            raise BlendinError(f"unknown text encoding {self.encoding!r}",
                               fix="use an encoding such as utf-8 or latin-1") from None
        nul = head.find(b"\0")
        if nul >= 0 and _ascii_framed(self.encoding):  # (no text in those holds a NUL byte)
            raise BlendinError(f"{self.name} is not a text file: it holds NUL bytes, the "
                               f"first at byte {nul}",
                               fix="give a CSV or Parquet file (a file saved as UTF-16 "
                               "needs --encoding utf-16)")
        try:
            return decoder.decode(head, final=False)
        except UnicodeDecodeError as error:
            raise self._encoding_error(error.start) from None
        except UnicodeError:  # (UTF-16 without its byte order mark)
            raise self._encoding_error(0) from None

    def _encoding_error(self, offset: int | None = None) -> BlendinError:
        if offset is None:
            offset = _first_bad_byte(self.path, self.encoding)
        where = ""
        if offset is not None:
            where = f" at byte {offset} (line {_line_of(self.path, offset)})"
        return BlendinError(
            f"{self.name} is not valid {self.encoding} text{where}",
            fix="pass its encoding, e.g. --encoding latin-1 (or set [input] encoding)",
        )

    def _csv_batches(self, columns: list[str], progress: Reading | None = None
                     ) -> Iterator[pa.RecordBatch]:
        """The rows of a CSV file: its blocks parsed on every core where there are several
        and the file can be cut into them (uncompressed, in an encoding whose line breaks
        and quotes are ASCII bytes), else one block after the other."""
        if (workers() > 1 and columns and self.codec is None and self.delimiter.isascii()
                and _ascii_framed(self.encoding)):
            return self._csv_windows(columns, progress)
        return self._csv_stream(columns, progress)

    def _csv_options(self, columns: list[str], *, header: bool, block_size: int | None = None,
                     threads: bool = True) -> dict:
        import pyarrow.csv as pcsv

        return dict(
            read_options=pcsv.ReadOptions(
                column_names=self.columns, skip_rows_after_names=int(header),
                block_size=block_size or self.block_size, encoding=self.encoding,
                use_threads=threads),
            # quoted fields may hold line breaks, even where a block of the file ends
            parse_options=pcsv.ParseOptions(delimiter=self.delimiter, newlines_in_values=True),
            convert_options=pcsv.ConvertOptions(
                column_types={c: pa.string() for c in columns}, include_columns=columns,
                strings_can_be_null=False, quoted_strings_can_be_null=False))

    def _csv_stream(self, columns: list[str], progress: Reading | None = None,
                    start: int = 0, block_size: int | None = None, rows_before: int = 0
                    ) -> Iterator[pa.RecordBatch]:
        """The rows from byte ``start`` on (the start of a record, after ``rows_before``
        rows), block after block (of ``block_size`` bytes, by default the source's).

        A record longer than a block (a long text with line breaks) is read again with
        blocks four times as large, from ``start``, the rows already handed out skipped."""
        block = block_size or self.block_size
        handed = 0
        try:
            while True:
                skip = handed
                try:
                    for batch in self._csv_blocks(columns, progress, start, block):
                        if skip >= batch.num_rows:
                            skip -= batch.num_rows
                            continue
                        if skip:
                            batch, skip = batch.slice(skip), 0
                        handed += batch.num_rows
                        yield batch
                    return
                except pa.ArrowInvalid as error:
                    if "straddl" not in str(error) or block >= MAX_CSV_BLOCK:
                        raise
                    block = min(4 * block, MAX_CSV_BLOCK)
        except pa.ArrowInvalid as error:
            if "Row #" not in str(error):
                # parsed on several threads, Arrow does not number the row: the file is
                # read again on one, only to name it
                try:
                    for _ in self._csv_blocks(columns, None, start, block, threads=False):
                        pass
                except pa.ArrowInvalid as numbered:
                    error = numbered
            raise self._csv_error(error, rows_before) from None

    def _csv_blocks(self, columns: list[str], progress: Reading | None, start: int,
                    block_size: int | None, threads: bool = True
                    ) -> Iterator[pa.RecordBatch]:
        """:meth:`_csv_stream`'s rows, Arrow's parse errors as they come."""
        import pyarrow.csv as pcsv

        # the file opened here (decompressed on the way), so that its position tells the
        # share read
        with pa.OSFile(str(self.path)) as raw:
            codec = self.codec
            stream = raw if codec is None else pa.CompressedInputStream(raw, codec)
            if start:
                raw.seek(start)
            size = max(raw.size(), 1)
            reader = pcsv.open_csv(stream, **self._csv_options(
                columns, header=not start, block_size=block_size, threads=threads))
            for batch in reader:
                if progress is not None:
                    progress(min(raw.tell() / size, 1.0))
                yield batch

    def _csv_windows(self, columns: list[str], progress: Reading | None = None
                     ) -> Iterator[pa.RecordBatch]:
        """The rows, the file cut at line breaks into windows of about ``block_size`` bytes
        that are parsed on every core and handed out in order.

        A line break inside a quoted value cannot be told from the end of a record by
        looking: a window is cut where the quotes before the break are even, and is parsed
        with a marker record after it, which comes back as a record of its own only if the
        window ended between records. Where it does not (or a window fails to parse), the
        rest of the file is read one block after the other from that window's start, as
        the file would be without windows: the same rows, the same errors.
        """
        import pyarrow.csv as pcsv

        size = self.path.stat().st_size
        marker = (self.delimiter.join([WINDOW_MARK] * len(self.columns)) + "\n").encode()

        def parse(window: tuple[int, int, bytearray | None]) -> tuple[int, int,
                                                                     pa.Table | None]:
            start, end, held = window
            if held is None:
                return start, end, None
            length = end - start
            tail = marker if held[length - 1] == ord("\n") else b"\n" + marker
            held[length:length + len(tail)] = tail  # (in the room left for it: no copy)
            data = pa.py_buffer(memoryview(held)[:length + len(tail)])
            try:
                table = pcsv.read_csv(pa.BufferReader(data), **self._csv_options(
                    columns, header=start == 0, block_size=len(data), threads=False))
            except pa.ArrowInvalid:
                return start, end, None
            last = table.slice(table.num_rows - 1)
            if not table.num_rows or any(last.column(name)[0].as_py() != WINDOW_MARK
                                         for name in columns):
                return start, end, None
            return start, end, table.slice(0, table.num_rows - 1)

        rows = 0
        with open(self.path, "rb") as file:
            windows = _windows(file.fileno(), size, self.block_size, room=len(marker) + 1)
            for start, end, table in ordered(parse, windows):
                if table is None:  # read on from this window's start, block after block
                    # (Arrow's block reader can misread a quoted line break that a block
                    # boundary cuts: blocks of a few MiB at least make that rare)
                    yield from self._csv_stream(columns, progress, start,
                                                max(self.block_size, STREAM_BLOCK), rows)
                    return
                if progress is not None:
                    progress(min(end / max(size, 1), 1.0))
                rows += table.num_rows
                yield from table.to_batches()

    def _csv_error(self, error: Exception, rows_before: int = 0) -> BlendinError:
        message = str(error)
        if rows_before:  # Arrow numbers the rows from where it began reading: the header
            message = re.sub(r"Row #(\d+)", lambda m: f"Row #{int(m[1]) + rows_before + 1}",
                             message)
        if "UTF8" in message or "UTF-8" in message or "decode" in message.lower():
            return self._encoding_error()
        if "Empty CSV file" in message:
            return _no_rows(self.name)
        first = message.splitlines()[0]
        return BlendinError(
            f"cannot parse {self.name}: {first}",
            fix=f"check the delimiter ({self.delimiter!r} was used; pass --delimiter) and "
            "that every row has one value per column",
        )

    def _parquet_batches(self, columns: list[str], encoded: Collection[str],
                         progress: Reading | None = None
                         ) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq

        rows = max(1, self.block_size // 64)
        # (a large text column would come back as a dictionary of plain texts)
        texts = [name for name, kind in self.types().items()
                 if name in encoded and name in columns and pa.types.is_string(kind)]
        file = pq.ParquetFile(self.path, read_dictionary=texts)
        total, done = max(file.metadata.num_rows, 1), 0
        for batch in file.iter_batches(batch_size=rows, columns=columns):
            done += batch.num_rows
            if progress is not None:
                progress(done / total)
            yield batch


def _windows(fd: int, size: int, block: int, room: int = 0
             ) -> Iterator[tuple[int, int, bytearray | None]]:
    """The bytes of a file (open as ``fd``) in windows ``(start, end, held)`` of about
    ``block`` bytes, each ending with a line break that an even number of quotes precedes:
    the window's bytes are the first ``end - start`` of ``held``, read into it in place,
    with ``room`` bytes to spare after them (for a marker: no copy of the window). Where no
    such line break is found in ``WINDOW_GROWTH`` blocks, the last window's ``held`` is
    None: the rest is to be read block after block."""
    start = 0
    while start < size:
        length = min(block, size - start)
        while True:  # (read on, twice as far, where no record ends: rare, read again whole)
            held = _read_at(fd, start, length, room)
            cut = len(held) - room if start + length >= size else _record_end(held, length)
            if cut is not None or length >= WINDOW_GROWTH * block:
                break
            length = min(2 * length, size - start)
        if cut is None:
            yield start, size, None
            return
        if not cut:
            return
        yield start, start + cut, held
        start += cut


def _read_at(fd: int, offset: int, length: int, room: int) -> bytearray:
    """Up to ``length`` bytes of the file from ``offset`` on (fewer at its end), and
    ``room`` bytes after them."""
    held = bytearray(length + room)
    if hasattr(os, "preadv"):  # read straight into place
        got = 0
        while got < length:
            n = os.preadv(fd, [memoryview(held)[got:length]], offset + got)
            if not n:
                break
            got += n
    else:
        data = os.pread(fd, length, offset)
        got = len(data)
        held[:got] = data
    if got < length:
        del held[got:length]
    return held


def _record_end(data: bytes | bytearray, end: int | None = None, quote: bytes = b'"'
                ) -> int | None:
    """Just past the last line break of ``data`` (up to ``end``) that an even number of
    quotes precedes (outside a quoted value, unless quotes also stand within unquoted
    values), or None."""
    cut = data.rfind(b"\n", 0, len(data) if end is None else end)
    if data.find(quote, 0, cut) < 0:  # (finding a byte is far cheaper than counting them)
        return cut + 1 if cut >= 0 else None
    quotes = data.count(quote, 0, cut)
    while cut >= 0 and quotes % 2:
        before = data.rfind(b"\n", 0, cut)
        quotes -= data.count(quote, max(before, 0), cut)
        cut = before
    return cut + 1 if cut >= 0 else None


def _ascii_framed(encoding: str) -> bool:
    """Whether line breaks and quotes are the ASCII bytes in ``encoding`` and no other
    character holds those bytes (UTF-8, Latin-1 and the other 8-bit codes; not UTF-16)."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return False
    return name in ("utf-8", "utf-8-sig", "ascii") or name.startswith(
        ("latin", "iso8859", "cp125", "windows-125", "mac-"))


def source_with_columns(path: str | os.PathLike, columns: Collection[str], *,
                        delimiter: str | None = None, expected: str | None = None,
                        encoding: str | None = None, block_size: int = BLOCK_SIZE) -> Source:
    """The file ``path`` as a :class:`Source` that has the ``columns`` (a spec's), where a
    delimiter finds them.

    ``delimiter`` (typed: ``--delimiter``) is used as it is. Otherwise the file is read
    with ``expected`` (a spec's ``[input] delimiter``), unless its header then lacks some
    of ``columns`` while the delimiter sniffed finds them all: a release written with
    commas is read with commas under a spec that says ``;``. Nothing is misread: when
    neither finds them, the reading with ``expected`` stands (or, where it splits the header
    into one column, the sniffed one), and the columns it lacks are the caller's error.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "release.csv"
    >>> _ = path.write_text("age,zip\\n20-29,021**\\n")
    >>> source_with_columns(path, ["age", "zip"], expected=";").delimiter
    ','
    """
    if delimiter is not None or expected is None:
        return Source(path, delimiter=delimiter or expected, encoding=encoding,
                      block_size=block_size)
    try:
        first: Source | None = Source(path, delimiter=expected, encoding=encoding,
                                      block_size=block_size)
    except BlendinError as error:  # e.g. one column, the header holding another delimiter
        first, refused = None, error
    if first is not None and (first.kind != "csv" or set(columns) <= set(first.columns)):
        return first
    try:
        sniffed = Source(path, encoding=encoding, block_size=block_size)
    except BlendinError:
        sniffed = None
    if sniffed is not None and (first is None or set(columns) <= set(sniffed.columns)):
        return sniffed
    if first is None:
        raise refused
    return first


def _header_fix(delimiter: str | None) -> str:
    """What to do about a CSV header too wide or too long, read with ``delimiter`` (None:
    not known yet).

    >>> _header_fix(";")[:60]
    "check that the file is a CSV file and that ';' is its delimi"
    """
    used = "its delimiter is right" if delimiter is None else f"{delimiter!r} is its delimiter"
    return (f"check that the file is a CSV file and that {used} (pass --delimiter, or set "
            "[input] delimiter); a wider table must be cut to the columns the release needs "
            f"(at most {MAX_COLUMNS}) first")


def _first_record(text: str) -> str:
    r"""The first CSV record of ``text`` (up to its line end, which a quoted field may hold);
    all of ``text`` when it does not end.

    >>> _first_record('a,"b\nc",d\n1,2,3\n')
    'a,"b\nc",d'
    """
    at, quotes = 0, 0
    while True:
        end = text.find("\n", at)
        if end < 0:
            return text.rstrip("\r")
        quotes += text.count('"', at, end)
        if quotes % 2 == 0:
            return text[:end].rstrip("\r")
        at = end + 1


def _is_nested(kind: pa.DataType) -> bool:
    import pyarrow.types as pt

    return pt.is_nested(kind) or pt.is_map(kind)


def _no_rows(name: str) -> BlendinError:
    return BlendinError(f"{name} has no rows", fix="give a table with a header and at least "
                        "one row")


def delimiter_option(delimiter: str | None, flag: str = "--delimiter") -> str | None:
    r"""A delimiter as given on a command line (``flag``): one character, or a spelling of
    tab (``\t``, ``tab``).

    >>> delimiter_option("\\t") == chr(9), delimiter_option(None)
    (True, None)
    """
    if delimiter is None or delimiter == "":
        return None
    delimiter = {"\\t": "\t", "tab": "\t", "TAB": "\t"}.get(delimiter, delimiter)
    if len(delimiter) != 1:
        raise BlendinError(f"{flag} must be one character, got {delimiter!r}",
                           fix=f"pass e.g. {flag} ';' or {flag} '\\t' "
                           f"({flag[2:].replace('-', '_')}=';' in Python)")
    return delimiter


def _sniff(sample: str) -> str:
    """The delimiter of a CSV sample, among ``, ; tab |``; comma when nothing tells."""
    try:
        return csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except csv.Error:
        header = sample.splitlines()[0] if sample else ""
        counts = {d: header.count(d) for d in DELIMITERS}
        best = max(counts, key=counts.get)
        return best if counts[best] else ","


def _first_bad_byte(path: Path, encoding: str, chunk: int = 1 << 20) -> int | None:
    """Byte offset of the first byte that does not decode (None if the text decodes)."""
    decoder = codecs.getincrementaldecoder(encoding)()
    offset = 0
    with pa.input_stream(str(path), compression="detect") as stream:
        while True:
            data = stream.read(chunk)
            try:
                decoder.decode(data, final=not data)
            except UnicodeDecodeError as error:
                return offset + error.start
            if not data:
                return None
            offset += len(data)


def _line_of(path: Path, offset: int) -> int:
    """1-based line number of byte ``offset``."""
    lines, done = 1, 0
    with pa.input_stream(str(path), compression="detect") as stream:
        while done < offset:
            data = stream.read(min(1 << 20, offset - done))
            if not data:
                break
            lines += data.count(b"\n")
            done += len(data)
    return lines


def _near_files(path: Path) -> str | None:
    import difflib

    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        return None
    names = [p.name for p in folder.iterdir()]
    match = difflib.get_close_matches(path.name, names, n=1)
    return str(folder / match[0]) if match else None


# -- writing -------------------------------------------------------------------------------


def write_table(
    table: pa.Table,
    path: str | os.PathLike,
    *,
    delimiter: str = ",",
    xlsx_styler: Callable | None = None,
    escape_formulas: bool = False,
) -> Path:
    """Write ``table`` to ``path`` atomically; the format follows the extension.

    ``.csv`` (with ``delimiter``), ``.parquet`` or ``.xlsx``. ``xlsx_styler``, when given, is
    called with the openpyxl worksheet after the rows are written (e.g. to colour classes).
    The data goes to a temporary file in the same folder, renamed over ``path`` only once
    complete: on any error nothing is left behind and an existing file is untouched.

    Excel cells hold every text as text, never as a formula. ``escape_formulas`` prefixes
    ``'`` to CSV texts that start with ``= + - @``, a tab or a carriage return, so that a
    spreadsheet opening the CSV does not run them (OWASP's advice against CSV injection).

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> out = write_table(pa.table({"a": ["x", "=1+1"]}), folder / "out.csv",
    ...                   escape_formulas=True)
    >>> print(out.read_text().strip())
    "a"
    "x"
    "'=1+1"
    """
    path = Path(path)
    suffix = _suffix(path)
    writers = {".csv": _write_csv, ".parquet": _write_parquet, ".xlsx": _write_xlsx}
    if suffix not in writers:
        raise BlendinError(f"cannot write {str(path)!r}: unknown file type {suffix!r}",
                           fix=f"use one of {', '.join(WRITE_SUFFIXES)}")
    options = {"delimiter": output_delimiter(delimiter), "styler": xlsx_styler}
    if suffix != ".parquet":
        check_writable_types(table.schema, suffix)
    if escape_formulas and suffix == ".csv":
        table = escape_formula_text(table)
    with atomic_path(path) as temp:
        writers[suffix](table, temp, **options)
    return path


def output_delimiter(delimiter: str | None) -> str:
    """The delimiter of a CSV release: one character, not a quote nor a line break.

    >>> output_delimiter("tab") == chr(9)
    True
    """
    delimiter = delimiter_option(delimiter, "--output-delimiter") or ","
    if delimiter in ('"', "\n", "\r"):
        raise BlendinError(f"the output delimiter cannot be {delimiter!r} (it quotes or ends "
                           "records)", fix="pass e.g. --output-delimiter ';' (output_delimiter=';' "
                           "in Python)")
    return delimiter


def check_writable_types(schema: pa.Schema, suffix: str) -> None:
    """Refuse columns of nested values (lists, structs) for a CSV or Excel file, and of
    bytes for an Excel file (a cell holds text, and bytes are not text)."""
    nested = [(n, t) for n, t in zip(schema.names, schema.types) if _is_nested(t)]
    if nested:
        name, kind = nested[0]
        raise BlendinError(
            f"column {name!r} holds nested values ({kind}), which a {suffix} file cannot hold",
            fix="write a .parquet file, or flatten or drop that column first")
    binary = [(n, t) for n, t in zip(schema.names, schema.types) if _is_binary(t)]
    if binary and suffix == ".xlsx":
        name, kind = binary[0]
        raise BlendinError(
            f"column {name!r} holds bytes ({kind}), which an Excel file cannot hold",
            fix="write a .parquet or .csv file, or decode or drop that column first")


#: the largest magnitude below which Excel keeps every digit of a whole number (15 digits)
EXCEL_DIGITS = 15


def _beyond_excel(column: pa.ChunkedArray) -> bool:
    """Whether a column of whole numbers or decimals holds a value of more significant
    digits than an Excel cell keeps."""
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_integer(kind):
        limit = 10**EXCEL_DIGITS
    elif pa.types.is_decimal(kind) and kind.precision > EXCEL_DIGITS:
        limit = 10 ** (EXCEL_DIGITS - kind.scale)
    else:
        return False
    ends = (end.as_py() for end in pc.min_max(column).values())
    return any(end is not None and abs(end) >= limit for end in ends)


def _is_binary(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return (pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
            or pa.types.is_fixed_size_binary(kind) or pa.types.is_binary_view(kind))


#: characters XML 1.0, and so an Excel cell, cannot hold (openpyxl refuses them)
EXCEL_ILLEGAL = "[\x00-\x08\x0b\x0c\x0e-\x1f]"


def _excel_ready(table: pa.Table) -> pa.Table:
    """``table`` with what an Excel cell cannot hold made so, or refused: a timestamp with
    a time zone (Excel's have none) is written as its text with the offset, as blendin reads
    it (``2020-01-31 23:30:00.000000-0500``), so no instant moves; a text holding a control
    character other than tab and line breaks is refused, naming the column and the value
    (changing it would change the release). Excel holds a number in 15 significant digits:
    a column of whole numbers or decimals with a value of more (an id such as
    12345678901234567) is written as text, as the value reads, rather than rounded."""
    import pyarrow.compute as pc

    for i, (name, kind) in enumerate(zip(table.column_names, table.schema.types)):
        column = table.column(i)
        if (pa.types.is_timestamp(kind) and kind.tz is not None) or _beyond_excel(column):
            table = table.set_column(i, name, pc.cast(column, pa.string()))
            continue
        if pa.types.is_dictionary(kind):
            kind, column = kind.value_type, column.cast(kind.value_type)
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            continue
        bad = pc.match_substring_regex(column, EXCEL_ILLEGAL)
        if pc.any(bad).as_py():
            value = pc.filter(column, bad)[0].as_py()
            raise BlendinError(
                f"column {name!r} holds a control character that an Excel file cannot "
                f"hold, e.g. {value[:60]!r} ({pc.sum(bad).as_py()} value(s))",
                fix="write a .csv or .parquet file, or remove the control characters "
                "from that column first")
    return table


#: first characters that make a spreadsheet read a cell as a formula (OWASP), and ``'``:
#: a value that starts with it is escaped too, so that two values stay two (``-flu`` and
#: ``'-flu`` would both be written ``'-flu``: one value in a class the checker passed with
#: two, l-diversity's count)
FORMULA_START = r"^[=+\-@\t\r']"


def escape_formula_text(table: pa.Table) -> pa.Table:
    """Text values that a spreadsheet would run as a formula, prefixed with ``'``.

    >>> escape_formula_text(pa.table({"a": ["=1+1", "x", "-2", "'-2"]})).column("a").to_pylist()
    ["'=1+1", 'x', "'-2", "''-2"]
    """
    import pyarrow.compute as pc
    import pyarrow.types as pt

    for i, kind in enumerate(table.schema.types):
        if pt.is_string(kind) or pt.is_large_string(kind):
            column = table.column(i)
            risky = pc.match_substring_regex(column, FORMULA_START)
            # (the separator of the column's own type: a large_string, as pandas' texts
            # come, has no kernel with a string one)
            escaped = pc.binary_join_element_wise(pa.scalar("'", kind), column,
                                                  pa.scalar("", kind))
            table = table.set_column(i, table.field(i), pc.if_else(risky, escaped, column))
    return table


#: temporary files are named ``.<target>.<pid>.<random>.tmp`` beside the target
TEMP_PREFIX = "."
TEMP_SUFFIX = ".tmp"


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """A temporary path beside ``path``, renamed over it when the block completes.

    On any error (SIGINT and SIGTERM included, see :mod:`blendin.cli`) the temporary file is
    removed and an existing ``path`` is untouched. Temporary files that a killed run left
    for the same target (their process is gone) are removed first. The file gets the
    permissions a new file would (the umask), or those of the file it replaces.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "note.txt"
    >>> with atomic_path(target) as temp:
    ...     _ = pathlib.Path(temp).write_text("done")
    >>> target.read_text()
    'done'
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise BlendinError(f"folder {str(folder)!r} does not exist",
                           fix="create it first or write somewhere else")
    remove_stale_temps(path)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
    # the name is known before the file exists, so a signal at any moment can clean it up
    temp = str(folder / temp_name(path.name))
    try:
        try:
            os.close(os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except OSError as error:
            raise BlendinError(f"cannot write {str(path)!r}: {error.strerror or error}",
                               fix="write somewhere you may create files (check the "
                               "folder's permissions)") from None
        yield temp
        os.chmod(temp, mode)
        done = temp
        if deferred(done, path, lambda: os.replace(done, path),
                    lambda: Path(done).unlink(missing_ok=True)):
            temp = None  # renamed with the other outputs of the run (outputs.together)
        else:
            refuse_when_stopped()  # (a SIGTERM whose exception a finalizer swallowed)
            os.replace(temp, path)
    finally:
        if temp is not None:
            Path(temp).unlink(missing_ok=True)


def exchange(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Swap the names of ``a`` and ``b`` (folders too) in one step, so that no moment
    finds ``b`` missing (Linux's ``renameat2``); False where the system or the file
    system cannot, and nothing moved.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "new").write_text("new"), (folder / "old").write_text("old")
    >>> exchange(folder / "new", folder / "old") in (True, False)
    True
    """
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_cwd, rename_exchange = -100, 2
    done = renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), rename_exchange)
    return done == 0


def temp_name(name: str, part: int | None = None) -> str:
    """The name of a temporary file (or folder) for the target ``name`` (one ``part`` of
    it), by this process: what :func:`stale_temps` finds once the process is gone."""
    return (f"{TEMP_PREFIX}{name}.{os.getpid()}.{secrets.token_hex(6)}"
            + (f".part{part}" if part is not None else "") + TEMP_SUFFIX)


#: the name of a temporary file (or a folder: Spark's part files, related tables' stack)
#: blendin writes beside a target (:func:`temp_name`)
_TEMP_NAME = re.compile(rf"{re.escape(TEMP_PREFIX)}(?P<target>.+)\.(?P<pid>\d+)\.[0-9a-f]{{12}}"
                        rf"(\.part\d+)?{re.escape(TEMP_SUFFIX)}")


def is_stale_temp(path: str | os.PathLike) -> bool:
    """Whether ``path`` is named as blendin names its temporary files and folders, by a
    process that no longer exists (a killed run's; a user's ``.release.csv.2023.tmp`` is
    not one)."""
    named = _TEMP_NAME.fullmatch(Path(path).name)
    return named is not None and not process_alive(int(named["pid"]))


def stale_temps(path: str | os.PathLike) -> list[Path]:
    """Temporary files (and folders) beside ``path`` left by runs that no longer exist."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    found = []
    for temp in folder.glob(f"{TEMP_PREFIX}{glob_escape(path.name)}.*{TEMP_SUFFIX}"):
        named = _TEMP_NAME.fullmatch(temp.name)
        if named and named["target"] == path.name and not process_alive(int(named["pid"])):
            found.append(temp)
    return found


def remove_stale_temps(path: str | os.PathLike) -> None:
    for temp in stale_temps(path):
        if temp.is_dir() and not temp.is_symlink():  # (Spark's part files)
            shutil.rmtree(temp, ignore_errors=True)
        else:
            temp.unlink(missing_ok=True)


@contextmanager
def scratch_folder(path: str | os.PathLike) -> Iterator[Path]:
    """A private folder beside ``path`` for a run's own files (the rows it stacks), removed
    at the end; one that a killed run left is removed by the next run for ``path``."""
    path = Path(path).absolute()
    remove_stale_temps(path)
    folder = path.parent / temp_name(path.name)
    folder.mkdir(mode=0o700)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def glob_escape(name: str) -> str:
    import glob

    return glob.escape(name)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write UTF-8 text atomically (see :func:`atomic_path`)."""
    with atomic_path(path) as temp, open(temp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    return Path(path)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _write_csv(table: pa.Table, path: str, *, delimiter: str, styler) -> None:
    import pyarrow.csv as pcsv

    pcsv.write_csv(table, path, write_options=pcsv.WriteOptions(delimiter=delimiter))


def _write_parquet(table: pa.Table, path: str, *, delimiter: str, styler) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, path)


def _write_xlsx(table: pa.Table, path: str, *, delimiter: str, styler) -> None:
    from openpyxl import Workbook

    if table.num_rows + 1 > XLSX_MAX_ROWS:
        raise BlendinError(
            f"{table.num_rows} rows do not fit in an Excel sheet ({XLSX_MAX_ROWS - 1} max)",
            fix="write a .csv or .parquet file instead",
        )
    table = _excel_ready(table)
    book = Workbook()
    sheet = book.active
    sheet.title = "data"
    _append_text_row(sheet, table.column_names)
    # openpyxl takes one row at a time; Excel output is small by its own limit
    for batch in table.to_batches(max_chunksize=65536):
        for row in zip(*(col.to_pylist() for col in batch.columns)):
            _append_text_row(sheet, row)
    sheet.freeze_panes = "A2"
    if styler is not None:
        styler(sheet)
    buffer = io.BytesIO()
    book.save(buffer)
    Path(path).write_bytes(buffer.getvalue())


def _append_text_row(sheet, row) -> None:
    """Append a row; a text openpyxl would take for a formula (``=...``) stays text."""
    sheet.append(row)
    if any(isinstance(v, str) and v.startswith("=") for v in row):
        for cell in sheet[sheet.max_row]:
            if cell.data_type == "f":
                cell.data_type = "s"


# -- project bundles ------------------------------------------------------------------------

#: the most a project bundle may unpack to (a spec, hierarchies, a solution, a report)
BUNDLE_LIMIT = 256 * 2**20


def unpack_zip(path: str | os.PathLike, folder: str | os.PathLike,
               limit: int = BUNDLE_LIMIT) -> list[Path]:
    """Unpack the zip file ``path`` into ``folder``, refusing, before anything is
    written, a member that would land outside it (an absolute path, ``..``, a link) and
    contents larger than ``limit`` bytes in all; returns the files written.

    >>> import tempfile, zipfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with zipfile.ZipFile(folder / "p.zip", "w") as z:
    ...     z.writestr("spec.toml", "")
    ...     z.writestr("../evil.csv", "")
    >>> try:
    ...     unpack_zip(folder / "p.zip", folder / "out")
    ... except BlendinError as error:
    ...     print(error.problem)
    zip file 'p.zip' holds '../evil.csv', which would land outside the folder it unpacks to
    """
    import stat
    import zipfile

    name = Path(path).name
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise BlendinError(f"{name!r} is not a zip file a project can be read from ({error})",
                           fix="give the .zip the app downloaded, or the unpacked folder"
                           ) from None
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        for member in members:
            parts = Path(member.filename).parts
            link = stat.S_ISLNK(member.external_attr >> 16)
            if member.filename.startswith(("/", "\\")) or ".." in parts or link or (
                    parts and ":" in parts[0]):
                raise BlendinError(
                    f"zip file {name!r} holds {member.filename!r}, which would land outside "
                    "the folder it unpacks to", fix="give a bundle the app or "
                    "blendin wrote, or unpack it yourself and give the folder")
        size = sum(m.file_size for m in members)
        if size > limit:
            raise BlendinError(f"zip file {name!r} unpacks to {size:,} bytes, more than a "
                               f"project holds ({limit:,})",
                               fix="give the spec and its hierarchy files only")
        written = []
        for member in members:
            target = Path(folder) / member.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, open(target, "wb") as sink:
                sink.write(source.read())
            written.append(target)
    return written
