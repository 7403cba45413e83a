"""A value hierarchy as integer matrices: one gather generalizes a whole column.

The bottom of the ``hierarchy`` package: every builder module (flat, fixed, intervals,
masking, dates, tree, arx) builds on this one, and ``registry`` (spec keys and saved rules
to builders) sits on top of them all.

Level 0 holds the ground values (the distinct values of the column, as text); each higher
level is a coarser partition of them, the top usually a single ``*``. ``codes[level, g]`` is
the index, in ``labels[level]``, of the label that ground value ``g`` takes at ``level``.
"""

from __future__ import annotations

import dataclasses
import weakref
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.errors import BlendinError, preview

SUPPRESSED = "*"


#: per hierarchy, the last dictionary it looked up and the codes found (see _entry_codes)
_ENTRY_CODES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """Generalization levels of one attribute.

    ``labels[level]`` is an object array of the distinct labels at that level, ``codes`` an
    int32 matrix of shape (height, number of ground values). ``numbers`` gives each ground
    value a position on a number line (numbers, or days for dates) where the values are
    ordered, and is None for categories; ``kind`` is ``"numeric"``, ``"date"`` or
    ``"categorical"``.

    >>> h = Hierarchy.from_rows([["29", "25-29", "*"], ["31", "30-34", "*"]])
    >>> h.height, list(h.labels[1])
    (3, ['25-29', '30-34'])
    >>> h.generalize(np.array([1, 0]), 1).tolist()
    [1, 0]
    """

    labels: tuple[np.ndarray, ...]
    codes: np.ndarray
    kind: str = "categorical"
    numbers: np.ndarray | None = None
    #: when cut down to the data's values: per level, the ground values of the hierarchy as
    #: given under each label, and their number (ARX's Loss measures shares of that domain)
    domain_leaves: tuple[np.ndarray, ...] | None = None
    domain_size: int | None = None

    @property
    def height(self) -> int:
        """Number of levels, the ground level included."""
        return self.codes.shape[0]

    @property
    def ground(self) -> np.ndarray:
        """The ground values, as text."""
        return self.labels[0]

    def generalize(self, ground_codes: np.ndarray, level: int) -> np.ndarray:
        """Codes at ``level`` of the given ground codes (one gather)."""
        return self.codes[level][ground_codes]

    def label_array(self, level: int) -> np.ndarray:
        """Label of every ground value at ``level``, indexed by ground code."""
        return self.labels[level][self.codes[level]]

    def encode(self, column: pa.Array | pa.ChunkedArray, name: str = "column") -> np.ndarray:
        """Ground codes (int32) of a text column; every value must be a ground value.

        A dictionary-encoded column costs one lookup per dictionary entry and a gather.
        Raises a BlendinError listing the values the hierarchy does not cover.

        >>> h = Hierarchy.from_rows([["f", "*"], ["m", "*"]])
        >>> h.encode(pa.array(["m", "f", "m"]).dictionary_encode()).tolist()
        [1, 0, 1]
        """
        if isinstance(column, pa.Array):
            column = pa.chunked_array([column])
        if not pa.types.is_dictionary(column.type):
            codes = pc.index_in(column, value_set=self.ground_texts)
            if codes.null_count:
                raise self._uncovered(pc.filter(column, codes.is_null()), name)
            return np.asarray(codes.to_numpy(zero_copy_only=False), dtype=np.int32)
        parts = [self._encode_dictionary(chunk, name) for chunk in column.chunks]
        return parts[0] if len(parts) == 1 else np.concatenate([np.zeros(0, np.int32), *parts])

    def _encode_dictionary(self, chunk: pa.DictionaryArray, name: str) -> np.ndarray:
        if not chunk.indices.null_count and chunk.dictionary.equals(self.ground_texts):
            # the ground values themselves (a column coded from them): no lookup
            return chunk.indices.to_numpy().astype(np.int32, copy=False)
        lookup = self._entry_codes(chunk.dictionary)
        indices = chunk.indices
        if indices.null_count:
            indices = indices.fill_null(len(chunk.dictionary))
        codes = lookup[indices.to_numpy()]
        if (codes < 0).any():
            raise self._uncovered(chunk.filter(pa.array(codes < 0)), name)
        return codes

    def _entry_codes(self, dictionary: pa.Array) -> np.ndarray:
        """The ground code of each entry of ``dictionary``, then of a null index; -1 where
        the hierarchy does not cover it (an error only if a row has it). Kept for the last
        dictionary: each run on a Table brings its columns' vocabularies again."""
        last = _ENTRY_CODES.get(self)
        if last is not None and last[0].equals(dictionary):
            return last[1]
        entries = pc.index_in(dictionary, value_set=self.ground_texts)
        lookup = np.append(entries.fill_null(-1).to_numpy(), -1).astype(np.int32)
        lookup.flags.writeable = False
        _ENTRY_CODES[self] = (dictionary, lookup)
        return lookup

    def _uncovered(self, values: pa.Array | pa.ChunkedArray, name: str) -> BlendinError:
        missing = pc.unique(values).to_pylist()
        return BlendinError(
            f"the hierarchy of {name!r} does not cover {len(missing)} value(s) of the "
            f"data: {preview(sorted(map(str, missing)))}",
            fix=f"add these values to the hierarchy of {name!r}, or map them "
            "(missing values: [input] missing = ...)",
        )

    def build(self, values: np.ndarray, name: str = "column", missing: str = "") -> Hierarchy:
        """This hierarchy checked against, and cut down to, the data's values (as a builder)."""
        return restrict(self, values, name, missing)

    @cached_property
    def ground_texts(self) -> pa.Array:
        """The ground values as an Arrow text array (what columns are looked up in)."""
        return pa.array(self.ground.astype(str).tolist(), type=pa.string())

    def to_rows(self) -> list[list[str]]:
        """The ARX table form: one row per ground value, levels left to right."""
        table = np.stack([self.label_array(level) for level in range(self.height)], axis=1)
        return table.astype(str).tolist()

    @classmethod
    def from_rows(
        cls,
        rows: Sequence[Sequence[str]],
        *,
        kind: str = "categorical",
        numbers: np.ndarray | None = None,
        name: str = "hierarchy",
    ) -> Hierarchy:
        """Build from ARX-style rows ``value;level1;...;top``.

        Checks that every row has the same length, that ground values are distinct and that
        each level is a function of the level below (the hierarchy is a tree).
        """
        if not rows:
            raise BlendinError(f"{name} has no rows", fix="give one row per value")
        widths = {len(r) for r in rows}
        if len(widths) != 1:
            bad = next(i for i, r in enumerate(rows) if len(r) != len(rows[0]))
            raise BlendinError(
                f"{name}: rows have different lengths ({sorted(widths)}); row {bad + 1} "
                f"({';'.join(map(str, rows[bad]))!r}) differs from row 1",
                fix="give every value the same number of levels",
            )
        table = np.array(rows, dtype=object).astype(str).astype(object)
        dupes = _unique_in_order(table[_repeated(table[:, 0]), 0])[0]
        if len(dupes):
            raise BlendinError(
                f"{name}: value(s) listed more than once: {preview(dupes)}",
                fix="list each value once in the first column",
            )
        order = np.argsort(table[:, 0], kind="stable")
        table = table[order]
        if numbers is not None:
            numbers = np.asarray(numbers, dtype=float)[order]
        labels, codes = [], []
        for level in range(table.shape[1]):
            level_labels, level_codes = _unique_in_order(table[:, level])
            labels.append(level_labels)
            codes.append(level_codes)
        codes_matrix = np.stack(codes).astype(np.int32)
        _check_tree(codes_matrix, labels, name)
        return cls(tuple(labels), codes_matrix, kind, numbers)


