"""The ARX benchmark sets of ../shared/data for tests (set BLENDIN_SHARED to move it).

Tests that import this skip when the data is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from blendin.frequency import FrequencyTable
from blendin.hierarchy.arx import from_csv

SHARED = Path(os.environ.get("BLENDIN_SHARED") or Path(__file__).resolve().parents[2] / "shared")
DATA = SHARED / "data"

#: name -> (data file, quasi-identifiers, sensitive attribute), as in benchmarks/arx_data.py
SETS = {
    "adult": ("adult/adult.csv", ["age", "education", "marital-status", "native-country",
                                  "race", "salary-class", "sex", "workclass"], "occupation"),
    "fars": ("fars/fars_int.csv", ["iage", "ideathday", "ideathmon", "ihispanic", "iinjury",
                                   "irace", "isex"], "istatenum"),
}


def available() -> bool:
    return (DATA / "adult" / "adult.csv").is_file()


def frame(name: str) -> pd.DataFrame:
    if not available():
        pytest.skip("benchmark data (../shared/data) not available")
    return pd.read_csv(DATA / SETS[name][0], sep=";", dtype=str, keep_default_na=False)


def hierarchies(name: str, df: pd.DataFrame, columns=None) -> dict:
    file = DATA / SETS[name][0]
    columns = SETS[name][1] if columns is None else columns
    return {c: from_csv(file.parent / f"{file.stem}_hierarchy_{c}.csv", delimiter=";").build(
        np.asarray(df[c].unique(), dtype=object), c) for c in columns}


def frequency_table(name: str, sensitive: bool = False) -> FrequencyTable:
    df = frame(name)
    sens = [SETS[name][2]] if sensitive else []
    return FrequencyTable.from_table(df, hierarchies(name, df), sens)
