"""Hierarchy builders: recipes that make a Hierarchy from the distinct values of a column.

A builder is what a Spec holds for a quasi-identifier: it knows how to generalize (widths,
a mask, a date ladder, a tree, a file) and builds the matrices once the values are known.
The builders live in their own modules (intervals, masking, dates, tree, arx); this one holds
the base class, the two trivial builders (``flat``, ``fixed``) and ``builder_from_toml``.

Every builder treats the missing label (what ``frequency.as_text`` turns nulls into, ``""`` by
default) as a value of its own: it stays itself at every level up to ``*``.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.errors import BlendinError, preview
from blendin.hierarchy.core import SUPPRESSED, Hierarchy


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


# ---------------------------------------------------------------------------------------------
# flat and fixed


class Flat(HierarchyBuilder):
    """Every value generalizes straight to ``*`` (height 2)."""

    def build(self, values: np.ndarray, name: str = "column", missing: str = "") -> Hierarchy:
        ground = distinct_text(values)
        return assemble(ground, [], name=name, missing=missing)

    def to_toml(self, base_dir: Path | None = None) -> dict:
        return {"flat": True}

    def __repr__(self) -> str:
        return "flat()"


def flat() -> Flat:
    """Value -> ``*``: the attribute is either released as it is or fully suppressed.

    >>> flat().build(["m", "f"]).to_rows()
    [['f', '*'], ['m', '*']]
    """
    return Flat()


class Fixed(HierarchyBuilder):
    """A Hierarchy that is already built, used where a builder is expected."""

    def __init__(self, hierarchy: Hierarchy) -> None:
        if not isinstance(hierarchy, Hierarchy):
            raise BlendinError(
                f"fixed() needs a Hierarchy, got {type(hierarchy).__name__}",
                fix="pass a Hierarchy, e.g. Hierarchy.from_rows(rows)",
            )
        self.hierarchy = hierarchy

    def build(self, values: np.ndarray, name: str = "column", missing: str = "") -> Hierarchy:
        return restrict(self.hierarchy, values, name, missing)

    def to_toml(self, base_dir: Path | None = None) -> dict:
        raise BlendinError(
            "a hierarchy built in Python has no TOML form",
            fix="save it with to_csv(hierarchy, 'name.csv') and refer to it as "
            "{ csv = \"name.csv\" }",
        )

    def __eq__(self, other: object) -> bool:
        return type(other) is Fixed and other.hierarchy is self.hierarchy

    def __hash__(self) -> int:
        return id(self.hierarchy)

    def __repr__(self) -> str:
        return f"fixed(<Hierarchy height {self.hierarchy.height}>)"


def fixed(hierarchy: Hierarchy) -> Fixed:
    """A built Hierarchy as a builder: build() checks that it covers the data.

    >>> h = Hierarchy.from_rows([["a", "x", "*"], ["b", "x", "*"], ["c", "y", "*"]])
    >>> fixed(h).build(["a", "b"]).to_rows()
    [['a', 'x', '*'], ['b', 'x', '*']]
    """
    return Fixed(hierarchy)


def as_builder(hierarchy: HierarchyBuilder | Hierarchy) -> HierarchyBuilder:
    """A builder for what a Spec holds: a builder as it is, a Hierarchy wrapped in fixed()."""
    if isinstance(hierarchy, HierarchyBuilder):
        return hierarchy
    if isinstance(hierarchy, Hierarchy):
        return Fixed(hierarchy)
    raise BlendinError(
        f"expected a hierarchy builder or a Hierarchy, got {type(hierarchy).__name__}",
        fix="use intervals(...), masking(), dates(...), tree({...}), flat() or "
        "from_csv('file.csv')",
    )


# ---------------------------------------------------------------------------------------------
# TOML

#: main key -> the other keys its table may have
TOML_KEYS: dict[str, tuple[str, ...]] = {
    "csv": ("delimiter", "encoding", "kind"),
    "intervals": ("bottom", "top"),
    "masking": ("char",),
    "dates": ("format",),
    "tree": (),
    "flat": (),
}


def builder_from_toml(table: dict, base_dir: Path | None = None) -> HierarchyBuilder:
    """The builder an inline TOML table describes; relative csv paths resolve from base_dir.

    >>> builder_from_toml({"intervals": [5, 10], "bottom": 0})
    intervals(5, 10, bottom=0)
    >>> builder_from_toml({"flat": True}).to_toml()
    {'flat': True}
    """
    if not isinstance(table, dict):
        raise BlendinError(
            f"a hierarchy must be a TOML table, got {table!r}",
            fix='write e.g. { intervals = [5, 10] } or { csv = "age.csv" }',
        )
    main = [k for k in table if k in TOML_KEYS]
    if len(main) != 1:
        unknown = [k for k in table if not any(k in (m, *o) for m, o in TOML_KEYS.items())]
        if unknown:
            raise _unknown_key(unknown[0], list(TOML_KEYS))
        found = "none" if not main else " and ".join(main)
        raise BlendinError(
            f"a hierarchy table needs exactly one of {', '.join(TOML_KEYS)}; found {found}",
            fix='write e.g. { intervals = [5, 10] } or { csv = "age.csv" }',
        )
    key = main[0]
    for k in table:
        if k != key and k not in TOML_KEYS[key]:
            raise _unknown_key(k, [key, *TOML_KEYS[key]], key)
    return _MAKERS[key](table, base_dir)


def _unknown_key(key: str, valid: list[str], builder: str | None = None) -> BlendinError:
    where = f"the {builder} hierarchy table" if builder else "a hierarchy table"
    return BlendinError(
        f"unknown key {key!r} in {where}",
        fix=f"use only {', '.join(valid)}",
    )


def _make_csv(table: dict, base_dir: Path | None) -> HierarchyBuilder:
    from blendin.hierarchy.arx import from_csv

    path = Path(str(table["csv"]))
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    return from_csv(path, table.get("delimiter"), encoding=table.get("encoding", "utf-8"),
                    kind=table.get("kind"))


def _make_intervals(table: dict, base_dir: Path | None) -> HierarchyBuilder:
    from blendin.hierarchy.intervals import intervals

    widths = table["intervals"]
    if not isinstance(widths, list):
        widths = [widths]
    return intervals(*widths, bottom=table.get("bottom"), top=table.get("top"))


def _make_masking(table: dict, base_dir: Path | None) -> HierarchyBuilder:
    from blendin.hierarchy.masking import masking

    width = table["masking"]
    if width is True:
        width = None
    elif width is False or not isinstance(width, int):
        raise BlendinError(
            f"masking = {width!r} is not a width",
            fix="write masking = true (all values have one width) or masking = 5",
        )
    return masking(width, table.get("char", "*"))


def _make_dates(table: dict, base_dir: Path | None) -> HierarchyBuilder:
    from blendin.hierarchy.dates import dates

    levels = table["dates"]
    if levels is True:
        levels = []
    elif isinstance(levels, str):
        levels = [levels]
    elif not isinstance(levels, list):
        raise BlendinError(
            f"dates = {levels!r} is not a list of levels",
            fix='write e.g. dates = ["month", "quarter", "year"]',
        )
    return dates(*levels, format=table.get("format"))


def _make_tree(table: dict, base_dir: Path | None) -> HierarchyBuilder:
    from blendin.hierarchy.tree import tree

    return tree(table["tree"])


def _make_flat(table: dict, base_dir: Path | None) -> HierarchyBuilder:
    if table["flat"] is not True:
        raise BlendinError(
            f"flat = {table['flat']!r}", fix="write flat = true, or choose another hierarchy"
        )
    return Flat()


_MAKERS = {
    "csv": _make_csv,
    "intervals": _make_intervals,
    "masking": _make_masking,
    "dates": _make_dates,
    "tree": _make_tree,
    "flat": _make_flat,
}
