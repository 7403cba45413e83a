"""Texts, codes and keys: values read as text, columns of integer codes combined into one
key per row. The lowest layer of the counting: the group-by, the frequency table, the
metrics and the checker all key their rows with these.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: the column of counts in a table of distinct tuples
COUNT = "__blendin_count__"


def as_text(column: pa.Array | pa.ChunkedArray, missing: str = "") -> pa.ChunkedArray:
    """The column as text, with nulls, NaN and empty strings all mapped to ``missing``."""
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if pa.types.is_floating(column.type):
        column = pc.if_else(pc.is_nan(column), None, column)
    if not pa.types.is_string(column.type):
        if pa.types.is_large_string(column.type):
            column = column.cast(pa.string())
        else:
            column = pc.cast(column, pa.string())
    if missing != "":  # empty text is missing too, and must take the label
        column = pc.if_else(pc.equal(column, ""), None, column)
    return pc.fill_null(column, missing) if column.null_count else column


def distinct_texts(column: pa.Array | pa.ChunkedArray, missing: str = "") -> pa.Array:
    """The distinct values of a column as text (:func:`as_text`); of a dictionary-encoded
    column, only the entries its rows use are read.

    >>> distinct_texts(pa.array(["b", None, "b"]).dictionary_encode(), "?").to_pylist()
    ['b', '?']
    """
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    if not pa.types.is_dictionary(column.type):
        return pc.unique(as_text(column, missing))
    parts = []
    for chunk in column.chunks:
        indices, entries = chunk.indices, chunk.dictionary
        nulls = indices.null_count
        used = np.bincount((pc.drop_null(indices) if nulls else indices).to_numpy(),
                           minlength=len(entries)) > 0
        if not used.all():  # (a vocabulary's entries are all used, mostly)
            entries = entries.filter(pa.array(used))
        parts.extend(as_text(entries, missing).chunks)
        if nulls:
            parts.append(pa.array([missing], pa.string()))
    if len(parts) == 1:  # one chunk's entries (a regrouped table's): no chunked array
        return pc.unique(parts[0])
    return pc.unique(pa.chunked_array(parts, pa.string()))


def stable_order(key: np.ndarray) -> np.ndarray:
    """``np.argsort(key, kind="stable")`` for nonnegative int64 keys, in about half its time
    when each key and its position fit in one int64 together: NumPy sorts numbers much
    faster than it sorts their positions, and packed (key, position) pairs are distinct, so
    their order is the stable one.

    >>> stable_order(np.array([3, 1, 3, 0])).tolist()
    [3, 1, 0, 2]
    """
    n = len(key)
    shift = max(n - 1, 1).bit_length()
    if n == 0 or key.min() < 0 or int(key.max()) >= 1 << (63 - shift):
        return np.argsort(key, kind="stable")
    packed = (key.astype(np.int64) << shift) | np.arange(n, dtype=np.int64)
    packed.sort()
    return packed & ((1 << shift) - 1)


def combine_keys(codes: np.ndarray | Sequence[np.ndarray], radices: Sequence[int]) -> np.ndarray:
    """One int64 key per row from several code columns (mixed radix): ``codes`` is a
    (rows, columns) matrix or a list of columns (at least one).

    Falls back to ranking when the product of radices would overflow int64.

    >>> combine_keys([np.array([1, 0]), np.array([2, 1])], [2, 3]).tolist()
    [5, 1]
    """
    if isinstance(codes, np.ndarray):
        rows, columns = codes.shape[0], codes.T
    else:
        rows, columns = len(codes[0]), codes
    key = np.zeros(rows, dtype=np.int64)
    span = 1
    for column, radix in zip(columns, radices):
        if span * radix >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            key = key.reshape(-1).astype(np.int64)
            span = int(key.max()) + 1 if key.size else 1
        key *= radix
        key += column
        span *= radix
    return key


#: grouping by a stable sort (NumPy's merges runs) beats hashing above this many keys where
#: at most one key in RUN_SHARE follows a larger one (a roll-up of classes in key order)
SORTED_GROUPS_ROWS = 1 << 17
RUN_SHARE = 8


def sorted_groups(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys and each key's index among them (``np.unique`` with the
    inverse), by a stable sort: much faster where the keys come in long sorted runs, which
    it merges.

    >>> keys, inverse = sorted_groups(np.array([7, 2, 7, 5]))
    >>> keys.tolist(), inverse.tolist()
    ([2, 5, 7], [2, 0, 2, 1])
    """
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    new = np.empty(len(key), bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    keys = ordered[new]
    # each sorted key's group counted into the sorted keys' memory (int64 keys): an array
    # as long as the keys is fresh pages (faults) wherever the heap has none free
    rank = np.cumsum(new, out=ordered if ordered.dtype == np.int64 else None)
    rank -= 1
    inverse = np.empty(len(key), np.int64)
    inverse[order] = rank
    return keys, inverse


def factorized(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key's group (int64) and the groups' keys: a hash table's groups in order of
    first appearance, or, where many keys come mostly in order, the groups in key order
    from :func:`sorted_groups` (1M keys of a search's roll-ups: 15-22 ms against 42-64 ms).

    >>> inverse, keys = factorized(np.array([7, 2, 7, 5]))
    >>> keys[inverse].tolist()
    [7, 2, 7, 5]
    """
    n = len(key)
    if n >= SORTED_GROUPS_ROWS and RUN_SHARE * np.count_nonzero(key[1:] < key[:-1]) <= n:
        keys, inverse = sorted_groups(key)
        return inverse, keys
    import pandas as pd  # not at import: start-up time

    inverse, keys = pd.factorize(key, sort=False)
    return inverse.astype(np.int64, copy=False), np.asarray(keys)


def unique_inverse(key: np.ndarray, span: int) -> tuple[np.ndarray, int]:
    """``np.unique(key, return_inverse=True)``'s inverse and count of keys, by a dense mark
    and a running count where the key space is small (no sort: 3.9 of plan's 6.4 ms on
    fars went to np.unique).

    >>> inverse, count = unique_inverse(np.array([7, 2, 7, 5]), 8)
    >>> inverse.tolist(), count
    ([2, 0, 2, 1], 3)
    """
    if span <= 2 * len(key) + 4096:
        present = np.zeros(span + 1, bool)
        present[key] = True
        rank = np.cumsum(present) - 1
        return np.take(rank, key), int(rank[-1]) + 1 if len(key) else 0
    uniq, inverse = np.unique(key, return_inverse=True)
    return inverse.reshape(-1), len(uniq)
