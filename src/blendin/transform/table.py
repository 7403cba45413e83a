"""Column transforms of a release table: microaggregation and PRAM, as a spec names them
(``{ microaggregate = { k = 3 } }``, ``{ pram = { pd = 0.8 } }``), applied to the released
records and described for the report.

Columns with the same microaggregation (k and method) are aggregated together: MDAV over
all of them, as sdcMicro's ``microaggregation`` over its ``variables``.

>>> t = pa.table({"income": [1.0, 2.0, 3.0, 10.0, 11.0, 12.0]})
>>> out, done = apply_transforms(t, {"income": Microaggregate(3)})
>>> out.column("income").to_pylist(), done[0].smallest
([2.0, 2.0, 2.0, 11.0, 11.0, 11.0], 3)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import as_text
from blendin.errors import BlendinError, toml_value
from blendin.transform.microaggregation import (
    Loss,
    Microaggregate,
    aggregated,
    smallest_group,
)
from blendin.transform.pram import Pram

Transform = Microaggregate | Pram

#: the keys of a transform's TOML table
KINDS = ("microaggregate", "pram")


def transform_from_toml(entry: Mapping, where: str) -> Transform:
    """The transform an inline TOML table describes.

    >>> transform_from_toml({"microaggregate": {"k": 3}}, "income")
    Microaggregate(k=3, method='mdav')
    """
    kinds = [k for k in entry if k in KINDS]
    if len(kinds) != 1 or len(entry) != 1:
        raise BlendinError(f"{where}: a transform is one of {', '.join(KINDS)}, got "
                           f"{dict(entry)!r}",
                           fix="write e.g. { microaggregate = { k = 3 } } or "
                               "{ pram = { pd = 0.8 } }")
    options = entry[kinds[0]]
    if not isinstance(options, Mapping):
        raise BlendinError(f"{where}: {kinds[0]} takes a table of options, got "
                           f"{toml_value(options)}",
                           fix=f"write e.g. {kinds[0]} = "
                               + ("{ k = 3 }" if kinds[0] == "microaggregate"
                                  else "{ pd = 0.8 }"))
    valid = {"microaggregate": ("k", "method"),
             "pram": ("pd", "alpha", "transition", "seed")}[kinds[0]]
    unknown = [k for k in options if k not in valid]
    if unknown:
        raise BlendinError(f"{where}: unknown {kinds[0]} option {unknown[0]!r}",
                           fix=f"use only {', '.join(valid)}")
    if kinds[0] == "microaggregate":
        if "k" not in options:
            raise BlendinError(f"{where}: microaggregate needs k",
                               fix="write e.g. microaggregate = { k = 3 }")
        return Microaggregate(**options)
    return Pram(**options, where=where)


@dataclass
class Applied:
    """What one transform did to the release: its columns and figures."""

    columns: tuple[str, ...]
    transform: Transform
    #: microaggregation: the groups, the fewest records sharing a released tuple, and the
    #: information loss against the values before (sdcMicro's IL1, IL1s, squared error)
    groups: int = 0
    smallest: int = 0
    loss: Loss | None = None
    #: PRAM: the levels, the transition matrix used, and the records whose value changed
    levels: list[str] = field(default_factory=list)
    matrix: list[list[float]] = field(default_factory=list)
    changed: int = 0

    @property
    def kind(self) -> str:
        return "microaggregate" if isinstance(self.transform, Microaggregate) else "pram"

    def to_dict(self) -> dict:
        out = {"columns": list(self.columns), "kind": self.kind,
               **next(iter(self.transform.to_toml().values()))}
        if self.kind == "microaggregate":
            out.update(groups=self.groups, smallest=self.smallest, il1=self.loss.il1,
                       il1s=self.loss.il1s, squared_error=self.loss.squared_error)
        else:
            out.update(levels=self.levels, matrix=self.matrix, changed=self.changed)
        return out

    def line(self) -> str:
        """One line for the terminal."""
        names = ", ".join(self.columns)
        if self.kind == "microaggregate":
            t = self.transform
            return (f"microaggregated: {names} ({t.method}, k = {t.k}): {self.groups:,} "
                    f"groups, the fewest records sharing values {self.smallest:,}; IL1s "
                    f"{self.loss.il1s:.6g}, squared error {self.loss.squared_error:.6g}")
        t = self.transform
        how = ("the transition matrix given" if t.transition is not None
               else f"invariant, pd {t.pd:g}, alpha {t.alpha:g}")
        return (f"PRAM: {names} ({how}, seed {t.seed}): {self.changed:,} values changed "
                f"among {len(self.levels)} levels")


def apply_transforms(table: pa.Table, transforms: Mapping[str, Transform],
                     missing: str = "", *, within: Sequence[str] = (),
                     qis: Sequence[str] = (), floor: int = 0
                     ) -> tuple[pa.Table, list[Applied]]:
    """``table`` with the ``transforms`` applied (columns replaced in place), and what each
    did.

    A microaggregated quasi-identifier (one of ``qis``) is aggregated within each class of
    the released ``within`` columns (the generalized quasi-identifiers), in groups of at
    least its k and ``floor`` (k-anonymity's k): across classes, a group's mean would tell
    the records of a class apart (a class of 3 women, one of them alone in her income's
    group).

    They work on the rows sorted by every column, then put back in the table's order: a
    release's order is random, and the same input and seeds must make the same release."""
    if not table.num_rows:
        return table, []
    order = pc.sort_indices(table, [(name, "ascending") for name in table.column_names])
    back = np.empty(table.num_rows, np.int64)
    back[order.to_numpy()] = np.arange(table.num_rows)
    table = table.take(order)
    done = []
    for columns, transform in transform_sets(transforms):
        if isinstance(transform, Microaggregate):
            classes = (class_of(table, within) if set(columns) & set(qis) else None)
            table, applied = _microaggregate(table, columns, transform, classes, floor)
        else:
            table, applied = _pram(table, columns[0], transform, missing)
        done.append(applied)
    return table.take(pa.array(back)), done


def transform_sets(transforms: Mapping[str, Transform]) -> list[tuple[tuple[str, ...], Transform]]:
    """The column sets transformed together: the columns of one MDAV microaggregation, and
    every other column alone (an "optimal" microaggregation among them)."""
    together: dict[Transform, list[str]] = {}
    alone = []
    for name, transform in transforms.items():
        if isinstance(transform, Microaggregate) and transform.method == "mdav":
            together.setdefault(transform, []).append(name)
        else:
            alone.append(((name,), transform))
    return [(tuple(names), t) for t, names in together.items()] + alone


def numbers(table: pa.Table, columns: tuple[str, ...]) -> np.ndarray:
    """The columns as a float matrix (rows × columns); text that reads as numbers is read
    so; anything else is refused with its column and value named."""
    out = []
    for name in columns:
        column = table.column(name)
        if column.null_count:
            raise BlendinError(f"column {name!r} has {column.null_count:,} missing values, "
                               "and microaggregation needs a number in every cell",
                               fix=f"fill or drop the missing values of {name!r}, or remove "
                                   "its microaggregate")
        try:
            out.append(pc.cast(column, pa.float64()).to_numpy())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            text = as_text(column)
            bad = pc.filter(text, pc.invert(pc.match_substring_regex(
                text, r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"))).to_pylist()
            raise BlendinError(
                f"column {name!r} holds {bad[0] if bad else 'text'!r}, which is not a number",
                fix=f"microaggregate only numeric columns; remove it from {name!r}") from None
    return np.stack(out, axis=1) if out else np.zeros((table.num_rows, 0))


def class_of(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """Each row's class (0, 1, ...): its tuple of ``columns`` (all rows one class without
    columns)."""
    if not columns:
        return np.zeros(table.num_rows, np.int64)
    codes = np.stack([pc.dictionary_encode(as_text(table.column(c)).combine_chunks())
                      .indices.to_numpy(zero_copy_only=False) for c in columns], axis=1)
    return np.unique(codes, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _microaggregate(table: pa.Table, columns: tuple[str, ...], transform: Microaggregate,
                    classes: np.ndarray | None = None, floor: int = 0
                    ) -> tuple[pa.Table, Applied]:
    x = numbers(table, columns)
    if classes is None:
        (group,) = transform.groups(x)  # one grouping: "optimal" sets hold one column
    else:
        group = _within(x, columns, replace(transform, k=max(transform.k, floor)), classes)
    released = aggregated(x, group)
    for j, name in enumerate(columns):
        at = table.schema.get_field_index(name)
        table = table.set_column(at, pa.field(name, pa.float64()), pa.array(released[:, j]))
    return table, Applied(columns, transform, groups=int(group.max()) + 1,
                          smallest=smallest_group(released), loss=Loss.of(x, released))


def _within(x: np.ndarray, columns: tuple[str, ...], transform: Microaggregate,
            classes: np.ndarray) -> np.ndarray:
    """The groups of ``transform`` made within each class (a class of fewer than its k
    records is refused: its mean would be theirs alone)."""
    order = np.argsort(classes, kind="stable")
    cuts = np.flatnonzero(np.diff(classes[order])) + 1
    group = np.empty(len(x), np.int64)
    made = 0
    for rows in np.split(order, cuts):
        if len(rows) < transform.k:
            names = ", ".join(map(repr, columns))
            raise BlendinError(
                f"{names} is a quasi-identifier microaggregated within each released class "
                f"in groups of k = {transform.k} (its k or k-anonymity's, the larger), and a "
                f"class holds {len(rows)}",
                fix="raise k-anonymity's k to at least the microaggregate k, or lower "
                    "the microaggregate k (with --suppressed keep the suppressed records are "
                    "a class: drop them)")
        (inner,) = transform.groups(x[rows])
        group[rows] = inner + made
        made += int(inner.max()) + 1
    return group


def _pram(table: pa.Table, name: str, transform: Pram, missing: str
          ) -> tuple[pa.Table, Applied]:
    before = as_text(table.column(name), missing).to_numpy(zero_copy_only=False).astype(str)
    after, levels, matrix = transform.apply(before)
    at = table.schema.get_field_index(name)
    table = table.set_column(at, pa.field(name, pa.string()), pa.array(after.astype(str)))
    return table, Applied((name,), transform, levels=[str(v) for v in levels],
                          matrix=matrix.round(12).tolist(),
                          changed=int((after != before).sum()))
