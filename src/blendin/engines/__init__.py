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
default; :class:`~blendin.engines.spark.SparkEngine` runs the same steps on a Spark cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blendin.errors import BlendinError

ENGINES = ("embedded", "spark")


@dataclass(eq=False)
class Release:
    """A release being committed: what the checker needs and what the caller gets.

    ``regrouped`` holds the distinct (QI, sensitive) tuples of the released values with their
    counts, suppressed records included with ``*`` in every QI (the checker counts them as
    suppressed); ``columns`` are the release's columns. After the block, ``data`` is the
    release (in memory; None when written to ``path``).
    """

    regrouped: Any
    columns: list[str]
    data: Any = None
    path: Path | None = None
    #: batches written (or made), and rows released
    batches: int = 0
    rows: int = 0


def is_spark(data) -> bool:
    """True for a pyspark DataFrame (checked by name: pyspark need not be installed)."""
    kind = type(data)
    return kind.__name__ == "DataFrame" and kind.__module__.startswith("pyspark")


def engine_for(data=None, engine=None, **options):
    """The engine for ``data``: the one named (``"embedded"``, ``"spark"``), an engine
    object as given, else Spark for a pyspark DataFrame and the embedded engine otherwise.

    >>> engine_for([]).name
    'embedded'
    """
    if engine is not None and not isinstance(engine, str):
        return engine
    if engine is None:
        engine = "spark" if is_spark(data) else "embedded"
    if engine == "embedded":
        from blendin.engines.embedded import EmbeddedEngine

        return EmbeddedEngine(**options)
    if engine == "spark":
        from blendin.engines.spark import SparkEngine

        return SparkEngine(**options)
    raise BlendinError(f"unknown engine {engine!r}", fix="use --engine embedded or spark")
