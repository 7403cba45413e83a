"""Flat: every value generalizes straight to ``*``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from blendin.hierarchy.core import Hierarchy, HierarchyBuilder, assemble, distinct_text


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
