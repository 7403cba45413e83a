"""The Spark engine: the rows stay on the cluster, the search runs on the driver.

- the frequency table is a Spark ``groupBy(...).count()`` over the text of the QI and
  sensitive columns (the text made by the same code as the embedded engine's, in
  ``mapInArrow``), collected to the driver: it holds distinct tuples, not rows;
- the search runs on the driver, unchanged;
- the solution is applied on the executors by ``mapInArrow`` with the very recoders the
  embedded engine uses (:mod:`blendin.engines.kernels`), shipped to them once;
- the added class and row numbers (``--group-column``, ``--original-row``) are made by the
  same :class:`~blendin.engines.kernels.RowColumns` on the executors: one small aggregation
  gives each source partition's row count, so every partition starts numbering the source
  rows where the rows before it end (the rows' order is the DataFrame's partition order: for
  one input file, the file's), and another each class's first row in the release;
- the released rows are put in a random order (``orderBy(rand(seed))``) unless the order
  is to be kept;
- the checker regroups the released values by a Spark aggregation, and nothing is written
  or returned unless it passes; a file release is written to a temporary path beside the
  target and renamed into place only then (through Hadoop's file system, so local paths,
  HDFS and object stores alike), so a failed or killed job leaves no partial release.

Needs ``pip install "blendin[spark]"`` (pyspark 4) and Java 17.
"""

from __future__ import annotations

import codecs
import contextlib
import copy
import os
import re
import signal
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa

from blendin.codes import COUNT, as_text
from blendin.engines.base import Release, is_spark
from blendin.engines.kernels import Shuffle, blanked, plain_schema, starred
from blendin.errors import BlendinError, preview
from blendin.io import (
    Source,
    _ascii_framed,
    _check_unique,
    _is_nested,
    _suffix,
    escape_formula_text,
    exchange,
    output_delimiter,
    remove_stale_temps,
    temp_name,
    to_arrow,
)
from blendin.outputs import deferred, refuse_when_stopped

#: the column that marks suppressed records between recoding and writing
REMOVED = "__blendin_removed__"
#: a row's partition, and its place in the DataFrame's order, while rows are numbered
PART, AT = "__blendin_part__", "__blendin_at__"
#: the masters Spark knows: local threads (or a local cluster), a standalone, YARN, Kubernetes
#: or Mesos cluster
MASTERS = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]"
                     r"|(spark|k8s|mesos)://\S+|yarn")
DEFAULT_MASTER = "local[*]"

# pyspark 4 warns that it does not yet fully support pandas 3: blendin hands Spark Arrow
# batches, never pandas frames, so the warning does not concern it
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas",
                        category=FutureWarning)


def _pyspark():
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise BlendinError("the Spark engine needs pyspark",
                           fix='pip install "blendin[spark]" (and Java 17)') from None


def _has_quote(path: Path, chunk: int = 1 << 24) -> bool:
    with open(path, "rb") as f:
        while block := f.read(chunk):
            if b'"' in block:
                return True
    return False


def _crlf(path: Path, encoding: str) -> bool:
    """Whether the CSV file's first line ends in CR LF (a file saved on Windows): Spark's
    multi-line reader turns a CR LF between quotes into LF unless told the file's line
    separator, which changed a value ("line1\\r\\nline2") the embedded engine keeps."""
    if not _ascii_framed(encoding):
        return False
    with pa.input_stream(str(path), compression="detect") as f:
        head = f.read(1 << 20)
    end = head.find(b"\n")
    return end > 0 and head[end - 1:end] == b"\r"


