import numpy as np
import pandas as pd
import pytest

from blendin.datasets import (
    DIAGNOSES,
    REFERENCE_DATE,
    ZIP_WEIGHTS,
    hospital,
    linking_tables,
    people,
    voter_list,
)
from blendin.errors import BlendinError


def test_same_seed_same_tables_other_seed_other_tables():
    a_h, a_v = linking_tables(300, 900, seed=4)
    b_h, b_v = linking_tables(300, 900, seed=4)
    pd.testing.assert_frame_equal(a_h, b_h)
    pd.testing.assert_frame_equal(a_v, b_v)
    c_h, _ = linking_tables(300, 900, seed=5)
    assert not a_h.equals(c_h)


@pytest.mark.parametrize("patients,voters", [(1, 1), (50, 50), (400, 1500)])
def test_sizes_and_every_patient_is_a_voter(patients, voters):
    h, v = linking_tables(patients, voters, seed=1)
    assert len(h) == patients and len(v) == voters
    assert h.ssn.is_unique and h.name.is_unique and v.name.is_unique
    joined = h.merge(v, on="name", suffixes=("", "_voter"))
    assert len(joined) == patients
    for column in ("zip", "dob", "sex"):
        assert (joined[column] == joined[f"{column}_voter"]).all()
    assert h.columns.tolist() == ["name", "ssn", "zip", "dob", "sex", "ethnicity",
                                  "marital_status", "diagnosis"]
    assert v.columns.tolist() == ["name", "zip", "dob", "sex", "party"]


def test_values_are_plausible():
    town = people(20_000, seed=2)
    assert set(town.zip) <= set(ZIP_WEIGHTS) and town.zip.str.len().eq(5).all()
    assert 0.49 < (town.sex == "F").mean() < 0.53
    dob = pd.to_datetime(town.dob, format="%Y-%m-%d")
    age = (pd.Timestamp(REFERENCE_DATE) - dob).dt.days / 365.25
    assert age.min() >= 17.9 and age.max() < 96.5
    assert 30 < age.median() < 60
    assert town.ssn.str.fullmatch(r"\d{3}-\d{2}-\d{4}").all()
    young = town[age < 25].marital_status.value_counts(normalize=True)
    old = town[age > 75].marital_status.value_counts(normalize=True)
    assert young["Never married"] > 0.5 and old["Widowed"] > young.get("Widowed", 0)
    # ZIP shares follow the weights
    weights = pd.Series(ZIP_WEIGHTS, dtype=float)
    shares = town.zip.value_counts(normalize=True).reindex(weights.index, fill_value=0)
    assert np.abs(shares - weights / weights.sum()).max() < 0.01


def test_diagnoses_follow_sex():
    h = hospital(3000, seed=3)
    assert set(h.diagnosis) <= set(DIAGNOSES)
    assert not ((h.sex == "F") & (h.diagnosis == "Prostate cancer")).any()
    # the three join columns single out almost everyone: the premise of the demo
    assert h.groupby(["zip", "dob", "sex"]).ngroups > 0.95 * len(h)


def test_bad_sizes_are_refused():
    with pytest.raises(BlendinError, match="patients"):
        linking_tables(0, 10)
    with pytest.raises(BlendinError, match="voter list"):
        linking_tables(100, 50)
    town = people(10, seed=0)
    with pytest.raises(BlendinError, match="voter list"):
        voter_list(town, 11)
