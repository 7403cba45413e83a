"""Flat: every value generalizes straight to ``*``; as is: no value generalizes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from blendin.errors import BlendinError
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


class AsIs(HierarchyBuilder):
    """Every value stays as it is (height 1): the column is never generalized, only
    suppressed (whole records, or single cells with ``suppression = "cells"``)."""

    def build(self, values: np.ndarray, name: str = "column", missing: str = "") -> Hierarchy:
        ground = distinct_text(values)
        if not len(ground):
            raise BlendinError(f"column {name!r} has no values", fix="give a column with values")
        return Hierarchy.from_rows([[value] for value in ground.tolist()], name=name)

    def to_toml(self, base_dir: Path | None = None) -> dict:
        return {"as_is": True}

    def __repr__(self) -> str:
        return "as_is()"


def as_is() -> AsIs:
    """Value -> itself: the attribute is released as it is or suppressed, never generalized.

    >>> as_is().build(["m", "f"]).to_rows()
    [['f'], ['m']]
    """
    return AsIs()