@contextmanager
def _spark_errors(path: str = "") -> Iterator[None]:
    """Spark's failures that the user can mend, as blendin's errors: a scheme (of ``path``)
    whose connector is not installed (s3a://, gs://, abfs:// come as jars beside Spark, not
    with pyspark), and executors whose Python cannot import what the recoders need (on a
    cluster each worker runs a Python of its own)."""
    try:
        yield
    except Exception as error:
        text = str(error)
        missing = re.search(r"No module named '(\w+)", text)
        if "ClassNotFoundException" in text and "FileSystem" in text:
            scheme = path.partition("://")[0]
            raise BlendinError(
                f"Spark has no file system for {scheme}:// (its connector is not installed)",
                fix="add the connector's jars to Spark, e.g. for s3a:// --spark-conf "
                "spark.jars.packages=org.apache.hadoop:hadoop-aws:<Spark's Hadoop version>"
                ) from None
        if "Malformed records" in text or "MALFORMED_RECORD" in text:
            raise BlendinError(f"{path or 'the input'}: a row has a field too many or too few "
                               "(Spark reads it in FAILFAST mode)",
                               fix="check that every row has one value per column, and the "
                               "delimiter (--delimiter)") from None
        if missing is not None and "Python worker" in text:
            raise BlendinError(
                f"the Spark executors' Python cannot import {missing.group(1)}",
                fix='install "blendin[spark]" in the Python of every worker, or name a '
                "Python that has it: PYSPARK_PYTHON=/path/to/python (or --spark-conf "
                "spark.pyspark.python=/path/to/python)") from None
        raise


def java_charset(encoding: str) -> str:
    """Python's name of a text encoding as Spark's CSV reader takes it (``latin-1`` is
    ISO-8859-1 there).

    >>> java_charset("latin-1"), java_charset("utf-8"), java_charset("ascii")
    ('ISO-8859-1', 'UTF-8', 'US-ASCII')
    """
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return encoding
    name = {"ascii": "us-ascii", "utf-8-sig": "utf-8"}.get(name, name)
    return re.sub(r"^iso8859-", "iso-8859-", name).upper()


def _children() -> set[int]:
    """This process's child processes (on Linux, from /proc; elsewhere none are known)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # (the fields after the command, which may hold spaces and parentheses)
            if int(stat.read_text().rpartition(")")[2].split()[1]) == os.getpid():
                found.add(int(stat.parent.name))
    return found


def session_defaults(master: str) -> dict[str, str]:
    """Settings for a session the Spark engine starts on ``master`` (its ``conf`` overrides
    them): larger Arrow batches (the recoders' cost is mostly per batch), on a single
    machine one shuffle partition per core rather than Spark's 200 (the group-bys shuffle
    only distinct tuples), and a quiet console: Spark's log at errors only (blendin turns
    Spark's errors into its own), and its stage progress bars only in a terminal.

    >>> session_defaults("local[4]")["spark.sql.shuffle.partitions"]
    '4'
    """
    logging = (Path(__file__).with_name("spark-log4j2.properties")).as_uri()
    settings = {"spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
                "spark.ui.showConsoleProgress": str(sys.stderr.isatty()).lower(),
                "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={logging}"}
    if master.startswith("local"):
        cores = master.partition("[")[2].rstrip("]")
        settings["spark.sql.shuffle.partitions"] = str(
            int(cores) if cores.isdigit() else os.cpu_count() or 1)
    return settings


class SparkSource:
    """A Spark DataFrame as the pipeline's input: its columns and their Arrow types."""

    def __init__(self, df, name: str = "the Spark DataFrame",
                 zones: Mapping[str, str] | None = None) -> None:
        self.df = df
        self.name = name
        self.columns = list(df.columns)
        _check_unique(self.columns)
        #: the time zone of each zoned timestamp column as the input had it (a table's, a
        #: Parquet file's): Spark holds times in its session's zone, and the embedded
        #: engine reads them in their own (2020-01-31 20:00-0500, not 2020-02-01 01:00Z)
        self.zones = dict(zones or {})

    def types(self) -> dict[str, pa.DataType]:
        from pyspark.sql.pandas.types import to_arrow_type

        # (Spark hands timestamps to Arrow in the session's time zone, which Arrow's type
        # must name: without it pyspark asserts on any timestamp column)
        zone = self.df.sparkSession.conf.get("spark.sql.session.timeZone")
        out = {}
        for field in self.df.schema.fields:
            try:
                out[field.name] = to_arrow_type(field.dataType, timezone=zone)
            except TypeError:  # a Spark type with no Arrow twin: not text, not flat
                out[field.name] = pa.struct([])
        return out

    def check_flat(self, columns: Sequence[str], role: str) -> None:
        """Refuse nested columns (lists, maps, structs) in ``role``, as the embedded engine."""
        for name, kind in self.types().items():
            if name in columns and _is_nested(kind):
                raise BlendinError(
                    f"column {name!r} holds nested values ({kind}), which cannot be {role}",
                    fix=f"flatten {name!r} into plain values first, or leave it out of the "
                    "spec")

    def check_columns(self, columns: Sequence[str]) -> None:
        missing = [c for c in columns if c not in self.columns]
        if missing:
            raise BlendinError(f"{self.name} has no column(s) {preview(missing)}",
                               fix=f"use one of its columns: {preview(self.columns, 10)}")


