"""Freed memory kept for the next arrays, or handed back to the system at once.

A run makes many short-lived arrays of 10^5 to 10^7 bytes (a column's codes, a key per
tuple). glibc's malloc maps each array above its mmap threshold (128 KiB to start) apart and
unmaps it when freed, and gives the top of its heap back once more than its trim threshold
is free there. Every such array then starts on fresh pages, and the first touch of each page
is a fault: on adult with t-closeness, 1,161 faults a call, 3 ms of its 20. With the
thresholds where glibc's own adjustment stops (32 MiB mapped apart, 64 MiB kept at the top
of the heap) the pages of one array serve the next, as a JVM reuses its heap.

A table in a database is the other way round: its rows stay there, and the process is to
stay small (its engine says ``small_process``). glibc's own adjustment raises the mmap
threshold to the largest array freed so far, so freed arrays would stay in the heap: there
the thresholds are fixed where glibc starts, and the process's size follows what it holds
(10M rows in PostgreSQL: a peak of 365-369 MiB with the thresholds raised, 311-318 MiB with
them fixed).

Set by each anonymization or check for its run, on glibc only, and never over a choice of
the user's (any ``MALLOC_*_`` variable or ``GLIBC_TUNABLES`` in the environment).

Arrow's own pool is chosen per run too, for the arrays made through pyarrow (Arrow's
readers and writers keep the pool the process started with). Rows worked on in this process
go to jemalloc's pool, where pyarrow has one: mimalloc, Arrow's default, keeps what each
thread frees for that thread, and a batch made on one thread is freed on another. A
database's run on glibc goes to the system's malloc, whose thresholds are fixed as above
(both take less memory in the same time: docs/benchmarks.md). Never over the user's choice:
``ARROW_DEFAULT_MEMORY_POOL`` in the environment, or a pool set in Python.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform

#: mallopt's parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: glibc's ceiling for its own mmap threshold on 64-bit systems, and twice it kept at the
#: top of the heap (the trim threshold glibc sets with it)
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
#: where glibc starts both
START_MMAP_THRESHOLD = START_TRIM_THRESHOLD = 128 << 10


def tune_heap(small_process: bool = False) -> bool:
    """Choose Arrow's pool, and raise glibc's thresholds, or with ``small_process`` fix them
    where glibc starts (see the module); whether the thresholds were set.

    >>> isinstance(tune_heap(), bool)
    True
    """
    _choose_arrow_pool(small_process)
    libc = _libc()
    if libc is None or _user_tuned():
        return False
    mmap, trim = ((START_MMAP_THRESHOLD, START_TRIM_THRESHOLD) if small_process
                  else (MMAP_THRESHOLD, TRIM_THRESHOLD))
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, mmap) and libc.mallopt(_M_TRIM_THRESHOLD, trim))


#: the pool Arrow has unless the user set one: its default, then the one chosen last
_expected = "mimalloc"


def _choose_arrow_pool(small_process: bool) -> None:
    """Arrow's pool for a run (see the module): jemalloc's for rows worked on here; for a
    database's run on glibc the system's malloc, whose thresholds :func:`tune_heap` fixes
    where glibc starts, else mimalloc. Not where the user chose a pool."""
    import pyarrow as pa

    global _expected
    if "ARROW_DEFAULT_MEMORY_POOL" in os.environ:
        return
    if pa.default_memory_pool().backend_name != _expected:
        return  # set by the user (or not this pyarrow's usual default)
    if small_process:
        pool = (pa.system_memory_pool() if _libc() is not None and not _user_tuned()
                else pa.mimalloc_memory_pool())
    else:
        pool = _jemalloc() or pa.mimalloc_memory_pool()
    pa.set_memory_pool(pool)
    _expected = pool.backend_name


@functools.cache
def _jemalloc():
    """Arrow's jemalloc pool, or None where this pyarrow has none."""
    import pyarrow as pa

    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:
        return None


@functools.cache
def _libc():
    """glibc, where it is this process's libc and has mallopt and malloc_trim."""
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def _user_tuned() -> bool:
    return "GLIBC_TUNABLES" in os.environ or any(
        name.startswith("MALLOC_") and name.endswith("_") for name in os.environ)


def hand_back_memory() -> None:
    """Hand the freed pages kept for the next arrays back to the system: Arrow's pool's,
    and (on glibc) those at the top and in the middle of malloc's heap.

    Called where a run's big arrays are gone and the next phase makes smaller ones: once
    the distinct tuples are read, and once they are encoded. A PostgreSQL table's tuples
    are read on one thread, whose pool kept 95 MiB of them at 10M rows.

    >>> hand_back_memory()
    """
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
