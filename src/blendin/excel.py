"""Excel output that shows the equivalence classes: each class on its own background colour.

A Mondrian release interleaves its classes row by row (rows stay in the source order); in a
spreadsheet the colour lets a reader see at a glance which rows blend in together. Colours
are a pure function of the class id (hues spaced by the golden angle, so neighbouring ids
differ strongly), pale enough that black text keeps a contrast ratio of at least 7:1
(WCAG AAA). Use :func:`class_styler` as the ``xlsx_styler`` of ``blendin.io.write_table``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from blendin.codes import combine_keys
from blendin.io import to_arrow

#: golden-ratio hue step: consecutive class ids get well separated hues
_HUE_STEP = 0.6180339887498949
#: a few saturation/lightness pairs, cycled so ids with close hues still differ
_TONES = ((0.30, 0.97), (0.45, 0.96), (0.22, 0.90))

__all__ = ["class_colours", "class_ids", "class_styler", "contrast_with_black"]


def class_ids(table, quasi_identifiers: Sequence[str]) -> np.ndarray:
    """Equivalence class of every row of a release, from its released QI values.

    Classes are numbered 0, 1, ... in order of first appearance; rows whose every QI is
    ``*`` (suppressed) get -1. Works for any release (full-domain or Mondrian), so
    ``class_styler(class_ids(release, qis))`` colours either.

    >>> import pyarrow as pa
    >>> t = pa.table({"age": ["20-29", "30-39", "20-29", "*"], "sex": ["f", "m", "f", "*"]})
    >>> class_ids(t, ["age", "sex"]).tolist()
    [0, 1, 0, -1]
    """
    import pyarrow.compute as pc


    table = to_arrow(table)
    n = table.num_rows
    if not quasi_identifiers or n == 0:
        return np.zeros(n, np.int64)
    codes, radices = [], []
    suppressed = np.ones(n, bool)
    for name in quasi_identifiers:
        column = pc.cast(table.column(name), "string").combine_chunks()
        encoded = pc.dictionary_encode(pc.fill_null(column, ""))
        codes.append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
        radices.append(max(len(encoded.dictionary), 1))
        suppressed &= pc.equal(column, "*").fill_null(False).to_numpy(zero_copy_only=False)
    key = combine_keys(codes, radices)
    ids = np.unique(key, return_inverse=True)[1].reshape(-1)
    return _first_seen(np.where(suppressed, -1, ids))


def _first_seen(ids: np.ndarray) -> np.ndarray:
    """Renumber non-negative ids 0, 1, ... by first appearance (negatives stay -1)."""
    valid = ids >= 0
    if not valid.any():
        return ids
    uniq, first, inverse = np.unique(ids[valid], return_index=True, return_inverse=True)
    rank = np.empty(len(uniq), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(uniq))
    out = np.full(len(ids), -1, np.int64)
    out[valid] = rank[inverse.reshape(-1)]
    return out


def class_colours(groups: Sequence[int] | np.ndarray) -> np.ndarray:
    """``RRGGBB`` fill colour of every class id (None where the id is negative or missing).

    >>> class_colours([0, 1, 0, -1]).tolist()
    ['F7ADAD', '87A7F5', 'F7ADAD', None]
    """
    ids = np.asarray([-1 if g is None else g for g in groups], dtype=float)
    ids = np.where(np.isnan(ids), -1, ids).astype(np.int64)
    valid = ids >= 0
    g = np.where(valid, ids, 0)
    hue = (g * _HUE_STEP) % 1.0
    tone = np.array(_TONES)[g % len(_TONES)]
    rgb = _hsv_to_rgb(hue, tone[:, 0], tone[:, 1])
    rgb = _lift(rgb)
    codes = np.round(rgb * 255).astype(np.int64)
    packed = (codes[:, 0] << 16) | (codes[:, 1] << 8) | codes[:, 2]
    text = np.array([f"{v:06X}" for v in packed], dtype=object)
    text[~valid] = None
    return text


def _hsv_to_rgb(h: np.ndarray, s: np.ndarray, v: np.ndarray) -> np.ndarray:
    i = np.floor(h * 6).astype(np.int64) % 6
    f = h * 6 - np.floor(h * 6)
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    table = np.stack([
        np.stack([v, t, p], 1), np.stack([q, v, p], 1), np.stack([p, v, t], 1),
        np.stack([p, q, v], 1), np.stack([t, p, v], 1), np.stack([v, p, q], 1)])
    return table[i, np.arange(len(h))]


def _luminance(rgb: np.ndarray) -> np.ndarray:
    """WCAG relative luminance of sRGB colours in [0, 1]."""
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def _lift(rgb: np.ndarray, floor: float = 0.32) -> np.ndarray:
    """Mix with white until the luminance reaches ``floor`` (black text: contrast >= 7.4)."""
    out = rgb.copy()
    for _ in range(20):  # a few halvings of the gap to white suffice
        dark = _luminance(out) < floor
        if not dark.any():
            break
        out[dark] = out[dark] * 0.75 + 0.25
    return out


def contrast_with_black(colour: str) -> float:
    """WCAG contrast ratio of black text on the ``RRGGBB`` background.

    >>> round(contrast_with_black("FFFFFF"), 1)
    21.0
    """
    rgb = np.array([int(colour[i:i + 2], 16) / 255 for i in (0, 2, 4)])
    return float((_luminance(rgb[None, :])[0] + 0.05) / 0.05)


def class_styler(groups: Sequence[int] | np.ndarray, *,
                 header_rows: int = 1) -> Callable[[object], None]:
    """A styler for ``write_table(..., xlsx_styler=...)`` colouring row i by ``groups[i]``.

    ``groups`` holds the class id of each written data row, in order (negative or None:
    no colour, e.g. suppressed rows). The header row is bold and frozen.

    >>> import openpyxl
    >>> book = openpyxl.Workbook()
    >>> sheet = book.active
    >>> for row in (["age"], ["20-29"], ["30-39"]):
    ...     sheet.append(row)
    >>> class_styler([4, 7])(sheet)
    >>> sheet["A2"].fill.fgColor.rgb, sheet.freeze_panes
    ('0087F5E2', 'A2')
    """
    colours = class_colours(groups)

    def style(sheet) -> None:
        from openpyxl.styles import Font, PatternFill

        width = sheet.max_column
        bold = Font(bold=True)
        for cell in sheet[1][:width] if header_rows else ():
            cell.font = bold
        sheet.freeze_panes = sheet.cell(row=header_rows + 1, column=1).coordinate
        fills: dict[str, PatternFill] = {}
        # openpyxl styles cell by cell; fills are shared objects, one per colour
        for index, row in enumerate(sheet.iter_rows(min_row=header_rows + 1,
                                                    max_row=header_rows + len(colours),
                                                    max_col=width)):
            colour = colours[index]
            if colour is None:
                continue
            fill = fills.get(colour)
            if fill is None:
                fill = fills[colour] = PatternFill(fill_type="solid", fgColor=colour)
            for cell in row:
                cell.fill = fill

    return style