def _unique_in_order(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct labels (in order of first appearance) and each entry's index (hashing)."""
    encoded = pc.dictionary_encode(pa.array(column, type=pa.string()))
    return (encoded.dictionary.to_numpy(zero_copy_only=False).astype(object),
            encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32))


def _repeated(column: np.ndarray) -> np.ndarray:
    """Which entries repeat an earlier one."""
    _, codes = _unique_in_order(column)
    return first_seen(codes, len(codes))[codes] != np.arange(len(codes))


def first_seen(codes: np.ndarray, n_codes: int) -> np.ndarray:
    """Index of each code's first entry (``len(codes)`` for a code absent).

    >>> first_seen(np.array([2, 0, 2, 0]), 4).tolist()
    [1, 4, 0, 4]
    """
    first = np.full(n_codes, len(codes), np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)  # the last write wins: the first
    return first


def _check_tree(codes: np.ndarray, labels: list[np.ndarray], name: str) -> None:
    for level in range(1, codes.shape[0] - 1):
        width = len(labels[level + 1])
        pairs = np.unique(codes[level].astype(np.int64) * width + codes[level + 1])
        children, parents_of = np.divmod(pairs, width)
        parents = np.bincount(children, minlength=len(labels[level]))
        if (parents > 1).any():
            bad = int(np.flatnonzero(parents > 1)[0])
            above = labels[level + 1][parents_of[children == bad]]
            raise BlendinError(
                f"{name}: level {level} value {labels[level][bad]!r} generalizes to more "
                f"than one value at level {level + 1} ({preview(above)}): not a tree",
                fix="give each label one parent, or make the labels distinct",
            )


