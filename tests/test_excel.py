"""Excel output: one sheet, header frozen, each equivalence class on its own legible colour."""

from __future__ import annotations

import numpy as np
import openpyxl
import pandas as pd
import pyarrow as pa
import pytest

from blendin.engines.kernels import mondrian_release
from blendin.excel import class_colours, class_ids, class_styler, contrast_with_black
from blendin.frequency import FrequencyTable
from blendin.hierarchy.core import Hierarchy
from blendin.io import write_table
from blendin.models import KAnonymity
from blendin.search.mondrian import mondrian


def wcag_contrast_black(hex_colour: str) -> float:
    """Contrast of black text on a colour, from the WCAG 2 definitions, one channel at a time."""
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_colour[i:i + 2], 16) / 255 for i in (0, 2, 4))
    lum = 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)
    return (lum + 0.05) / 0.05


def test_colours_are_a_function_of_the_class_id():
    ids = [3, 1, 3, 7, 1]
    first, again = class_colours(ids), class_colours(list(reversed(ids)))
    assert first.tolist() == list(reversed(again.tolist()))
    assert first[0] == first[2] and first[1] == first[4] and first[0] != first[1]
    assert class_colours([-1, None]).tolist() == [None, None]


def test_neighbouring_ids_differ_and_text_stays_legible():
    colours = class_colours(np.arange(20000))
    assert all(a != b for a, b in zip(colours[:-1], colours[1:]))
    assert len(set(colours[:50].tolist())) == 50
    worst = min(wcag_contrast_black(c) for c in colours)
    assert worst >= 7.0  # WCAG AAA for normal text
    assert contrast_with_black(colours[0]) == pytest.approx(wcag_contrast_black(colours[0]),
                                                            rel=1e-3)


def read_fills(path):
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == ["data"]
    sheet = book["data"]
    rows = list(sheet.iter_rows())
    fills = [[c.fill.fgColor.rgb if c.fill.fill_type == "solid" else None for c in row]
             for row in rows[1:]]
    return sheet, rows, fills


def test_written_sheet_colours_each_row_by_its_class(tmp_path):
    table = pa.table({"age": ["20-29", "30-39", "20-29", "*"], "dx": ["a", "b", "c", "d"]})
    groups = [2, 5, 2, None]
    path = write_table(table, tmp_path / "out.xlsx", xlsx_styler=class_styler(groups))
    sheet, rows, fills = read_fills(path)
    assert sheet.freeze_panes == "A2"
    assert [c.value for c in rows[0]] == ["age", "dx"] and rows[0][0].font.bold
    expected = class_colours(groups)
    for row_fills, colour in zip(fills, expected):
        want = None if colour is None else "00" + colour
        assert row_fills == [want, want]
    assert fills[0] == fills[2] != fills[1]


def test_mondrian_release_to_excel(tmp_path):
    age = Hierarchy.from_rows([[str(a), "*"] for a in range(20, 40)], kind="numeric",
                              numbers=np.arange(20, 40))
    df = pd.DataFrame({"age": [str(a) for a in (21, 35, 22, 36, 23, 37)]})
    ft = FrequencyTable.from_table(df, {"age": age})
    release = mondrian_release(df, ft, mondrian(ft, [KAnonymity(3)]), group_column="group")
    groups = release.column("group").to_pylist()
    path = write_table(release, tmp_path / "r.xlsx", xlsx_styler=class_styler(groups))
    _, rows, fills = read_fills(path)
    by_group: dict = {}
    for row, row_fills in zip(rows[1:], fills):
        label, group = row[0].value, row[1].value
        assert len(set(row_fills)) == 1
        by_group.setdefault(group, set()).add((label, row_fills[0]))
    assert {g: len(v) for g, v in by_group.items()} == {1: 1, 2: 1}
    assert by_group[1] != by_group[2]


def test_class_ids_regroup_released_values_like_plain_python():
    rng = np.random.default_rng(5)
    ages = rng.choice(["20-29", "30-39", "*"], 200)
    sexes = np.where(ages == "*", rng.choice(["*", "f"], 200), rng.choice(["f", "m"], 200))
    table = pa.table({"age": ages, "sex": sexes, "dx": rng.choice(["a", "b"], 200)})
    seen: dict = {}
    expected = []
    for a, s in zip(ages, sexes):
        if a == s == "*":
            expected.append(-1)
        else:
            expected.append(seen.setdefault((a, s), len(seen)))
    assert class_ids(table, ["age", "sex"]).tolist() == expected
