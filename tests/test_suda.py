"""SUDA2: special uniques against a brute force over every subset of keys, and against
sdcMicro's suda2 on its testdata and on adult."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import blendin as bl
from blendin.cli import main
from blendin.suda import suda2

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def brute_force(df: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Each record's SUDA score: its minimal sample uniques found by trying every subset."""
    rows = [tuple(r) for r in df[keys].itertuples(index=False)]
    m = len(keys)
    scores = []
    for row in rows:
        unique = set()
        for size in range(1, m + 1):
            for subset in itertools.combinations(range(m), size):
                mine = tuple(row[j] for j in subset)
                if sum(tuple(r[j] for j in subset) == mine for r in rows) == 1:
                    unique.add(subset)
        minimal = [s for s in unique if not any(
            tuple(x for x in s if x != j) in unique for j in s if len(s) > 1)]
        scores.append(sum(math.factorial(m - len(s)) for s in minimal))
    return np.array(scores, dtype=float)


@st.composite
def tables(draw):
    m = draw(st.integers(1, 4))
    n = draw(st.integers(1, 25))
    return pd.DataFrame({f"k{j}": draw(st.lists(st.sampled_from("abc"), min_size=n,
                                                max_size=n)) for j in range(m)})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_scores_equal_a_brute_force_over_every_subset(df):
    keys = list(df.columns)
    report = bl.risk(df, keys, suda=True)
    scores = report.suda_scores.to_pandas()
    per_record = df.merge(scores, on=keys, how="left")["suda_score"].to_numpy()
    assert per_record.tolist() == brute_force(df, keys).tolist()
    assert report.suda.records_with_msu == int((per_record > 0).sum())
    assert report.suda.score_sum == per_record.sum()


def test_dis_suda_by_its_formula():
    codes = np.array([[0, 0, 0], [0, 1, 1], [1, 1, 0], [1, 0, 1], [2, 2, 2]])
    counts = np.array([1, 1, 1, 1, 2])  # the last tuple: two records
    score, dis = suda2(codes, counts, 0.05)
    m, unique, pairs = 3, 4, 2  # four records unique on all keys, one pair of equals
    d = unique * 0.05 / (unique * 0.05 + pairs * 0.95)
    q = 1 + (8 - m) / 20
    adjust = sum(1 / s ** q for s in score if s)
    expected = [1 / (1 + (unique / d - unique) / (s ** q * adjust)) if s else 0 for s in score]
    assert dis == pytest.approx(expected, abs=1e-6)
    assert score[-1] == 0 and 0 < dis[0] < 1


@pytest.mark.parametrize("name, keys, figures", [
    # sdcMicro 5.8.1: suda2(dat[, keys], DisFraction = 0.01), the keys as factors
    ("sdcmicro/testdata.csv", "urbrur,roof,walls,water,electcon,relat,sex",
     (157, 4890, 720, 9.831091570114044, 0.678142571106117)),
    ("adult/adult.csv", "age,education,marital-status,native-country,race,salary-class,"
     "sex,workclass", (8841, 1931772, 5040, 1531.8392802631242, 0.877241966594098)),
])
def test_sdcmicros_suda2_figures(name, keys, figures):
    path = DATA / name
    if not path.is_file():
        pytest.skip("benchmark data not available (../shared/data)")
    s = bl.risk(str(path), keys, suda=True).suda
    records, total, highest, dis_sum, dis_max = figures
    assert (s.records_with_msu, s.score_sum, s.score_max) == (records, total, highest)
    assert s.dis_max == pytest.approx(dis_max, abs=1e-6)
    assert s.dis_sum == pytest.approx(dis_sum, rel=1e-6)


def test_cli_writes_the_scores(tmp_path):
    df = pd.DataFrame({"a": list("xxyyz"), "b": list("12121"), "c": list("ppqqp")})
    df.to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "scores.csv"
    run = CliRunner().invoke(main, ["risk", str(tmp_path / "d.csv"), "--qi", "a,b,c",
                                    "--suda", "--suda-out", str(out)])
    assert run.exit_code == 0, run.output
    scores = pd.read_csv(out, dtype={"b": str})
    report = bl.risk(df, "a,b,c", suda=True).suda
    assert (scores.records * scores.suda_score).sum() == report.score_sum
    assert f"{report.records_with_msu} records with a minimal sample unique" in run.output
    again = CliRunner().invoke(main, ["risk", str(tmp_path / "d.csv"), "--qi", "a",
                                      "--suda-out", str(out)])
    assert again.exit_code == 2 and "add --suda" in again.output


def test_dis_suda_takes_the_sampling_fraction_the_population_gives():
    """With a population the DIS-SUDA score uses the table's sampling fraction (records
    over people), as the journalist risk beside it does; 0.01 was used whatever the
    population, so one report stated two sampling fractions."""
    import pandas as pd

    from blendin.risk import risk

    df = pd.DataFrame({"a": list("aabbcdd"), "b": list("xyxyxxz")})
    assert risk(df, ["a", "b"], suda=True).suda.dis_fraction == 0.01
    assert risk(df, ["a", "b"], suda=True, population=70).suda.dis_fraction == 0.1
    assert risk(df, ["a", "b"], suda=True, population=70,
                dis_fraction=0.5).suda.dis_fraction == 0.5
