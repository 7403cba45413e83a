"""Freed memory kept for the next arrays, rather than handed back to the system at once.

A run makes many short-lived arrays of 10^5 to 10^7 bytes (a column's codes, a key per
tuple). glibc's malloc maps each array above its mmap threshold (128 KiB to start) apart and
unmaps it when freed, and gives the top of its heap back once more than its trim threshold
is free there. Every such array then starts on fresh pages, and the first touch of each page
is a fault: on adult with t-closeness, 1,161 faults a call, 3 ms of its 20. With the
thresholds where glibc's own adjustment stops (32 MiB mapped apart, 64 MiB kept at the top
of the heap) the pages of one array serve the next, as a JVM reuses its heap.

Set once per process (by the first anonymization or check), on glibc only, and never over
a choice of the user's (any ``MALLOC_*_`` variable or ``GLIBC_TUNABLES`` in the environment).
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


@functools.cache
def keep_freed_memory() -> bool:
    """Raise glibc's thresholds (see the module); whether they were set.

    >>> isinstance(keep_freed_memory(), bool)
    True
    """
    if platform.libc_ver()[0] != "glibc" or _user_tuned():
        return False
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                    and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    except (AttributeError, OSError):  # a libc without mallopt
        return False


def _user_tuned() -> bool:
    return "GLIBC_TUNABLES" in os.environ or any(
        name.startswith("MALLOC_") and name.endswith("_") for name in os.environ)


def hand_back_arrow_memory() -> None:
    """Hand the pages Arrow's pool keeps for the next buffers back to the system.

    Once the distinct tuples are encoded the search works in NumPy, so those pages would
    only add to the peak: a PostgreSQL table's tuples are read on one thread, whose pool
    kept 95 MiB of them at 10M rows (a peak of 450 MiB, 398 MiB with them handed back).

    >>> hand_back_arrow_memory()
    """
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
