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
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from blendin.errors import BlendinError, preview

SUPPRESSED = "*"


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
            codes = pc.index_in(column, value_set=self._ground_arrow)
            if codes.null_count:
                raise self._uncovered(pc.filter(column, codes.is_null()), name)
            return np.asarray(codes.to_numpy(zero_copy_only=False), dtype=np.int32)
        parts = [self._encode_dictionary(chunk, name) for chunk in column.chunks]
        return parts[0] if len(parts) == 1 else np.concatenate([np.zeros(0, np.int32), *parts])

    def _encode_dictionary(self, chunk: pa.DictionaryArray, name: str) -> np.ndarray:
        entries = pc.index_in(chunk.dictionary, value_set=self._ground_arrow)
        # an entry not covered, or a null index, is -1: an error only if a row has it
        lookup = np.append(entries.fill_null(-1).to_numpy(), -1).astype(np.int32)
        codes = lookup[chunk.indices.fill_null(len(entries)).to_numpy()]
        if (codes < 0).any():
            raise self._uncovered(chunk.filter(pa.array(codes < 0)), name)
        return codes

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
    def _ground_arrow(self) -> pa.Array:
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
        dupes = pd.unique(table[pd.Series(table[:, 0]).duplicated().to_numpy(), 0])
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
    codes, labels = pd.factorize(column, sort=False)
    return np.asarray(labels, dtype=object), codes.astype(np.int32)


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
    ground = hierarchy.ground.astype(str)
    covered = isin_text(values, ground)
    uncovered = values[~covered & (values != missing)]
    if len(uncovered):
        raise BlendinError(
            f"{source} of {name!r} does not cover {len(uncovered)} value(s) of the data: "
            f"{preview(uncovered)}",
            fix=f"add a row for each of these values to {source} of {name!r}",
        )
    add_missing = not covered.all()  # only the missing label can be left
    keep = isin_text(ground, values)
    if keep.all() and not add_missing:
        return hierarchy
    table = np.stack([hierarchy.label_array(lv) for lv in range(hierarchy.height)], axis=1)
    table = table[keep]
    numbers = None if hierarchy.numbers is None else hierarchy.numbers[keep]
    if add_missing:
        branch = np.array([[missing] * (hierarchy.height - 1) + [SUPPRESSED]], dtype=object)
        if hierarchy.height == 1:
            branch = np.array([[missing]], dtype=object)
        table = np.concatenate([table, branch])
        if numbers is not None:
            numbers = np.append(numbers, np.nan)
    cut = Hierarchy.from_rows(table.tolist(), kind=hierarchy.kind, numbers=numbers, name=name)
    return _with_domain(cut, hierarchy)


def _with_domain(cut: Hierarchy, whole: Hierarchy) -> Hierarchy:
    """``cut`` remembering how many of ``whole``'s ground values each of its labels covers
    (ground values ``whole`` lacks, such as an added missing label, count too)."""
    added = ~isin_text(cut.ground.astype(str), whole.ground.astype(str))
    leaves = []
    for level in range(cut.height):
        if whole.domain_leaves is not None:
            counts = np.asarray(whole.domain_leaves[level], dtype=np.int64)
        else:
            counts = np.bincount(whole.codes[level], minlength=len(whole.labels[level]))
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
