"""Engines: the only code that reads or writes rows.

An engine owns the two ends of the pipeline that touch rows; the search in the middle works
on the frequency table and never sees them, so it is the same for every engine.

Every engine provides:

- ``source(data, spec)``: the input, with its ``columns`` and ``types()``;
- ``distinct(source, columns, missing)``: the distinct text tuples of ``columns`` with their
  counts (a pyarrow Table with a ``COUNT`` column; its text columns may be dictionary
  encoded): the frequency table's rows, and the checker's regrouping of a table as it stands;
- ``release(source, recoder, ...)``: a context manager that applies a solution (``recoder``
  from :mod:`blendin.engines.kernels`, the same per-batch code in every engine), regroups
  the released values for the checker while they are made, and yields a
  :class:`Release`; leaving the block normally commits it (a file is renamed into place, a
  frame is handed back), an exception discards it (nothing at the target, no temporary
  file);
- ``write(data, path, ...)``: writes a release atomically.

``distinct`` and ``release`` take an optional ``progress``, told the share of a file read
so far (0 to 1); an engine with progress of its own (Spark's) may ignore it.

:class:`~blendin.engines.embedded.EmbeddedEngine` (pyarrow, batches, bounded memory) is the
default; :class:`~blendin.engines.spark.SparkEngine` runs the same steps on a Spark cluster,
:class:`~blendin.engines.sql.SqlEngine` in a database (PostgreSQL, DuckDB) on a
:class:`~blendin.engines.sql.TableRef`.
"""

from __future__ import annotations

from blendin.engines.base import Release, is_spark
from blendin.engines.embedded import EmbeddedEngine
from blendin.engines.spark import SparkEngine
from blendin.engines.sql import SqlEngine, SqlSource, TableRef
from blendin.errors import BlendinError

__all__ = ["ENGINES", "EmbeddedEngine", "Release", "SparkEngine", "SqlEngine", "TableRef",
           "engine_for", "is_spark"]

ENGINES = ("embedded", "spark", "sql")


def engine_for(data=None, engine=None, **options):
    """The engine for ``data``: the one named (``"embedded"``, ``"spark"``, ``"sql"``), an
    engine object as given, else SQL for a table in a database, Spark for a pyspark
    DataFrame and the embedded engine otherwise.

    >>> engine_for([]).name
    'embedded'
    """
    if engine is not None and not isinstance(engine, str):
        return engine
    in_database = isinstance(data, TableRef | SqlSource)
    if engine is None:
        engine = "sql" if in_database else "spark" if is_spark(data) else "embedded"
    if in_database and engine != "sql":
        raise BlendinError(f"a table in a database is read by the SQL engine, not {engine!r}",
                           fix="leave --engine out (or give --engine sql)")
    if engine == "embedded":
        return EmbeddedEngine(**options)
    if engine == "spark":
        return SparkEngine(**options)
    if engine == "sql":
        return SqlEngine(**options)
    raise BlendinError(f"unknown engine {engine!r}", fix="use --engine embedded, spark or sql "
                       "(engine=\"embedded\", \"spark\" or \"sql\" in Python)")