# ---------------------------------------------------------------------------------------------
# builders: the base class and the helpers every builder shares


class HierarchyBuilder(ABC):
    """Makes the Hierarchy of one attribute from its distinct values (as text)."""

    @abstractmethod
    def build(self, values: np.ndarray, name: str = "column", missing: str = "") -> Hierarchy:
        """The hierarchy covering ``values`` (distinct text values of column ``name``).

        ``missing`` is the label missing values carry in ``values``; it gets its own branch.
        """

    @abstractmethod
    def to_toml(self, base_dir: Path | None = None) -> dict:
        """The inline TOML table that makes this builder (paths relative to ``base_dir``)."""

    def check_type(self, kind: pa.DataType, name: str = "column") -> None:  # noqa: B027
        """Refuse a column type the builder would misread (e.g. codes held as numbers)."""

    def given(self) -> Hierarchy | None:
        """The whole hierarchy when the builder covers a fixed set of values (a tree, a
        file, a built Hierarchy); None when a rule generalizes any value (intervals,
        masking, dates, flat)."""
        return None

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(type(self))


# ---------------------------------------------------------------------------------------------
# shared helpers


def distinct_text(values: Sequence | np.ndarray) -> np.ndarray:
    """The distinct values as a sorted object array of Python strings."""
    arr = np.asarray(values, dtype=object)
    if arr.size == 0:
        return np.empty(0, dtype=object)
    return np.unique(arr.astype(str)).astype(object)