#: Arrow types Spark does not take, and the type that holds their values as they are
_SPARK_WIDER = {pa.string_view(): pa.large_string(), pa.binary_view(): pa.large_binary(),
                pa.float16(): pa.float32()}


def _spark_ready(table: pa.Table) -> pa.Table:
    """``table`` in types Spark takes: a type it lacks whose values a wider one holds as
    they are is cast to it (text views, half floats); any other (uint64, time of day,
    decimal256) is refused naming the column, where pyspark raised its own error."""
    from pyspark.sql.pandas.types import from_arrow_type

    for i, field in enumerate(table.schema):
        wider = _SPARK_WIDER.get(field.type)
        if wider is not None:
            table = table.set_column(i, field.name, table.column(i).cast(wider))
            continue
        try:
            from_arrow_type(field.type)
            if pa.types.is_decimal(field.type) and field.type.precision > 38:
                raise ValueError("Spark's decimals hold 38 digits")
        except Exception:  # noqa: BLE001 (pyspark raises TypeError, ValueError, its own)
            raise BlendinError(
                f"column {field.name!r} holds {field.type} values, which Spark cannot hold",
                fix=f"cast {field.name!r} to a type Spark holds first (uint64: decimal or "
                "int64; a time of day: text; a decimal: 38 digits at most), or use the "
                "embedded engine") from None
    return table


def _zones(schema: pa.Schema) -> dict[str, str]:
    """The time zone of each zoned timestamp column of ``schema``."""
    return {f.name: f.type.tz for f in schema
            if pa.types.is_timestamp(f.type) and f.type.tz is not None}


def _in_zones(batch: pa.RecordBatch, zones: Mapping[str, str]) -> pa.RecordBatch:
    """``batch`` with its timestamps back in the zones the input had them in (the same
    instants: Spark hands them over in its session's zone)."""
    if not zones:
        return batch
    columns = []
    for name, column in zip(batch.schema.names, batch.columns):
        if name in zones and pa.types.is_timestamp(column.type):
            column = column.cast(pa.timestamp(column.type.unit, tz=zones[name]))
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


class _AsText:
    """Executor side: the columns as text, exactly as the embedded engine reads them."""

    def __init__(self, columns: Sequence[str], missing: str,
                 zones: Mapping[str, str] | None = None) -> None:
        self.columns, self.missing = list(columns), missing
        self.zones = dict(zones or {})

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            batch = _in_zones(batch, self.zones)
            yield pa.record_batch([as_text(batch.column(c), self.missing).combine_chunks()
                                   for c in self.columns], names=self.columns)


class _Recode:
    """Executor side: one recoder applied to every Arrow batch, the ``blank`` columns emptied
    in suppressed records, the suppressed flag added."""

    def __init__(self, recoder, schema: pa.Schema, blank: Sequence[str] = (),
                 zones: Mapping[str, str] | None = None, labelled: Sequence[str] = ()) -> None:
        self.recoder, self.schema, self.blank = recoder, schema, list(blank)
        self.labelled = list(labelled)
        self.zones = dict(zones or {})

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            marked, removed = self.recoder(_in_zones(batch, self.zones))
            marked = blanked(marked, removed, self.blank)
            # counted as suppressed by the checker, as the release drops it (or shows it so)
            marked = starred(marked, removed, self.labelled)
            marked = marked.append_column(REMOVED, pa.array(removed, pa.bool_()))
            yield from marked.cast(self.schema).to_batches()


