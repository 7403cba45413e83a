"""Hierarchy builders: recipes that make a Hierarchy from the distinct values of a column.

A builder is what a Spec holds for a quasi-identifier: it knows how to generalize (widths,
a mask, a date ladder, a tree, a file) and builds the matrices once the values are known.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

import numpy as np

from blendin.hierarchy.core import Hierarchy


class HierarchyBuilder(ABC):
    """Makes the Hierarchy of one attribute from its distinct values (as text)."""

    @abstractmethod
    def build(self, values: np.ndarray, name: str = "column") -> Hierarchy:
        """The hierarchy covering ``values`` (distinct text values of column ``name``)."""

    @abstractmethod
    def to_toml(self, base_dir: Path | None = None) -> dict:
        """The inline TOML table that makes this builder (paths relative to ``base_dir``)."""

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(type(self))
