"""What every engine shares: the release it hands back, and telling a Spark DataFrame."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


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
    #: batches written (or made), and rows released (None: not counted, as on Spark)
    batches: int = 0
    rows: int | None = None
    #: in memory, with a person key: each released row's person, as a number (0, 1, ...;
    #: never the key), for measuring the release's risk in people
    people: Any = None


def is_spark(data) -> bool:
    """True for a pyspark DataFrame (checked by name: pyspark need not be installed)."""
    kind = type(data)
    return kind.__name__ == "DataFrame" and kind.__module__.startswith("pyspark")
