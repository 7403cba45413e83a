"""The ARX benchmark data sets in ../shared/data: tables and hierarchies, read one way.

Roles as in the field's benchmarks (see ../shared/data/README.md). Hierarchies are read with
blendin's own ARX reader, which is what a user would call.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from blendin.hierarchy.arx import from_csv
from blendin.hierarchy.core import Hierarchy

#: the data folder; BLENDIN_DATA names another (e.g. from a worktree nested elsewhere)
DATA = Path(os.environ.get("BLENDIN_DATA") or Path(__file__).resolve().parents[2] / "shared"
            / "data")

#: name -> (data file, quasi-identifiers, sensitive attribute)
SETS = {
    "adult": ("adult/adult.csv", ["age", "education", "marital-status", "native-country",
                                  "race", "salary-class", "sex", "workclass"], "occupation"),
    # all nine columns as QIs, where no sensitive attribute is needed (lattice 12,960)
    "adult9": ("adult/adult.csv", ["age", "education", "marital-status", "native-country",
                                   "occupation", "race", "salary-class", "sex", "workclass"],
               None),
    "fars": ("fars/fars_int.csv", ["iage", "ideathday", "ideathmon", "ihispanic", "iinjury",
                                   "irace", "isex"], "istatenum"),
}


def path(name: str) -> Path:
    """The data file of set ``name`` (exits with a message when ../shared is absent)."""
    file = DATA / SETS[name][0]
    if not file.is_file():
        sys.exit(f"no data at {file}: the benchmarks read ../shared/data")
    return file


def hierarchy_file(name: str, column: str) -> Path:
    return path(name).parent / f"{path(name).stem}_hierarchy_{column}.csv"


def read(name: str) -> pa.Table:
    """The whole table, every column as text (values keep their spelling)."""
    return pcsv.read_csv(path(name), parse_options=pcsv.ParseOptions(delimiter=";"),
                         convert_options=pcsv.ConvertOptions(column_types=_all_text(name)))


def hierarchies(name: str, table: pa.Table, columns=None) -> dict[str, Hierarchy]:
    """ARX's hierarchy of each column (default: the QIs), built for the table's values."""
    columns = SETS[name][1] if columns is None else columns
    return {c: from_csv(hierarchy_file(name, c), delimiter=";").build(
        np.asarray(pc.unique(table.column(c)).to_pylist(), dtype=object), c) for c in columns}


def _all_text(name: str) -> dict[str, pa.DataType]:
    with open(path(name), encoding="utf-8") as handle:
        header = handle.readline().strip().split(";")
    return {c: pa.string() for c in header}
