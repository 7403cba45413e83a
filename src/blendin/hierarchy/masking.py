"""Masking for fixed-width codes (ZIP, postcodes, ICD codes): one more character per level.

``02138 -> 0213* -> 021** -> 02*** -> 0**** -> *``: level j masks the last j characters, and
the level where every character would be masked is the single top value ``*``. So a code of
width W gives a hierarchy of height W + 1.

All codes must have one width. ``masking(width=N)`` accepts shorter codes made of digits only
(numbers that lost their leading zeros, as ZIP codes read as integers do) and left-pads them
with ``0`` before masking; the ground value stays as the data has it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.errors import BlendinError, preview
from blendin.hierarchy.core import (
    Hierarchy,
    HierarchyBuilder,
    assemble,
    distinct_text,
    format_args,
)


class Masking(HierarchyBuilder):
    """Mask codes from the right, one character per level."""

    def __init__(self, width: int | None = None, char: str = "*") -> None:
        if width is not None and (isinstance(width, bool) or not isinstance(width, int)
                                  or width < 1):
            raise BlendinError(f"masking(width={width!r}): the width must be a positive integer",
                               fix="give the width of the codes, e.g. masking = 5 in the spec "
                               "(Python: masking(width=5))")
        if not isinstance(char, str) or len(char) != 1:
            raise BlendinError(f"masking(char={char!r}): the mask must be one character",
                               fix='use e.g. char="*"')
        self.width = width
        self.char = char

    def build(self, values: np.ndarray, name: str = "column", missing: str = "") -> Hierarchy:
        ground = distinct_text(values)
        is_missing = ground == missing
        codes = pa.array(ground[~is_missing].astype(str).tolist(), type=pa.string())
        codes, width = self._padded(codes, name)
        levels = []
        for j in range(1, width):
            masked = pc.utf8_replace_slice(codes, start=width - j, stop=width,
                                           replacement=self.char * j)
            labels = np.full(len(ground), missing, dtype=object)
            labels[~is_missing] = masked.to_pylist()
            levels.append(labels)
        return assemble(ground, levels, name=name, missing=missing, is_missing=is_missing)

    def _padded(self, codes: pa.Array, name: str) -> tuple[pa.Array, int]:
        """The codes at one width (short digit codes left-padded with 0 when width is given)."""
        lengths = pc.utf8_length(codes).to_numpy(zero_copy_only=False)
        values = np.asarray(codes.to_pylist(), dtype=object)
        if self.width is None:
            widths = np.unique(lengths)
            if len(widths) > 1:
                raise BlendinError(
                    f"column {name!r} has codes of {len(widths)} different widths "
                    f"({', '.join(map(str, widths[:5]))}), e.g. "
                    f"{preview([values[lengths == w][0] for w in widths[:3]])}",
                    fix=f"give the width: masking = {widths.max()} in the spec (Python: "
                    f"masking(width={widths.max()})); shorter codes of digits "
                    "are left-padded with 0; or clean the codes",
                )
            return codes, int(widths[0]) if len(widths) else 0
        width = self.width
        too_long = values[lengths > width]
        if len(too_long):
            raise BlendinError(
                f"column {name!r} has codes longer than {width} characters: {preview(too_long)}",
                fix=f"use masking = {lengths.max()} in the spec (Python: "
                f"masking(width={lengths.max()})), or clean the codes",
            )
        digits = pc.match_substring_regex(codes, r"^[0-9]*$").to_numpy(zero_copy_only=False)
        short_text = values[(lengths < width) & ~digits]
        if len(short_text):
            raise BlendinError(
                f"column {name!r} has codes shorter than {width} characters that are not "
                f"digits, which cannot be padded: {preview(short_text)}",
                fix="clean the codes, or use another hierarchy ({ tree = {...} } or "
                "{ csv = \"file.csv\" } in the spec)",
            )
        return pc.utf8_lpad(codes, width=width, padding="0"), width

    def check_type(self, kind: pa.DataType, name: str = "column") -> None:
        """Numbers have lost their leading zeros (ZIP 02138 read as 2138): without a width,
        masking them would mask the wrong characters, so stop and ask for it."""
        if self.width is None and (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            raise BlendinError(
                f"column {name!r} holds numbers ({kind}), not codes: codes with leading zeros "
                "(ZIP 02138) have lost them (2138), and masking would mask the wrong digits",
                fix="give the width of the codes: masking = 5 in the spec (Python: "
                "masking(width=5)), or read the column as text (pandas: dtype=str)")

    def to_toml(self, base_dir: Path | None = None) -> dict:
        table: dict = {"masking": True if self.width is None else self.width}
        if self.char != "*":
            table["char"] = self.char
        return table

    def __repr__(self) -> str:
        char = None if self.char == "*" else self.char
        return f"masking({format_args(width=self.width, char=char)})"


def masking(width: int | None = None, char: str = "*") -> Masking:
    """Codes masked from the right, one character per level, up to ``*``.

    >>> masking().build(["02138", "02139"], "zip").to_rows()[0]
    ['02138', '0213*', '021**', '02***', '0****', '*']
    >>> masking(width=5).build(["2138"]).to_rows()[0]
    ['2138', '0213*', '021**', '02***', '0****', '*']
    """
    return Masking(width, char)