class _CountRows:
    """Executor side: the rows of one partition, with its id."""

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        rows = sum(batch.num_rows for batch in batches)
        yield pa.record_batch([pa.array([TaskContext.get().partitionId()], pa.int64()),
                               pa.array([rows], pa.int64())], names=[PART, COUNT])


class _NumberSource:
    """Executor side: each source row's number, counting on from where the partitions
    before this one end (:meth:`RowColumns.number_source`)."""

    def __init__(self, numbering, starts: Mapping[int, int], schema: pa.Schema) -> None:
        self.numbering, self.starts, self.schema = numbering, starts, schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        numbering = copy.copy(self.numbering)
        numbering.read = self.starts.get(TaskContext.get().partitionId(), 0)
        for batch in batches:
            yield from numbering.number_source(batch).cast(self.schema).to_batches()


class _Number:
    """Executor side: the class and source row numbers of one partition's rows, by a copy
    of the driver's :class:`RowColumns` that already knows every class."""

    def __init__(self, numbering, schema: pa.Schema) -> None:
        self.numbering, self.schema = numbering, schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        numbering = copy.copy(self.numbering)
        for batch in batches:
            yield from numbering(pa.Table.from_batches([batch])).cast(self.schema).to_batches()


class _Escape:
    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from escape_formula_text(pa.Table.from_batches([batch])).to_batches()


