"""Work on the machine's cores for calls that release the GIL (Arrow's kernels, NumPy's
gathers and sorts): one shared pool for the parts of one call (:func:`each`), and one for
the blocks of a stream, handed out in order (:func:`ordered`), both made on first use, of
every core the process may run on, or as many threads as ``BLENDIN_THREADS`` (``blendin
--threads N``) allows; and a thread of their own for items read ahead (:func:`read_ahead`)
or calls made in turn behind the caller (:class:`InTurn`)."""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from blendin.errors import BlendinError

_PREFIX = "blendin-work"
_pool: ThreadPoolExecutor | None = None
#: the pool of :func:`ordered` (work there never waits on work there)
_streams: ThreadPoolExecutor | None = None


def _forget_pool() -> None:
    """In a forked child: the parent's threads are gone, so its pools would never run work."""
    global _pool, _streams
    _pool = _streams = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


#: the environment variable that limits the threads (as ``--threads`` and set_threads do)
THREADS_VARIABLE = "BLENDIN_THREADS"


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def workers() -> int:
    """Threads the pool (and Arrow's) use: every core this process may run on, or fewer
    where ``BLENDIN_THREADS`` (``--threads``) says so.

    >>> os.environ[THREADS_VARIABLE] = "1"; workers()
    1
    >>> del os.environ[THREADS_VARIABLE]
    """
    text = os.environ.get(THREADS_VARIABLE, "").strip()
    if not text:
        if _arrow_threads is not None:  # limited before: every core again
            _limit_arrow(cores())
        return cores()
    if not text.isdigit() or int(text) < 1:
        raise BlendinError(f"{THREADS_VARIABLE} = {text!r} is not a number of threads",
                           fix=f"set {THREADS_VARIABLE} to a whole number of 1 or more (or "
                               "--threads N), or unset it to use every core")
    limit = min(int(text), cores())
    _limit_arrow(limit)
    return limit


def set_threads(threads: int | None) -> None:
    """Use at most ``threads`` threads (None: every core) from now on, here and in Arrow.

    >>> set_threads(1); workers()
    1
    >>> set_threads(None)
    """
    global _pool, _streams
    if threads is None:
        os.environ.pop(THREADS_VARIABLE, None)
    else:
        os.environ[THREADS_VARIABLE] = str(threads)
    for pool in (_pool, _streams):  # made for another count
        if pool is not None:
            pool.shutdown(wait=False)
    _pool = _streams = None
    if threads is None:
        _limit_arrow(cores())
    workers()  # checks the value, and tells Arrow


_arrow_threads: int | None = None


def _limit_arrow(threads: int) -> None:
    """Arrow's own thread pool (its kernels and readers) to ``threads`` threads."""
    global _arrow_threads
    if _arrow_threads != threads:
        import pyarrow as pa

        pa.set_cpu_count(threads)
        _arrow_threads = threads


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


#: the items ordered work holds at once, at most, however many cores there are: each is a
#: block of a file (or more, once made), so memory stays as on a small machine
MOST_AHEAD = 8


def items_ahead() -> int:
    """Items for :func:`ordered` to hold at once: one per thread and one more, within
    ``MOST_AHEAD``."""
    return min(workers() + 1, MOST_AHEAD)


def ordered(work: Callable[[object], object], items: Iterable, ahead: int | None = None
            ) -> Iterator:
    """``work`` of every item, in the items' order, made on the threads of a pool of its
    own (beside the shared one, so that work here never waits behind work there) up to
    ``ahead`` items (by default :func:`items_ahead`) before the one handed out: several
    blocks parse, or format, at once while the caller uses the first. With one thread,
    each item in turn. Leaving the loop early cancels the work not yet begun. ``work``
    must not wait for other work of this pool.

    >>> list(ordered(lambda x: x * x, range(5), ahead=2))
    [0, 1, 4, 9, 16]
    """
    if workers() < 2:
        yield from map(work, items)
        return
    pool = stream_pool()
    held = ahead or items_ahead()
    pending: deque[Future] = deque()
    try:
        for item in items:
            pending.append(pool.submit(work, item))
            if len(pending) >= held:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        for future in pending:  # (none runs on once the caller has left)
            if not future.cancelled():
                future.exception()


def stream_pool() -> ThreadPoolExecutor:
    """The threads :func:`ordered` hands work to, one per worker (within ``MOST_AHEAD``:
    each thread keeps the memory it freed for its next blocks), made on first use and kept
    (the same threads, and their memory, from one pass to the next)."""
    global _streams
    if _streams is None:
        _streams = ThreadPoolExecutor(min(workers(), MOST_AHEAD),
                                      thread_name_prefix="blendin-stream")
    return _streams


class InTurn:
    """Calls made one after another on a thread of their own, while the caller goes on: at
    most ``held`` wait, the caller waiting for the oldest beyond that; an error is raised
    by a later call or by :meth:`finish`.

    >>> done = []
    >>> calls = InTurn(held=2)
    >>> for i in range(4):
    ...     calls(done.append, i)
    >>> calls.finish(); done
    [0, 1, 2, 3]
    """

    def __init__(self, held: int, name: str = "blendin-in-turn") -> None:
        self.held = held
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name)
        self._pending: deque[Future] = deque()

    def __call__(self, work: Callable, *args) -> None:
        while len(self._pending) >= self.held:
            self._pending.popleft().result()
        self._pending.append(self._pool.submit(work, *args))

    def finish(self, raise_error: bool = True) -> None:
        """Wait for the calls (those not begun are dropped where not ``raise_error``: the
        caller is leaving on an error of its own) and let the thread go."""
        try:
            while self._pending:
                done = self._pending.popleft()
                if not raise_error:
                    done.cancel()
                elif (error := done.exception()) is not None:
                    raise error
        finally:
            self._pool.shutdown()  # (waits for a call under way)


def read_ahead(items: Iterable, depth: int) -> Iterator:
    """``items`` in order, made by a thread of their own up to ``depth`` ahead of the one in
    use: reading overlaps the work on what was read. The thread's error is raised here;
    leaving the loop early stops it and closes ``items``.

    >>> list(read_ahead(iter(range(5)), 2))
    [0, 1, 2, 3, 4]
    """
    made: queue.Queue = queue.Queue(depth)
    stop = threading.Event()

    def hand(item) -> bool:
        while not stop.is_set():
            try:
                made.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not hand((item, None)):
                    return
            hand((_END, None))
        except BaseException as error:  # noqa: BLE001 (raised again where items are used)
            hand((_END, error))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name="blendin-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item, error = made.get()
            if item is _END:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        thread.join()


_END = object()
