"""Small random tables with hierarchies, shared by the lattice, search and metric tests.

Every table comes with its hierarchies both as Hierarchy objects and as plain rows, so the
tests can recompute figures record by record in plain Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from hypothesis import strategies as st

from blendin.frequency import FrequencyTable
from blendin.hierarchy.core import Hierarchy


@dataclass
class Table:
    records: list[tuple[str, ...]]  # QI values, one tuple per record
    secret: list[str]  # the sensitive value of each record
    rows: dict[str, list[list[str]]]  # QI -> hierarchy rows (ground value first)
    numbers: dict[str, dict[str, float]]  # numeric QIs: ground value -> number
    hierarchies: dict[str, Hierarchy]

    @property
    def names(self) -> list[str]:
        return list(self.rows)

    def frame(self) -> pd.DataFrame:
        data = {name: [r[i] for r in self.records] for i, name in enumerate(self.names)}
        return pd.DataFrame({**data, "s": self.secret})

    def frequency_table(self) -> FrequencyTable:
        return FrequencyTable.from_table(self.frame(), self.hierarchies, ["s"])

    def label(self, qi: int, value: str, level: int) -> str:
        row = next(r for r in self.rows[self.names[qi]] if r[0] == value)
        return row[level]


@st.composite
def hierarchy_rows(draw, name: str, max_values: int = 6, max_height: int = 4):
    """Rows of a random tree hierarchy; ground values are numbers as text."""
    n = draw(st.integers(2, max_values))
    height = draw(st.integers(2, max_height))
    ground = sorted(draw(st.sets(st.integers(0, 60), min_size=n, max_size=n)))
    groups = list(range(n))
    columns = [[str(g) for g in ground]]
    for level in range(1, height):
        if level == height - 1 and draw(st.booleans()):
            groups = [0] * n  # a single top most of the time
        else:
            width = max(groups) + 1
            parent = draw(st.lists(st.integers(0, max(width // 2, 1)), min_size=width,
                                   max_size=width))
            groups = [parent[g] for g in groups]
        columns.append([f"{name}{level}_{g}" for g in groups])
    return [list(r) for r in zip(*columns)]


@st.composite
def tables(draw, min_qis: int = 2, max_qis: int = 4, max_records: int = 40,
           max_height: int = 4, n_secrets: int = 3):
    q = draw(st.integers(min_qis, max_qis))
    names = [f"q{i}" for i in range(q)]
    rows, numbers, hierarchies = {}, {}, {}
    for name in names:
        r = draw(hierarchy_rows(name, max_height=max_height))
        rows[name] = r
        if draw(st.booleans()):
            numbers[name] = {row[0]: float(row[0]) for row in r}
            hierarchies[name] = Hierarchy.from_rows(
                r, kind="numeric", numbers=[float(row[0]) for row in r], name=name)
        else:
            hierarchies[name] = Hierarchy.from_rows(r, name=name)
    n = draw(st.integers(1, max_records))
    records = [tuple(draw(st.sampled_from([row[0] for row in rows[name]])) for name in names)
               for _ in range(n)]
    secret = [draw(st.sampled_from("abcde"[:n_secrets])) for _ in range(n)]
    return Table(records, secret, rows, numbers, hierarchies)