class SparkEngine:
    """Rows on a Spark cluster (``master``, default ``local[*]``; ``conf``: Spark settings).

    A pyspark DataFrame given as data brings its own session.
    """

    name = "spark"

    def __init__(self, session=None, *, master: str | None = None,
                 conf: Mapping[str, str] | None = None) -> None:
        _pyspark()
        self._session = session
        self.master = master or DEFAULT_MASTER
        self.conf = dict(conf or {})
        if session is None and not MASTERS.fullmatch(self.master):
            raise BlendinError(f"{self.master!r} is not a Spark master",
                               fix="give --spark-master local[*], local[N], spark://HOST:PORT, "
                               "yarn or k8s://URL (master= in Python)")

    @property
    def spark(self):
        if self._session is None:
            from pyspark.sql import SparkSession

            # the executors' Python: pyspark reads it from the environment only
            if "spark.pyspark.python" in self.conf:
                os.environ["PYSPARK_PYTHON"] = self.conf["spark.pyspark.python"]
            elif self.master.startswith("local"):  # this Python, with pyarrow and blendin
                os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

            builder = SparkSession.builder.appName("blendin").master(self.master)
            for key, value in {**session_defaults(self.master), **self.conf}.items():
                builder = builder.config(key, value)
            before = _children()
            try:
                self._session = builder.getOrCreate()
            except BaseException as error:
                # a JVM started for the session (SIGTERM while it came up, say) would
                # outlive this process: stopped with it
                for pid in _children() - before:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                if not isinstance(error, Exception):
                    raise
                first = (str(error).strip().splitlines() or [type(error).__name__])[0]
                raise BlendinError(f"Spark did not start on {self.master!r}: {first}",
                                   fix="check --spark-master (master= in Python), Java and "
                                   "the cluster") from None
        return self._session

    # -- reading ---------------------------------------------------------------------------

    def source(self, data, spec=None) -> SparkSource:
        """The input as a Spark DataFrame: as given, read from a path, or made from a frame."""
        if isinstance(data, SparkSource):
            return data
        if is_spark(data):
            self._session = self._session or data.sparkSession
            return SparkSource(data)
        if isinstance(data, str | os.PathLike):
            with _spark_errors(str(data)):
                return self._read(str(data), spec)

        table = _spark_ready(to_arrow(data))
        return SparkSource(self.spark.createDataFrame(table), "the table",
                           _zones(table.schema))

    def _read(self, path: str, spec) -> SparkSource:
        delimiter = getattr(spec, "delimiter", None)
        encoding = getattr(spec, "encoding", None) or "utf-8"
        local = None if "://" in path else Path(path)  # a file read by the embedded checks
        kind, schema = None, None
        if local is not None and local.is_dir():  # a folder of part files, as Spark writes
            kind = "csv" if path.rstrip("/").lower().endswith(".csv") else "parquet"
            path, local = local.resolve().as_uri(), None
        if local is not None:  # the same checks and delimiter sniffing as the embedded engine
            header = Source(path, delimiter=delimiter, encoding=encoding)
            kind, delimiter = header.kind, header.delimiter
            path = local.resolve().as_uri()
            if kind == "csv":  # every column text: no Spark job to read the header again
                from pyspark.sql.types import StringType, StructField, StructType

                schema = StructType([StructField(c, StringType()) for c in header.columns])
        if kind is None:  # a remote path: its name tells
            kind = "parquet" if path.rstrip("/").lower().endswith((".parquet", ".pq")) else "csv"
        if kind == "parquet":
            df = self.spark.read.parquet(path)
            if local is not None:
                return SparkSource(df, repr(path), _zones(pa.schema(list(
                    header.types().items()))))
        else:
            # a value may hold a line break only between quotes: a local file without any
            # quote is read line by line, in parallel splits (multiLine reads it in one task)
            multiline = local is None or _has_quote(local)
            lines = {"lineSep": "\r\n"} if (multiline and local is not None
                                             and _crlf(local, encoding)) else {}
            # a malformed row stops the run, as it does on the embedded engine (Spark's
            # default drops a field too many, and pads a row too short with nulls)
            df = self.spark.read.csv(path, schema=schema, header=True, sep=delimiter or ",",
                                     encoding=java_charset(encoding), multiLine=multiline,
                                     quote='"', escape='"', inferSchema=False,
                                     mode="FAILFAST", ignoreLeadingWhiteSpace=False,
                                     ignoreTrailingWhiteSpace=False, **lines)
        return SparkSource(df, repr(path))

    def distinct(self, source: SparkSource, columns: Sequence[str],
                 missing: str = "", expected=None, progress=None) -> pa.Table:
        """Distinct text tuples of ``columns`` with their counts: a Spark group-by, collected
        (``expected`` texts, a hint for the embedded engine, are not needed; Spark shows its
        own ``progress``)."""
        source.check_columns(columns)
        source.check_flat(columns, "a quasi-identifier or sensitive attribute")
        counted = self._as_text(source.df, columns, missing, source.zones).groupBy(
            *columns).count()
        with _spark_errors():
            table = counted.toArrow()
        if table.num_rows == 0:
            raise BlendinError(f"{source.name} has no rows",
                               fix="give a table with a header and at least one row")
        counts = table.column("count").cast(pa.int64())
        return pa.table({**{c: table.column(c).cast(pa.string()) for c in columns},
                         COUNT: counts})

    @staticmethod
    def _as_text(df, columns: Sequence[str], missing: str,
                 zones: Mapping[str, str] | None = None):
        """The columns as text, as :func:`blendin.frequency.as_text` makes it: text columns
        by a Spark expression (null, and empty text when ``missing`` is set, become
        ``missing``), and when any other type is among them all of them by ``as_text``
        itself on the executors, so that numbers are spelt as the embedded engine spells
        them."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType, StructField, StructType

        kinds = dict(df.dtypes)
        if all(kinds[c] == "string" for c in columns):
            def text(c):
                value = F.col(c) if missing == "" else F.nullif(F.col(c), F.lit(""))
                return F.coalesce(value, F.lit(missing)).alias(c)

            return df.select(*(text(c) for c in columns))
        schema = StructType([StructField(c, StringType(), False) for c in columns])
        return df.select(*columns).mapInArrow(_AsText(columns, missing, zones), schema)

    def sample(self, source: SparkSource, columns, missing, model):
        """Differential privacy's sample is drawn in row order, which a cluster does not
        keep: refused, with the fix."""
        raise BlendinError("the Spark engine does not draw a differentially private sample",
                           fix="use --engine embedded for SafePub (the file is read in "
                           "batches, in bounded memory)")

    # -- releasing -------------------------------------------------------------------------

    @contextmanager
    def release(self, source: SparkSource, recoder, *, check_columns: Sequence[str],
                missing: str = "", suppressed: str = "drop", row_columns=None,
                output: str | os.PathLike | None = None, delimiter: str = ",",
                escape_formulas: bool = False, labelled: Sequence[str] = (), progress=None,
                shuffle: Shuffle | None = None, blank: Sequence[str] = ()
                ) -> Iterator[Release]:
        """Recode on the executors, regroup the released values for the checker, and hand
        back a DataFrame or write it (to a temporary path, renamed when the block ends),
        its rows in a random order with ``shuffle``, the ``blank`` columns empty in
        suppressed records. Spark has no dictionary type: every column, the ``labelled``
        ones included, is released with plain values."""
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import from_arrow_schema

        numbered = row_columns if row_columns is not None and row_columns.active else None
        df = source.df
        empty = pa.schema(list(source.types().items())).empty_table()
        if numbered is not None and numbered.original_row is not None:
            df = self._source_numbered(df, numbered)
            empty = numbered.number_source(empty, 0)
        marked, _ = recoder(empty)
        schema = plain_schema(marked.schema).append(pa.field(REMOVED, pa.bool_()))
        recoded = df.mapInArrow(_Recode(recoder, schema, blank, source.zones, labelled),
                                from_arrow_schema(schema))
        recoded = recoded.persist()
        cached = [recoded]
        regrouped = self.distinct(SparkSource(recoded, "the release"), check_columns, missing)
        released = recoded.filter(~F.col(REMOVED)) if suppressed == "drop" else recoded
        released = released.drop(REMOVED)
        if shuffle is not None:  # numbered below in this order: computed once
            released = released.orderBy(F.rand(shuffle.seed % (1 << 63))).persist()
            cached.append(released)
        if numbered is not None:
            released = self._numbered(released, numbered,
                                      schema.empty_table().drop_columns([REMOVED]))
        columns = list(released.columns)
        try:
            if output is None:
                yield Release(regrouped, columns, data=released)
                return
            with self.atomic(output) as temp:
                self._write(released, temp, output, delimiter, escape_formulas)
                yield Release(regrouped, columns, path=Path(output))
        finally:
            if output is not None:  # a DataFrame handed back is read from its cache
                for frame in cached:
                    frame.unpersist()

    @staticmethod
    def _source_numbered(df, numbered):
        """``df`` with each row's number in the source (its partition order: for one input
        file, the file's) in the hidden column, before the rows to release are chosen.

        One pass counts each partition's rows, hence where its numbering starts, by the
        same kind of step as the numbering (``mapInArrow`` over ``df``): both see the
        partitions alike (a select of ``spark_partition_id`` alone may be planned as one)."""
        from pyspark.sql.pandas.types import from_arrow_schema

        counter = pa.schema([(PART, pa.int64()), (COUNT, pa.int64())])
        with _spark_errors():
            counted = df.mapInArrow(_CountRows(), from_arrow_schema(counter)).toArrow()
        counted = counted.group_by(PART).aggregate([(COUNT, "sum")]).sort_by(PART)
        counts = counted.column(f"{COUNT}_sum").to_numpy()
        starts = dict(zip(counted.column(PART).to_pylist(),
                          (np.cumsum(counts) - counts).tolist()))
        empty = pa.schema(list(SparkSource(df).types().items())).empty_table()
        schema = plain_schema(numbered.fresh().number_source(empty, 0).schema)
        return df.mapInArrow(_NumberSource(numbered.fresh(), starts, schema),
                             from_arrow_schema(schema))

    @staticmethod
    def _numbered(released, row_columns, empty: pa.Table):
        """``released`` with the class numbers (in order of first appearance in it) and the
        source rows ``row_columns`` asks for, as the embedded engine numbers them.

        One aggregation over the (cached) release gives each class's first row, by
        ``monotonically_increasing_id`` (partition, then row)."""
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import from_arrow_schema

        # (``empty`` has the released columns, the source rows' hidden one among them)
        schema = row_columns.fresh()(empty).schema  # a clashing name fails here, once
        numbering = row_columns.fresh()
        if row_columns.group_column is not None:  # classes met in the order of the rows
            qis = row_columns.qis
            with _spark_errors():
                seen = (released.select(F.monotonically_increasing_id().alias(AT), *qis)
                        .groupBy(*qis).agg(F.min(AT).alias(AT)).toArrow())
            numbering.class_ids(seen.sort_by(AT).select(qis))
        return released.mapInArrow(_Number(numbering, schema), from_arrow_schema(schema))

    def write(self, df, path: str | os.PathLike, *, delimiter: str = ",",
              escape_formulas: bool = False, **_) -> Path:
        """Write a DataFrame release atomically (a folder of part files)."""
        with self.atomic(path) as temp:
            self._write(df, temp, path, delimiter, escape_formulas)
        return Path(path)

    def _write(self, df, temp: str, target, delimiter: str, escape_formulas: bool) -> None:
        suffix = _suffix(Path(str(target)))
        if suffix not in (".parquet", ".csv"):
            raise BlendinError(f"the Spark engine cannot write {str(target)!r}",
                               fix="write a .parquet or .csv folder")
        with _spark_errors():
            if suffix == ".parquet":
                df.write.parquet(temp)
            else:
                if escape_formulas:
                    df = df.mapInArrow(_Escape(), df.schema)
                # (Spark's writer trims values by default: the file would not hold the
                # values the checker passed)
                df.write.csv(temp, header=True, sep=output_delimiter(delimiter),
                             quoteAll=True, escape='"', ignoreLeadingWhiteSpace=False,
                             ignoreTrailingWhiteSpace=False)

    # -- committing ------------------------------------------------------------------------

    def _path(self, path: str | os.PathLike):
        text = str(path)
        if "://" not in text:
            text = Path(text).resolve().as_uri()
        jvm = self.spark._jvm
        hadoop_path = jvm.org.apache.hadoop.fs.Path(text)
        with _spark_errors(text):
            return hadoop_path, hadoop_path.getFileSystem(self.spark._jsc.hadoopConfiguration())

    @contextmanager
    def atomic(self, path: str | os.PathLike) -> Iterator[str]:
        """A temporary path beside ``path``, renamed over it when the block completes; on
        any error it is deleted and an existing ``path`` is untouched."""
        target, fs = self._path(path)
        parent = target.getParent()
        if not fs.exists(parent):
            raise BlendinError(f"folder {parent.toString()!r} does not exist",
                               fix="create it first or write somewhere else")
        if "://" not in str(path):  # what killed runs left here (a cluster's: its own)
            remove_stale_temps(path)
        name = temp_name(target.getName())
        temp = self.spark._jvm.org.apache.hadoop.fs.Path(parent, name)
        local = target.toUri().getScheme() == "file"

        def commit() -> None:
            refuse_when_stopped()  # (a SIGTERM whose exception was lost)
            if local and fs.exists(target) and exchange(temp.toUri().getPath(),
                                                        target.toUri().getPath()):
                fs.delete(temp, True)  # the old release, now under the temporary name
                return
            aside = None
            if fs.exists(target):  # replaced only now, after the release is complete
                # (a moment without the release under its name: where no exchange is)
                aside = self.spark._jvm.org.apache.hadoop.fs.Path(parent, name + ".old")
                fs.rename(target, aside)
            if not fs.rename(temp, target):
                raise BlendinError(f"cannot move the release into {str(path)!r}",
                                   fix="check the folder's permissions")
            if aside is not None:
                fs.delete(aside, True)

        def discard() -> None:
            if fs.exists(temp):
                fs.delete(temp, True)

        try:
            yield temp.toString()
            if not deferred(temp.toUri().getPath(), path, commit, discard):
                commit()  # else renamed with the run's other outputs (outputs.together)
        except BaseException:
            discard()
            raise
