"""Progress bars (tqdm) for long searches, nodes checked out of the lattice and time elapsed,
and for the passes over a large file (the share read).

The search calls ``progress(nodes_checked, total_nodes)`` after each node it checks.
:class:`Progress` turns those calls into a tqdm bar: in a terminal a text bar on stderr, in
a Jupyter notebook a widget (``tqdm.auto``; a text bar when ipywidgets is absent). The bar
stays hidden for the first ``delay`` seconds, so short searches show nothing, and is off
when stderr is not a terminal (logs and pipes stay clean) unless ``force`` is given, as
``anonymize(..., progress=True)`` does. The optimal search prunes most of the lattice, so
the bar often stops short of the total: the total is the most that could be checked.

tqdm is imported on the first draw, so a search with no bar never loads it.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from blendin.errors import BlendinError

#: what the bar shows, with and without a known total
BAR = ("{desc}: {percentage:3.0f}%|{bar}| {n_fmt} of {total_fmt} nodes checked "
       "[{elapsed}{postfix}]")
COUNT = "{desc}: {n_fmt} nodes checked [{elapsed}{postfix}]"
#: what a pass over a file tells of its progress: the share of the file read (0 to 1), or
#: None while a step that tells no share runs on (a database's statement): the clock moves
Reading = Callable[[float | None], None]
#: a pass over a file: the share read
READ = "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]"


class Progress:
    """Callable progress bar; use as a context manager so the bar is closed at the end.

    >>> import io
    >>> out = io.StringIO()
    >>> with Progress(stream=out, force=True, delay=0.0) as show:
    ...     show(10, 40)
    >>> "10 of 40 nodes checked" in out.getvalue()
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
        self.stream = stream
        shown_on = stream if stream is not None else sys.stderr
        is_tty = bool(getattr(shown_on, "isatty", lambda: False)())
        self.enabled = enabled and (force or is_tty)
        self.delay = delay
        self.interval = interval
        self.label = label
        self.bar: Any = None
        self.best: float | None = None

    #: the heuristic search also passes ``best=`` (its best figure so far)
    shows_best = True

    def __call__(self, nodes_checked: int, total_nodes: int | None = None,
                 best: float | None = None) -> None:
        if best is not None:
            self.best = best
        if not self.enabled:
            return
        if self.bar is None:
            self.bar = self._open(total_nodes, nodes_checked)
        elif total_nodes != self.bar.total:
            self.bar.total = total_nodes
            self.bar.bar_format = BAR if total_nodes else COUNT
        if best is not None:
            self.bar.set_postfix_str(f"best so far {best:.4g}", refresh=False)
        # tqdm redraws at most every ``interval`` seconds, however often this is called
        self.bar.update(nodes_checked - self.bar.n)

    def _open(self, total: int | None, done: int):
        return self._tqdm(total=total, initial=done, desc=self.label, unit="node",
                          delay=self.delay, mininterval=self.interval, leave=False,
                          bar_format=BAR if total else COUNT)

    def _tqdm(self, **options):
        if self.stream is not None:  # a given stream is text, even in a notebook
            from tqdm.std import tqdm

            return tqdm(file=self.stream, dynamic_ncols=False, ncols=80, **options)
        from tqdm.auto import tqdm

        return tqdm(**options)

    @contextlib.contextmanager
    def reading(self, label: str) -> Iterator[Reading | None]:
        """A bar of its own for one pass over a file: the callable yielded takes the share
        read so far (0 to 1), or None to redraw the bar as it is (its clock moves on while
        a step that tells no share runs), and is None when bars are off. Like the search's
        bar it shows only after ``delay`` seconds, and is erased when the pass ends.

        >>> import io
        >>> out = io.StringIO()
        >>> bars = Progress(stream=out, force=True, delay=0.0, interval=0.0)
        >>> with bars.reading("reading t.csv") as read:
        ...     read(0.5)
        >>> "reading t.csv:  50%" in out.getvalue()
        True
        """
        if not self.enabled:
            yield None
            return
        bar = None

        def show(share: float | None) -> None:
            nonlocal bar
            if bar is None:
                bar = self._tqdm(total=100, desc=label, delay=self.delay, miniters=1,
                                 mininterval=self.interval, leave=False, bar_format=READ)
            if share is not None:
                bar.update(round(100 * share) - bar.n)
            elif time.time() - bar.start_t >= self.delay:  # (a redraw ignores the delay)
                bar.refresh()

        try:
            yield show
        finally:
            if bar is not None:
                bar.close()

    def close(self) -> None:
        """Close the bar (a terminal bar is erased: ``leave=False``)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


ProgressCallback = Callable[[int, int | None], None]


@contextlib.contextmanager
def bars_for(progress: bool | Progress | None) -> Iterator[Progress | None]:
    """The bars ``progress`` asks for, as the API takes it: ``True`` bars shown wherever
    the user is (terminal or notebook), a :class:`Progress` that one, anything else none.

    >>> with bars_for(None) as bars:
    ...     bars is None
    True
    """
    if progress is True:
        with Progress(force=True, delay=0.5) as bars:
            yield bars
    else:
        yield progress if isinstance(progress, Progress) else None


def short_name(source) -> str:
    """What a bar calls ``source``: a file's name, or a table's description.

    >>> class File: name = "/data/patients.csv"
    >>> short_name(File())
    'patients.csv'
    """
    return getattr(source, "short_name", None) or Path(source.name).name


@contextlib.contextmanager
def file_pass(progress: bool | Progress | None, label: str
              ) -> Iterator[Reading | None]:
    """The bar of one pass over a file, for ``progress`` as :func:`bars_for` takes it:
    yields what the pass calls with the share read (or None).

    >>> with file_pass(False, "reading t.csv") as told:
    ...     told is None
    True
    """
    with bars_for(progress) as bars:
        if bars is None:
            yield None
            return
        with bars.reading(label) as told:
            yield told


@contextlib.contextmanager
def progress_callback(progress: bool | ProgressCallback | None
                      ) -> Iterator[ProgressCallback | None]:
    """What the search should call for ``progress`` as :func:`blendin.anonymize` takes it:
    ``True`` a bar shown wherever the user is (terminal or notebook), a callable itself,
    ``None`` or ``False`` nothing.

    >>> with progress_callback(False) as callback:
    ...     callback is None
    True
    """
    if progress is True:
        with bars_for(True) as bars:
            yield bars
    elif progress is False or progress is None:
        yield None
    elif callable(progress):
        yield progress
    else:
        raise BlendinError(f"progress must be True, False or a function, got {progress!r}",
                           fix="pass progress=True for a progress bar")
