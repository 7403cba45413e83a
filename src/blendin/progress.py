"""A one-line progress display for long searches: nodes checked and time elapsed.

The search calls ``progress(nodes_checked, total_nodes)`` now and then. The display stays
silent for the first second (short searches print nothing), redraws at most a few times a
second on stderr, and is off when stderr is not a terminal, so logs and pipes stay clean.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Callable progress display; use as a context manager so the line is cleared at the end.

    >>> import io
    >>> out = io.StringIO()
    >>> with Progress(stream=out, force=True, delay=0.0, interval=0.0) as show:
    ...     show(10, 40)
    >>> "10 of 40 nodes" in out.getvalue()
    True
    """

    def __init__(
        self,
        *,
        stream: TextIO | None = None,
        enabled: bool = True,
        force: bool = False,
        delay: float = 1.0,
        interval: float = 0.2,
        label: str = "searching",
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        is_tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled and (force or is_tty)
        self.delay = delay
        self.interval = interval
        self.label = label
        self.start = time.perf_counter()
        self._last = float("-inf")
        self._width = 0
        self.best: float | None = None

    #: the heuristic search also passes ``best=`` (its best figure so far)
    shows_best = True

    def __call__(self, nodes_checked: int, total_nodes: int | None = None,
                 best: float | None = None) -> None:
        if best is not None:
            self.best = best
        if not self.enabled:
            return
        now = time.perf_counter()
        elapsed = now - self.start
        if elapsed < self.delay or now - self._last < self.interval:
            return
        self._last = now
        text = self.line(nodes_checked, total_nodes, elapsed)
        if self.best is not None:
            text += f", best so far {self.best:.4g}"
        self._draw(text)

    @staticmethod
    def line(nodes_checked: int, total_nodes: int | None, elapsed: float) -> str:
        """The text shown: ``searching: 120 of 4,320 nodes checked (3%), 2.4 s``."""
        if total_nodes:
            share = f" ({100 * nodes_checked / total_nodes:.0f}%)"
            return f"{nodes_checked:,} of {total_nodes:,} nodes checked{share}, {elapsed:.1f} s"
        return f"{nodes_checked:,} nodes checked, {elapsed:.1f} s"

    def _draw(self, text: str) -> None:
        text = f"{self.label}: {text}"
        pad = " " * max(0, self._width - len(text))
        self.stream.write(f"\r{text}{pad}")
        self.stream.flush()
        self._width = len(text)

    def close(self) -> None:
        """Erase the line (if anything was drawn)."""
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

    def __enter__(self) -> Progress:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.close()
