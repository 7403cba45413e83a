"""Arrow group-bys over batches of rows: the distinct text tuples of some columns, counted.

The frequency table and the checker both start here: rows are reduced, batch by batch, to
their distinct (quasi-identifier, sensitive) tuples with counts. Memory holds the distinct
tuples (small however many rows there are), never the rows.

Every value is hashed once (Arrow's dictionary encoding of its column, or a lookup among
the column's texts seen so far); from then on a column is its small dictionary (mapped once
to a running vocabulary) and integer indices.
The distinct tuples come out dictionary-encoded too (each column's vocabulary and a code
per tuple), so whoever needs the tuples as codes reads the indices instead of hashing the
texts again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import COUNT, as_text, combine_keys, stable_order
from blendin.errors import BlendinError
from blendin.hierarchy.core import first_seen
from blendin.parallel import each, workers

#: rows coalesced before they are merged into the running distinct tuples
GROUP_ROWS = 1 << 19
#: new rows awaited per tuple known before they are merged: a merge goes over the known
#: tuples again (counted densely or by ranks; through the lasting hash table, only the
#: table's per-group counts)
MERGE_WAIT = 2
#: a key space at most this many times the rows (and DENSE_SLACK more) is counted densely
#: (np.bincount)
DENSE_FACTOR = 4
DENSE_SLACK = 1024
#: keys up to this many are hashed by pandas (half Arrow's time on tables of some 10^4
#: rows), more by Arrow (pandas' table falls out of the caches: twice Arrow's time at 10^6)
SMALL_HASH = 1 << 17
#: a column is looked up in its vocabulary, its misses encoded apart, when at most one
#: value in this many is new, missing or empty
LOOKUP_MISSES = 8
#: keys from which hashing them is split among the threads (:func:`_sharded_groups`)
SHARDED_ROWS = 1 << 18
#: rows from which a batch's columns are coded on parallel threads (Arrow's hashing and
#: NumPy's gathers release the GIL; below this the hand-over costs more than it saves)
PARALLEL_ROWS = 4096


class _Vocabulary:
    """The distinct texts of one column seen so far (or expected), each with a stable code
    (0, 1, ...)."""

    def __init__(self, expected: pa.Array | None = None, missing: str = "") -> None:
        # only texts a value can read as: an expected empty text reads as ``missing``
        self.values = (pa.nulls(0, pa.string()) if expected is None else
                       as_text(expected, missing).combine_chunks())
        if expected is not None and (missing or expected.null_count):
            # the expected texts are distinct (a hierarchy's ground values, a vocabulary's
            # texts), but a null or an empty text read as ``missing`` may repeat it
            self.values = pc.unique(self.values)
        #: the last dictionary read, whether a missing value's code follows its entries'
        #: codes, those codes, and whether the entries' are 0, 1, ...: batches of one source
        #: (a recoder's labels, a file's dictionaries) repeat it
        self._last: tuple[pa.Array, bool, np.ndarray, bool] | None = None

    def codes(self, texts: pa.Array) -> np.ndarray:
        """Code of each of ``texts`` (a small array; new texts get the next codes)."""
        if not len(self.values):  # every text is new, coded in order seen
            self.values = pc.unique(texts)
        # the texts in the vocabulary's order (distinct new ones, or a dictionary read
        # before): each text's code is its place
        if len(texts) == len(self.values) and texts.equals(self.values):
            return np.arange(len(texts), dtype=np.int32)
        known = pc.index_in(texts, value_set=self.values)
        if known.null_count:
            new = pc.unique(pc.filter(texts, known.is_null()))
            self.values = pa.concat_arrays([self.values, new])
            known = pc.index_in(texts, value_set=self.values)
        return known.to_numpy().astype(np.int32, copy=False)

    def entry_codes(self, dictionary: pa.Array, missing: str,
                    nulls: bool = False) -> tuple[np.ndarray, bool]:
        """Code of each entry of ``dictionary`` read as text, then, with ``nulls`` (indices
        that are null), of a missing value; and whether the entries' codes are their
        positions. (The missing text is coded only when a value reads as it.)"""
        last = self.last_entry_codes(dictionary, nulls)
        if last is not None:
            return last
        entries = as_text(dictionary, missing).combine_chunks()
        if nulls:
            entries = pa.concat_arrays([entries, pa.array([missing], pa.string())])
        codes = self.codes(entries)
        same = bool((codes[:len(dictionary)] == np.arange(len(dictionary))).all())
        self._last = (dictionary, nulls, codes, same)
        return codes, same

    def last_entry_codes(self, dictionary: pa.Array, nulls: bool = False
                         ) -> tuple[np.ndarray, bool] | None:
        """:meth:`entry_codes` where ``dictionary`` is the last one read, else None: it
        reads the vocabulary only (threads may call it while another adds texts)."""
        last = self._last
        if last is not None and last[0].equals(dictionary) and last[1] >= nulls:
            return last[2:]
        return None


def dictionary_chunks(column: pa.Array | pa.ChunkedArray) -> list[pa.DictionaryArray]:
    """The column as dictionary-encoded chunks (a dictionary column as it is; a plain one
    encoded in one piece, so that each value is hashed once), nulls as dictionary entries
    or null indices."""
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    if pa.types.is_dictionary(column.type):
        return list(column.chunks)
    if column.type == pa.null():  # Arrow does not dictionary-encode a column of nulls
        column = column.cast(pa.string())
    whole = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return [pc.dictionary_encode(whole, null_encoding="encode")]


def text_codes(column: pa.Array | pa.ChunkedArray, vocabulary: _Vocabulary,
               missing: str = "", found: pa.Array | pa.ChunkedArray | None = None
               ) -> np.ndarray:
    """The code, in ``vocabulary``, of every value of ``column`` read as text
    (:func:`blendin.frequency.as_text`): only the dictionaries are turned into text.
    ``found`` is the column already looked up among the vocabulary's texts (or fewer: those
    it had then), see :func:`looked_up`."""

    def entries(dictionary: pa.Array, nulls: bool) -> tuple[np.ndarray, bool]:
        return vocabulary.entry_codes(dictionary, missing, nulls)

    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    if found is None:
        found = looked_up(column, vocabulary)
    if found is not None:
        if not found.null_count:
            return found.to_numpy().astype(np.int32, copy=False)
        if found.null_count * LOOKUP_MISSES <= len(found):
            missed = found.is_null()
            codes = found.fill_null(0).to_numpy().astype(np.int32)
            codes[missed.to_numpy()] = _encoded_codes(pc.filter(column, missed), entries)
            return codes
    return _encoded_codes(column, entries)


def looked_up(column: pa.Array | pa.ChunkedArray, vocabulary: _Vocabulary
              ) -> pa.Array | pa.ChunkedArray | None:
    """The place of each value of a text ``column`` among the ``vocabulary``'s texts (null
    where not found), or None where a column is not looked up (not text, or no text known
    yet: encoding it costs less). It reads the vocabulary only, so threads can look up
    several batches at once while one adds them."""
    values = vocabulary.values  # (replaced, never changed, when texts are added)
    if len(values) and pa.types.is_string(column.type):
        # once a column's texts are known, looking them up is cheaper than encoding them
        return pc.index_in(column, value_set=values)
    return None


def known_codes(column: pa.Array | pa.ChunkedArray, vocabulary: _Vocabulary,
                found: pa.Array | pa.ChunkedArray | None) -> np.ndarray | None:
    """:func:`text_codes` where every value of ``column`` is among the texts known (its
    places ``found``, or its dictionaries read before), else None: it reads the vocabulary
    only, so threads can code several batches at once while one adds them."""
    if found is not None:
        return None if found.null_count else found.to_numpy().astype(np.int32, copy=False)
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    if not pa.types.is_dictionary(column.type):
        return None
    return _encoded_codes(column, vocabulary.last_entry_codes)


def _encoded_codes(column: pa.ChunkedArray,
                   entries: Callable[[pa.Array, bool], tuple[np.ndarray, bool] | None]
                   ) -> np.ndarray | None:
    """The codes of a column through its dictionaries' ``entries``' codes (a
    vocabulary's :meth:`~_Vocabulary.entry_codes`, or None where it gives none for one)."""
    parts = []
    for chunk in dictionary_chunks(column):
        indices = chunk.indices
        nulls = bool(indices.null_count)
        coded = entries(chunk.dictionary, nulls)
        if coded is None:
            return None
        codes, same = coded
        if nulls:
            indices, same = indices.fill_null(len(chunk.dictionary)), False
        index = indices.to_numpy()
        # a dictionary coded as it is ordered (a recoder's labels, say): its indices are the codes
        parts.append(index.astype(np.int32, copy=False) if same else codes[index])
    return np.concatenate(parts) if len(parts) != 1 else parts[0]


def _counted_densely(space: int, keys: int) -> bool:
    """Whether ``keys`` keys below ``space`` are counted in an array over the space (small
    next to the keys) rather than hashed."""
    return space <= DENSE_FACTOR * keys + DENSE_SLACK


def group_keys(key: np.ndarray, space: int) -> tuple[np.ndarray, int]:
    """The group of every key (groups numbered in order of first appearance) and their
    number; ``space`` bounds the keys (dense counting when it is small, hashing else)."""
    if not _counted_densely(space, len(key)):
        if len(key) <= SMALL_HASH:
            import pandas as pd  # loaded by the search anyway; not at import (start-up time)

            group, uniques = pd.factorize(key, sort=False)
            return group, len(uniques)
        if len(key) >= SHARDED_ROWS and workers() > 1:
            return _sharded_groups(key)
        encoded = pc.dictionary_encode(pa.array(key))
        return encoded.indices.to_numpy(), len(encoded.dictionary)
    first = first_seen(key, space)
    present = np.flatnonzero(first < len(key))
    rank = np.empty(space, np.int64)
    rank[present[stable_order(first[present])]] = np.arange(len(present))
    return rank[key], len(present)


def _sharded_groups(key: np.ndarray) -> tuple[np.ndarray, int]:
    """:func:`group_keys` by hashing: the keys split by a hash of their value into a shard
    per thread, each shard's keys grouped on a thread of its own (smaller hash tables, all
    cores), the groups then numbered in order of first appearance as one table would."""
    bits = min(3, max(1, math.ceil(math.log2(workers()))))  # (at most 8 shards)
    # the key's bits mixed (a multiplier unlike Arrow's own hash: a shard's keys must not
    # share the bits that place them in its hash table), then some middle bits
    mixed = key.view(np.uint64)
    mixed = (mixed ^ (mixed >> np.uint64(31))) * np.uint64(0xD6E8FEB86659FD93)
    shard = ((mixed >> np.uint64(32)) & np.uint64((1 << bits) - 1)).astype(np.uint8)
    del mixed  # (let go once used: a merge's arrays are as long as the keys)
    order = np.argsort(shard, kind="stable")  # (a radix sort: bytes)
    sizes = np.bincount(shard, minlength=1 << bits)
    del shard
    starts = np.concatenate([[0], np.cumsum(sizes)])
    ordered_keys = key[order]
    local = np.empty(len(key), np.int64)
    found = np.zeros(len(sizes), np.int64)

    def group(i: int) -> None:
        encoded = pc.dictionary_encode(pa.array(ordered_keys[starts[i]:starts[i + 1]]))
        local[starts[i]:starts[i + 1]] = encoded.indices.to_numpy()
        found[i] = len(encoded.dictionary)

    each(group, range(len(sizes)))
    offsets = np.concatenate([[0], np.cumsum(found)])
    for i in range(len(sizes)):  # a shard's groups numbered after the shards before it
        local[starts[i]:starts[i + 1]] += offsets[i]
    groups = int(offsets[-1])
    unordered = ordered_keys  # (its memory, used: a merge's arrays are as long as the keys)
    unordered[order] = local
    del order
    # renumbered by each group's first row
    rank = np.empty(groups, np.int64)
    rank[np.argsort(first_seen(unordered, groups), kind="stable")] = np.arange(groups)
    return rank[unordered], groups


class LookedUp(NamedTuple):
    """A batch coded as far as the texts known allowed (see
    :meth:`DistinctCounter.looked_up`): each column's places among them (None where not
    looked up); where every value was known, each column's codes; and where the keys could
    be made, the rows' keys and the shape of the keys."""

    found: list[pa.Array | pa.ChunkedArray | None]
    codes: list[np.ndarray] | None = None
    key: np.ndarray | None = None
    shape: tuple | None = None


class DistinctCounter:
    """A streaming group-by: add batches, get the distinct tuples of ``columns`` counted.

    Each column's values are read as text (nulls, NaN and empty texts as ``missing``) and
    coded against a vocabulary that grows as values appear, so a batch becomes a small
    integer matrix; batches are coalesced into about ``group_rows`` rows (or ``MERGE_WAIT``
    times the distinct tuples so far) and merged into the running distinct tuples by one
    int64 key per tuple: counted densely where the keys' space is small, else looked up in
    a hash table of the known tuples' keys kept from merge to merge. The state is the
    distinct tuples (codes and counts), that table and the vocabularies: memory follows
    the number of distinct tuples, not of rows.
    Dictionary-encoded columns cost a gather of their indices. ``expected`` texts of a
    column (say its hierarchy's ground values) are looked up from the first batch on, as if
    seen before. With ``keep_codes`` the codes of every row are kept too (:meth:`codes`).

    >>> counter = DistinctCounter(["sex"])
    >>> counter.add(pa.table({"sex": ["f", "m", "f"]}))
    >>> counter.add(pa.table({"sex": ["m", None]}))
    >>> from blendin.engines.kernels import decoded
    >>> decoded(counter.result()).to_pydict()
    {'sex': ['f', 'm', ''], '__blendin_count__': [2, 2, 1]}
    """

    def __init__(self, columns: Sequence[str], missing: str = "",
                 group_rows: int = GROUP_ROWS,
                 expected: Mapping[str, pa.Array] | None = None,
                 keep_codes: bool = False) -> None:
        self.columns = list(columns)
        self.missing = missing
        self.group_rows = group_rows
        self.vocabularies = [_Vocabulary((expected or {}).get(c), missing)
                             for c in self.columns]
        #: the distinct tuples' codes, one row per column (so that a column is contiguous)
        self.tuples = np.zeros((len(self.columns), 0), np.int32)
        self.counts = np.zeros(0, np.int64)
        #: the distinct tuples' keys, and the keyed columns and radices they were made with
        self.keys = np.zeros(0, np.int64)
        self.key_shape: tuple | None = None
        #: a hash table of the distinct tuples' keys that lasts from merge to merge (the
        #: tuples known are not hashed again; dropped by any other merge), and the shape of
        #: those keys
        self.table = None
        self.table_shape: tuple | None = None
        #: each batch's codes, a column each (a dictionary column's indices as they are)
        self.pending: list[list[np.ndarray]] = []
        self.pending_sizes: list[int] = []
        #: each batch's keys where they were made with it, and the shape they were made in
        self.pending_keys: list[tuple[tuple | None, np.ndarray | None]] = []
        self.pending_rows = 0
        self.rows = 0
        #: every batch's codes, with ``keep_codes`` (see :meth:`codes`)
        self.batch_codes: list[list[np.ndarray]] | None = [] if keep_codes else None

    def looked_up(self, batch: pa.Table | pa.RecordBatch) -> LookedUp:
        """``batch`` coded as far as the texts known so far allow, to :meth:`add` it with:
        the costly part of adding a batch, which threads can do for several batches at once
        (it reads the vocabularies only). Each text column is looked up (see
        :func:`looked_up`); where every value of every column is known, the rows' codes and
        keys are made too, so that adding the batch is only counting it."""
        found: list = []
        codes: list[np.ndarray] | None = []
        for name, vocabulary in zip(self.columns, self.vocabularies):
            column = batch.column(name)
            found.append(looked_up(column, vocabulary))
            coded = None if codes is None else known_codes(column, vocabulary, found[-1])
            if coded is None:  # (one column not coded: the batch is coded as it is added)
                codes = None
            else:
                codes.append(coded.astype(narrowest(len(vocabulary.values)), copy=False))
        if codes is None:
            return LookedUp(found)
        # the vocabularies' sizes read once, after the codes: every code is below them
        keyed, radices = shape = self._key_shape()
        if math.prod(radices) >= 2**62:
            return LookedUp(found, codes)
        return LookedUp(found, codes, _column_keys(codes, batch.num_rows, keyed, radices),
                        shape)

    def add(self, batch: pa.Table | pa.RecordBatch, looked: LookedUp | None = None) -> None:
        """Count the rows of ``batch`` (coded as far as it could be already: ``looked``,
        from :meth:`looked_up`)."""
        n = batch.num_rows
        if not n:
            return
        # a column apiece, not one matrix: a dictionary column whose entries are coded as
        # they are ordered (kept codes, a recoder's labels) is its indices, narrowed
        looked = looked or LookedUp([None] * len(self.columns))
        codes: list[np.ndarray] = list(looked.codes or [None] * len(self.columns))
        found = looked.found

        def code(j: int) -> None:  # a vocabulary per column: columns code independently
            vocabulary = self.vocabularies[j]
            coded = text_codes(batch.column(self.columns[j]), vocabulary, self.missing,
                               found[j])
            # held until merged (or kept) in as few bytes as the texts known so far need
            codes[j] = coded.astype(narrowest(len(vocabulary.values)), copy=False)

        # texts to hash are worth a thread; a dictionary column (a gather) or one looked up
        # already is coded here
        todo = [j for j, coded in enumerate(codes) if coded is None]
        hashed = [j for j in todo if found[j] is None
                  and not pa.types.is_dictionary(batch.schema.field(self.columns[j]).type)]
        each(code, hashed, n >= PARALLEL_ROWS, inline=[j for j in todo if j not in hashed])
        self.pending.append(codes)
        self.pending_sizes.append(n)
        self.pending_keys.append((looked.shape, looked.key))
        if self.batch_codes is not None:
            self.batch_codes.append(codes)
        self.pending_rows += n
        self.rows += n
        # a merge goes over the tuples known so far again: waiting for MERGE_WAIT times as
        # many new rows keeps the work linear in the rows, the memory within 1 + MERGE_WAIT
        # times the distinct tuples
        if self.pending_rows >= max(self.group_rows, MERGE_WAIT * len(self.counts)):
            self._merge()

    def _merge(self) -> None:
        if not self.pending:
            return
        shape = self._key_shape()
        space = math.prod(shape[1])
        if space < 2**62 and not _counted_densely(space, len(self.counts) + self.pending_rows):
            self._merge_hashed(shape)
            return
        self.table = None  # (counted densely, or by ranks: the table would fall behind)
        parts = [list(self.tuples), *self.pending]
        sizes = [self.tuples.shape[1], *self.pending_sizes]
        keys = self._keys(parts, sizes, shape)
        self._pending_merged()
        group, groups = group_keys(keys, space)
        # groups are numbered as they first appear: the first rows, in order
        first = first_seen(group, groups)
        known = len(self.counts)
        counts = np.bincount(group[known:], minlength=groups)
        if known:
            counts += np.bincount(group[:known], weights=self.counts,
                                  minlength=groups).astype(np.int64)
        self.tuples, self.counts = _taken(parts, sizes, first), counts
        if self.key_shape is not None:
            self.keys = keys[first]

    def _merge_hashed(self, shape: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
        """Merge the new rows through the lasting hash table: each new row's key is looked
        up once, and the keys not found are numbered next, in order of first appearance,
        where a merge of every key hashed the known tuples again (10M rows on two cores:
        0.86 of a whole release's time from Parquet, 0.92 from CSV)."""
        import pandas as pd  # (not at import: start-up)
        from pandas._libs.hashtable import Int64HashTable

        known, (keyed, radices) = len(self.counts), shape
        if self.table is None or self.table_shape != shape:
            # a new column text changed the keys: the known tuples' keys, each its number
            self.table = Int64HashTable(max(known + self.pending_rows, 1024))
            self.table_shape = shape
            if known:
                self.table.map_keys_to_values(
                    _column_keys(list(self.tuples), known, keyed, radices),
                    np.arange(known, dtype=np.int64))
        self.keys, self.key_shape = np.zeros(0, np.int64), None  # (the table has them)
        parts, sizes = self.pending, self.pending_sizes
        keys = self._pending_keys(shape)
        self._pending_merged()
        key = keys[0] if len(keys) == 1 else np.concatenate(keys)
        group = self.table.lookup(key)  # (-1: not known)
        new = np.flatnonzero(group < 0)
        # (a lookup, then the few keys not found numbered: pandas' Factorizer copies the
        # numbered keys at every call)
        fresh, found = pd.factorize(key[new], sort=False)
        self.table.map_keys_to_values(found, np.arange(known, known + len(found),
                                                       dtype=np.int64))
        group[new] = fresh + known
        counts = np.bincount(group, minlength=known + len(found))
        counts[:known] += self.counts
        first = new[first_seen(fresh, len(found))]
        self.tuples = np.concatenate([self.tuples, _taken(parts, sizes, first)], axis=1)
        self.counts = counts

    def _key_shape(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The shape of a tuple's key: the columns that take part in it and their radices
        (a column with one text so far, a QI at its top level say, has code 0: none)."""
        texts = [len(vocabulary.values) for vocabulary in self.vocabularies]
        keyed = tuple(j for j, count in enumerate(texts) if count > 1)
        return keyed, tuple(texts[j] for j in keyed)

    def _pending_keys(self, shape: tuple[tuple[int, ...], tuple[int, ...]]
                      ) -> list[np.ndarray]:
        """The key of every pending row, batch by batch: made with the batch where the
        shape of the keys has stayed since (see :meth:`looked_up`), else made now."""
        keyed, radices = shape
        return [key if made == shape else _column_keys(part, n, keyed, radices)
                for part, n, (made, key) in zip(self.pending, self.pending_sizes,
                                                self.pending_keys)]

    def _pending_merged(self) -> None:
        self.pending, self.pending_sizes, self.pending_keys = [], [], []
        self.pending_rows = 0

    def _keys(self, parts: list[list[np.ndarray]], sizes: list[int],
              shape: tuple[tuple[int, ...], tuple[int, ...]]) -> np.ndarray:
        """One key per tuple of ``parts`` (the known tuples, then the pending rows): the
        known tuples' keys are kept from the last merge while the keyed columns and their
        vocabularies' sizes stay, so only the pending rows are keyed."""
        keyed, radices = shape
        if math.prod(radices) >= 2**62:  # keys are ranks then, comparable within one call
            self.key_shape = None
            return combine_keys([np.concatenate([p[j] for p in parts]) for j in keyed], radices)
        if shape != self.key_shape:
            self.keys = _column_keys(parts[0], sizes[0], keyed, radices)
            self.key_shape = shape
        new = self._pending_keys(shape)
        # (the first merge has no known tuples: its one batch's keys are not copied)
        keys = [self.keys, *new] if len(self.keys) else new
        return keys[0] if len(keys) == 1 else np.concatenate(keys)

    def codes(self, name: str) -> pa.ChunkedArray:
        """Every row added of the column ``name`` read as text, dictionary-encoded: its
        vocabulary, and the code of each row (made with ``keep_codes`` only)."""
        j = self.columns.index(name)
        values = self.vocabularies[j].values
        return pa.chunked_array(
            [pa.DictionaryArray.from_arrays(pa.array(codes[j].astype(np.int32, copy=False)),
                                            values, safe=False)
             for codes in self.batch_codes], pa.dictionary(pa.int32(), pa.string()))

    def result(self) -> pa.Table:
        """The distinct tuples with their counts (column ``COUNT``), each column dictionary
        encoded (its vocabulary, and the code of each tuple's value)."""
        self._merge()
        self.table = None  # (rows added later build it again)
        if not self.rows:
            raise BlendinError("the table has no rows", fix="give a table with at least one row")
        # the codes index the vocabularies by construction: no bounds check
        columns = {name: pa.DictionaryArray.from_arrays(pa.array(self.tuples[j]),
                                                        vocabulary.values, safe=False)
                   for j, (name, vocabulary) in enumerate(zip(self.columns, self.vocabularies))}
        return pa.table({**columns, COUNT: pa.array(self.counts)})


def narrowest(count: int) -> type[np.signedinteger]:
    """The narrowest signed integer type for codes 0 .. ``count - 1`` (signed: Arrow's
    dictionary indices are).

    >>> narrowest(128), narrowest(129)
    (<class 'numpy.int8'>, <class 'numpy.int16'>)
    """
    return np.int8 if count <= 128 else np.int16 if count <= 1 << 15 else np.int32


def _column_keys(columns: Sequence[np.ndarray], rows: int, keyed: Sequence[int],
                 radices: Sequence[int]) -> np.ndarray:
    """Mixed-radix key (int64) of the ``keyed`` columns (of ``rows`` codes each), whose
    product of ``radices`` fits in int64 (a column with one code, left out, is 0 on every
    row)."""
    if not len(keyed):
        return np.zeros(rows, np.int64)
    return combine_keys([columns[j] for j in keyed], radices)


def _taken(parts: list[list[np.ndarray]], sizes: list[int], rows: np.ndarray) -> np.ndarray:
    """The ``rows`` (ascending) of the parts (a list of columns each, of ``sizes`` rows) put
    end to end, as a matrix with a row per column, without putting the parts together."""
    starts = np.cumsum([0, *sizes])
    pieces = np.split(rows, np.searchsorted(rows, starts[1:-1]))
    # filled in place: np.array of a list of columns copies 7x slower (1M rows, 9 columns)
    matrix = np.empty((len(parts[0]), len(rows)), np.int32)
    at = 0
    for part, picked, start in zip(parts, pieces, starts):
        for j, column in enumerate(part):
            matrix[j, at:at + len(picked)] = np.take(column, picked - start)
        at += len(picked)
    return matrix


def distinct_tuples(
    batches: Iterable[pa.Table | pa.RecordBatch], columns: Sequence[str], missing: str = "",
    expected: Mapping[str, pa.Array] | None = None,
) -> pa.Table:
    """Distinct text tuples of ``columns`` with their counts, reduced chunk by chunk
    (dictionary-encoded columns, see :meth:`DistinctCounter.result`; ``expected`` as there).

    >>> distinct_tuples([pa.table({"a": ["x", "y", "x"]})], ["a"]).to_pydict()
    {'a': ['x', 'y'], '__blendin_count__': [2, 1]}
    """
    counter = DistinctCounter(columns, missing, expected=expected)
    for batch in batches:
        counter.add(batch)
    return counter.result()
