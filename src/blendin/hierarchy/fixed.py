"""A Hierarchy already built, used where a builder is expected."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from blendin.errors import BlendinError
from blendin.hierarchy.core import Hierarchy, HierarchyBuilder, restrict


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

    def given(self) -> Hierarchy:
        return self.hierarchy

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
