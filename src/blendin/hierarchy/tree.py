"""Category trees written as nested mappings: groups hold subgroups or lists of leaves.

``{"Married": ["Married-civ-spouse", "Married-AF-spouse"], "Never-married": {}}``: a key
mapped to a mapping is a group; a key mapped to a list holds those leaves; a key mapped to
nothing (``None``, ``{}`` or ``[]``) is itself a leaf. Leaves are the ground values.

Leaves may sit at different depths, but every value needs the same number of levels (as in
ARX). A shallower leaf therefore keeps its own value at the extra levels just above the ground,
and joins its group at the group's level: in ``{"A": {"B": ["x"], "y": {}}}`` the rows are
``x;B;A;*`` and ``y;y;A;*``. It stays specific as long as possible and every group label
keeps its level.
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from pathlib import Path

import numpy as np

from blendin.errors import BlendinError
from blendin.hierarchy.core import SUPPRESSED, Hierarchy, HierarchyBuilder, restrict


def _leaf_text(value: object, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Real) and not isinstance(value, bool):
        return str(value)
    raise BlendinError(
        f"tree: {value!r} under {where!r} is not a value",
        fix="write leaves as text in a list, e.g. {\"Married\": [\"civ-spouse\", \"AF-spouse\"]}",
    )


def _normalize(node: object, where: str) -> dict | list:
    """The tree as TOML can hold it: groups are dicts, leaves ``{}`` or list items."""
    if isinstance(node, Mapping):
        out: dict = {}
        for key, child in node.items():
            key = _leaf_text(key, where)
            if child is None or (isinstance(child, Mapping | list | tuple) and len(child) == 0):
                out[key] = {}
            else:
                out[key] = _normalize(child, key)
        return out
    if isinstance(node, list | tuple):
        return [_leaf_text(v, where) for v in node]
    raise BlendinError(
        f"tree: {node!r} under {where!r} is neither a group nor a list of values",
        fix="map each group to a mapping of subgroups or a list of its values",
    )


def _paths(node: dict | list, groups: tuple[str, ...], out: list) -> None:
    """(leaf, groups from the top down) for every leaf."""
    if isinstance(node, list):
        out.extend((leaf, groups) for leaf in node)
        return
    for key, child in node.items():
        if child == {}:
            out.append((key, groups))
        else:
            _paths(child, (*groups, key), out)


class Tree(HierarchyBuilder):
    """A category tree given as a nested mapping; ``*`` is added on top."""

    def __init__(self, mapping: Mapping) -> None:
        if not isinstance(mapping, Mapping) or not mapping:
            raise BlendinError(f"tree({mapping!r}) needs a non-empty mapping of groups",
                               fix='write e.g. tree = { young = ["18", "19"], old = ["80"] } '
                               '(Python: tree({"young": ["18", "19"], "old": ["80"]}))')
        if len(mapping) == 1 and SUPPRESSED in mapping:  # {"*": {...}}: the top is implied
            mapping = mapping[SUPPRESSED]
        self.mapping = _normalize(mapping, "tree")
        self._hierarchy = self._full()

    def _full(self) -> Hierarchy:
        paths: list = []
        _paths(self.mapping, (), paths)
        leaves = [leaf for leaf, _ in paths]
        if len(set(leaves)) != len(leaves):
            seen: set = set()
            dupe = next(v for v in leaves if v in seen or seen.add(v))
            raise BlendinError(f"tree: the value {dupe!r} is listed more than once",
                               fix="list each value under one group only")
        depth = max(len(groups) for _, groups in paths)
        rows = [
            [leaf] * (1 + depth - len(groups)) + list(reversed(groups)) + [SUPPRESSED]
            for leaf, groups in paths
        ]
        return Hierarchy.from_rows(rows, name="tree")

    def build(self, values: np.ndarray, name: str = "column", missing: str = "") -> Hierarchy:
        return restrict(self._hierarchy, values, name, missing, source="the tree")

    def given(self) -> Hierarchy:
        return self._hierarchy

    def to_toml(self, base_dir: Path | None = None) -> dict:
        return {"tree": self.mapping}

    def __eq__(self, other: object) -> bool:
        return type(other) is Tree and other.mapping == self.mapping

    def __hash__(self) -> int:
        return hash(Tree)

    def __repr__(self) -> str:
        return f"tree({self.mapping!r})"


def tree(mapping: Mapping) -> Tree:
    """A hierarchy from a nested mapping of groups (leaves are the data values), then ``*``.

    >>> t = tree({"Married": {"civ": ["Married-civ-spouse"], "Married-AF-spouse": {}},
    ...           "Never-married": None})
    >>> for row in t.build(["Married-civ-spouse", "Married-AF-spouse", "Never-married"]).to_rows():
    ...     print(";".join(row))
    Married-AF-spouse;Married-AF-spouse;Married;*
    Married-civ-spouse;civ;Married;*
    Never-married;Never-married;Never-married;*
    """
    return Tree(mapping)
