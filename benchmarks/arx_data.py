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

#: the folder BLENDIN_DATA names, else ../shared/data next to the repository (or next to a
#: folder holding it, for worktrees)
DATA = (Path(os.environ["BLENDIN_DATA"]) if os.environ.get("BLENDIN_DATA") else
        next((p / "shared" / "data" for p in Path(__file__).resolve().parents[1:4]
              if (p / "shared" / "data").is_dir()),
             Path(__file__).resolve().parents[2] / "shared" / "data"))

#: name -> (data file, quasi-identifiers, sensitive attribute or None)
SETS = {
    "adult": ("adult/adult.csv", ["age", "education", "marital-status", "native-country",
                                  "race", "salary-class", "sex", "workclass"], "occupation"),
    # all nine columns as QIs, where no sensitive attribute is needed (lattice 12,960)
    "adult9": ("adult/adult.csv", ["age", "education", "marital-status", "native-country",
                                   "occupation", "race", "salary-class", "sex", "workclass"],
               None),
    "fars": ("fars/fars_int.csv", ["iage", "ideathday", "ideathmon", "ihispanic", "iinjury",
                                   "irace", "isex"], "istatenum"),
    # every column a QI, no sensitive attribute (the field's heuristic benchmarks)
    "creditcard": ("creditcard/creditcard_int.csv", [
        "LIMIT_BAL", "SEX", "EDUCATION", "MARRIAGE", "AGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4",
        "PAY_5", "PAY_6", "BILL_AMT1", "BILL_AMT2", "BILL_AMT3", "BILL_AMT4", "BILL_AMT5",
        "BILL_AMT6", "PAY_AMT1", "PAY_AMT2", "PAY_AMT3", "PAY_AMT4", "PAY_AMT5", "PAY_AMT6",
        "default-payment-next-month"], None),
    "mach2019": ("mach2019/mach2019_int.csv", [
        "age", "familysize", "gender", "married", "race", "religion", "Q1A", "Q2A", "Q3A",
        "Q4A", "Q5A", "Q6A", "Q7A", "Q8A", "Q9A", "Q10A"], None),
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
