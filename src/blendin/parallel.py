"""Work on the machine's cores for calls that release the GIL (Arrow's kernels, NumPy's
gathers and sorts): one shared pool, made on first use."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

_PREFIX = "blendin-work"
_pool: ThreadPoolExecutor | None = None


def _forget_pool() -> None:
    """In a forked child: the parent's threads are gone, so its pool would never run work."""
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def workers() -> int:
    """Threads the pool uses: the cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def each(work: Callable[[int], object], items: Iterable[int], parallel: bool = True,
         inline: Iterable[int] = ()) -> None:
    """Call ``work`` on every item, on the pool's threads when ``parallel`` (and the machine
    has more than one core), else in turn, and on the ``inline`` items in this thread
    meanwhile; the first exception is raised.

    >>> seen = []
    >>> each(seen.append, range(3), parallel=False, inline=[3])
    >>> sorted(seen)
    [0, 1, 2, 3]
    """
    global _pool
    items = list(items)
    # work the pool itself runs does its items in turn: waiting there on the pool's other
    # threads could leave none free to do them
    nested = threading.current_thread().name.startswith(_PREFIX)
    if (not parallel or nested or not items or len(items) + bool(inline) < 2
            or workers() < 2):
        for item in [*items, *inline]:
            work(item)
        return
    if _pool is None:
        _pool = ThreadPoolExecutor(workers(), thread_name_prefix=_PREFIX)
    running = [_pool.submit(work, item) for item in items]
    try:
        for item in inline:
            work(item)
    finally:
        for done in running:
            done.result()