def isin_text(values: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Which ``values`` are in ``among`` (hashing: np.isin on objects is quadratic)."""
    value_set = pa.array(np.asarray(among, dtype=object).astype(str).tolist(), type=pa.string())
    found = pc.is_in(pa.array(np.asarray(values, dtype=object).astype(str).tolist(),
                              type=pa.string()), value_set=value_set)
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)


def assemble(
    ground: np.ndarray,
    levels: Sequence[np.ndarray],
    *,
    kind: str = "categorical",
    numbers: np.ndarray | None = None,
    name: str = "column",
    missing: str = "",
    is_missing: np.ndarray | None = None,
) -> Hierarchy:
    """A Hierarchy from ground values and their label at each level (``*`` is added on top).

    Rows flagged ``is_missing`` keep their own value at every level below the top, and get
    NaN as their number.
    """
    n = len(ground)
    table = np.empty((n, len(levels) + 2), dtype=object)
    table[:, 0] = ground
    for i, labels in enumerate(levels, start=1):
        table[:, i] = np.asarray(labels, dtype=object)
    table[:, -1] = SUPPRESSED
    if numbers is not None:
        numbers = np.asarray(numbers, dtype=float).copy()
    if is_missing is not None and is_missing.any():
        table[is_missing, 1:-1] = missing
        if numbers is not None:
            numbers[is_missing] = np.nan
    if n == 0:
        raise BlendinError(f"column {name!r} has no values", fix="give a column with values")
    return Hierarchy.from_rows(table.tolist(), kind=kind, numbers=numbers, name=name)


def restrict(hierarchy: Hierarchy, values: np.ndarray, name: str, missing: str,
             source: str = "the hierarchy") -> Hierarchy:
    """``hierarchy`` cut down to ``values``, which it must all cover.

    The missing label, when the data has it and the hierarchy does not, gets its own branch.
    A hierarchy whose ground values are exactly ``values`` is returned as it is.
    """
    values = distinct_text(values)
    if not len(values):
        raise BlendinError(f"{name} has no rows", fix="give one row per value")
    if len(values) == len(hierarchy.ground) and np.array_equal(values, hierarchy.ground):
        return hierarchy  # the data has every value (both are in text order)
    found = pc.index_in(pa.array(values, type=pa.string()), value_set=hierarchy.ground_texts)
    position = np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
    absent = position < 0
    uncovered = values[absent & (values != missing)]
    if len(uncovered):
        raise BlendinError(
            f"{source} of {name!r} does not cover {len(uncovered)} value(s) of the data: "
            f"{preview(uncovered)}",
            fix=(f"list each of these values in the tree of {name!r}, under a group or as "
                 "a value of its own" if source == "the tree" else
                 f"add a row for each of these values to {source} of {name!r}"),
        )
    keep = np.zeros(len(hierarchy.ground), dtype=bool)
    keep[position[~absent]] = True
    cut = _kept(hierarchy, keep)
    if not absent.any():
        return cut
    # only the missing label is left: a branch of its own, whose labels may meet the others
    return _with_domain(_with_branch(cut, missing, name), hierarchy)


def _kept(whole: Hierarchy, keep: np.ndarray) -> Hierarchy:
    """The ground values ``keep`` marks with their labels, as :meth:`Hierarchy.from_rows`
    would build them from those rows (labels in order of first appearance), each label
    remembering how many of ``whole``'s ground values it covers.

    ``whole`` is as from_rows makes it (ground values in text order, level 0 their own
    codes), so its rows stay in order. Labels are numbered across levels (label ``j`` of
    level ``l`` is ``starts[l] + j``): one pass over the kept rows serves every level."""
    starts = np.cumsum([0, *(len(labels) for labels in whole.labels)])
    entries = (whole.codes[:, keep] + starts[:-1, None]).ravel()  # level by level
    first = first_seen(entries, int(starts[-1]))
    used = np.flatnonzero(first < len(entries))
    used = used[np.argsort(first[used], kind="stable")]  # by level, then first appearance
    level = np.searchsorted(starts, used, side="right") - 1
    bounds = np.cumsum([0, *np.bincount(level, minlength=whole.height)])
    rank = np.zeros(int(starts[-1]), np.int32)
    rank[used] = np.arange(len(used)) - bounds[level]
    leaves = np.concatenate([_domain_leaves(whole, lv) for lv in range(whole.height)])[used]
    pieces = list(zip(bounds[:-1], bounds[1:]))
    return Hierarchy(
        tuple(whole.labels[lv][used[a:b] - starts[lv]] for lv, (a, b) in enumerate(pieces)),
        rank[entries].reshape(whole.height, -1), whole.kind,
        None if whole.numbers is None else whole.numbers[keep],
        tuple(leaves[a:b] for a, b in pieces), whole.domain_size or len(whole.ground))


def _domain_leaves(hierarchy: Hierarchy, level: int) -> np.ndarray:
    """How many ground values of the hierarchy as given each label at ``level`` covers."""
    if hierarchy.domain_leaves is not None:
        return np.asarray(hierarchy.domain_leaves[level], dtype=np.int64)
    return np.bincount(hierarchy.codes[level], minlength=len(hierarchy.labels[level]))


def _with_branch(cut: Hierarchy, missing: str, name: str) -> Hierarchy:
    """``cut`` with a row for the missing label: itself below the top, ``*`` on top."""
    branch = [missing] * (cut.height - 1) + [SUPPRESSED] if cut.height > 1 else [missing]
    numbers = None if cut.numbers is None else np.append(cut.numbers, np.nan)
    return Hierarchy.from_rows([*cut.to_rows(), branch], kind=cut.kind, numbers=numbers,
                               name=name)


def _with_domain(cut: Hierarchy, whole: Hierarchy) -> Hierarchy:
    """``cut`` remembering how many of ``whole``'s ground values each of its labels covers
    (ground values ``whole`` lacks, such as an added missing label, count too)."""
    added = ~isin_text(cut.ground.astype(str), whole.ground.astype(str))
    leaves = []
    for level in range(cut.height):
        counts = _domain_leaves(whole, level)
        known = dict(zip(whole.labels[level].astype(str), counts.tolist()))
        extra = np.bincount(cut.codes[level][added], minlength=len(cut.labels[level]))
        leaves.append(np.array([known.get(label, 0) for label in
                                cut.labels[level].astype(str)], np.int64) + extra)
    size = (whole.domain_size or len(whole.ground)) + int(added.sum())
    return dataclasses.replace(cut, domain_leaves=tuple(leaves), domain_size=size)


def format_args(*args: object, **kwargs: object) -> str:
    """``5, 10, bottom=0`` for a builder's repr (keyword arguments left out when None)."""
    parts = [repr(a) for a in args]
    parts += [f"{k}={v!r}" for k, v in kwargs.items() if v is not None]
    return ", ".join(parts)


def domain_shares(h: Hierarchy, level: int) -> np.ndarray:
    """Per label of ``level``: the share of the hierarchy's domain it covers (arx-loss)."""
    if h.domain_leaves is not None and h.domain_size:
        return np.asarray(h.domain_leaves[level], dtype=float) / float(h.domain_size)
    return np.bincount(h.codes[level], minlength=len(h.labels[level])) / float(len(h.ground))


def domain_size(h: Hierarchy) -> int:
    """The number of ground values of the hierarchy as given (arx-loss's D)."""
    return int(h.domain_size or len(h.ground))
