"""Individual and household risk with sampling weights, as sdcMicro estimates them: by hand,
against a pandas computation of the same formula, and against sdcMicro's own figures."""

from __future__ import annotations

import json
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
from blendin.errors import BlendinError

TESTDATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro" / "testdata.csv"


def benedetti_franconi(fk: int, Fk: float) -> float:
    """sdcMicro's approx estimator for one class, written out again."""
    if fk == Fk:
        return 1 / fk
    pk = fk / Fk
    if fk == 1:
        return pk / (1 - pk) * math.log(1 / pk)
    if fk == 2:
        return pk / (1 - pk) - (pk / (1 - pk)) ** 2 * math.log(1 / pk)
    return pk / (fk - (1 - pk))


def test_by_hand():
    df = pd.DataFrame({"q": ["a", "b", "b", "c", "c", "c"],
                       "w": [4, 2, 2, 2, 2, 2],
                       "h": ["h1", "h1", "h2", "h2", "h2", "h3"]})
    r = bl.risk(df, ["q"], weights="w", household="h").individual
    a = math.log(4) / 3  # pk = 1/4: (1/3) log 4
    b = 1 - math.log(2)  # pk = 1/2: 1 - log 2
    c = 0.5 / 2.5  # pk = 1/2, fk = 3
    assert r.expected == pytest.approx(a + 2 * b + 3 * c)
    assert r.average == pytest.approx((a + 2 * b + 3 * c) / 6)
    assert r.highest == pytest.approx(a)
    h1 = 1 - (1 - a) * (1 - b)
    h2 = 1 - (1 - b) * (1 - c) ** 2
    assert r.household_expected == pytest.approx(2 * h1 + 3 * h2 + c)
    assert r.household_average == pytest.approx((2 * h1 + 3 * h2 + c) / 6)


def test_without_weights_a_record_stands_for_itself():
    df = pd.DataFrame({"q": ["a", "b", "b", "c", "c", "c"], "h": list("xxyyyz")})
    r = bl.risk(df, ["q"], household="h").individual
    assert r.weights is None and r.expected == pytest.approx(3.0)  # one per class
    assert r.highest == 1.0


@st.composite
def surveys(draw):
    n = draw(st.integers(1, 60))
    return pd.DataFrame({
        "a": draw(st.lists(st.sampled_from("xyz"), min_size=n, max_size=n)),
        "b": draw(st.lists(st.sampled_from("12"), min_size=n, max_size=n)),
        "w": draw(st.lists(st.floats(1, 500), min_size=n, max_size=n)),
        "h": draw(st.lists(st.integers(0, 9), min_size=n, max_size=n)),
    })


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(surveys())
def test_agrees_with_pandas_record_by_record(df):
    groups = df.groupby(["a", "b"])
    fk, Fk = groups["w"].transform("size"), groups["w"].transform("sum")
    record = np.array([benedetti_franconi(f, F) for f, F in zip(fk, Fk)])
    homes = pd.Series(record).groupby(df["h"].to_numpy()).transform(
        lambda x: 1 - np.prod(1 - x))
    r = bl.risk(df, ["a", "b"], weights="w", household="h").individual
    assert r.expected == pytest.approx(record.sum(), rel=1e-9, abs=1e-12)
    assert r.highest == pytest.approx(record.max(), rel=1e-9)
    assert r.household_expected == pytest.approx(homes.sum(), rel=1e-9, abs=1e-12)


def test_sdcmicros_figures_on_its_testdata():
    if not TESTDATA.is_file():
        pytest.skip("sdcMicro's testdata not available (../shared/data/sdcmicro)")
    r = bl.risk(str(TESTDATA), "urbrur,roof,walls,water,electcon,relat,sex",
                weights="sampling_weight", household="ori_hid").individual
    # sdcMicro 5.8.1, createSdcObj(testdata, keyVars, w, hhId)@risk$global
    # (../shared/peers/sdcmicro/SdcBench.R ... risk ... w=sampling_weight hh=ori_hid)
    assert r.average == pytest.approx(0.00235334037526961, abs=1e-12)
    assert r.expected == pytest.approx(10.7782989187348, abs=1e-9)
    assert r.household_average == pytest.approx(0.0113128662523932, abs=1e-12)
    assert r.household_expected == pytest.approx(51.8129274359607, abs=1e-9)
    assert r.highest == pytest.approx(0.0465168705655363, abs=1e-12)


def test_bad_weights_and_the_person_key_are_refused(tmp_path):
    df = pd.DataFrame({"q": ["a", "b"], "w": ["2", "0.5"], "p": ["1", "2"]})
    with pytest.raises(BlendinError, match="'w' holds '0.5'"):
        bl.risk(df, ["q"], weights="w")
    with pytest.raises(BlendinError, match="person key counts people"):
        bl.risk(df.assign(w="2"), ["q"], weights="w", person="p")
    df.assign(w=["3", "x"]).to_csv(tmp_path / "d.csv", index=False)
    run = CliRunner().invoke(main, ["risk", str(tmp_path / "d.csv"), "--qi", "q",
                                    "--weights", "w"])
    assert run.exit_code == 2 and "holds 'x'" in run.output and "Traceback" not in run.output
    assert "give --weights" in run.output
    (tmp_path / "s.toml").write_text('[attributes]\nsampling_weights = "w"\n'
                                     '[quasi_identifiers]\nq = { flat = true }\n'
                                     '[[privacy]]\nmodel = "k-anonymity"\nk = 1\n')
    run = CliRunner().invoke(main, ["risk", str(tmp_path / "d.csv"), "--spec",
                                    str(tmp_path / "s.toml")])  # named by the spec: told so
    assert run.exit_code == 2 and "give [attributes] sampling_weights" in run.output


def test_cli_prints_and_exports_them(tmp_path):
    df = pd.DataFrame({"q": ["a", "b", "b"], "w": [4, 2, 2], "h": [1, 1, 2]})
    df.to_csv(tmp_path / "d.csv", index=False)
    args = ["risk", str(tmp_path / "d.csv"), "--qi", "q", "--weights", "w", "--household", "h"]
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0, text.output
    r = bl.risk(df, ["q"], weights="w", household="h").individual
    assert f"expected re-identifications {r.expected:.3f}" in text.output
    assert f"household risk     average {100 * r.household_average:.4f}%" in text.output
    payload = json.loads(CliRunner().invoke(main, [*args, "--json"]).output)
    assert payload["individual"]["expected"] == pytest.approx(r.expected)
    shown = repr(bl.risk(df, ["q"], weights="w", household="h"))
    assert f"{r.expected:,.3f} expected re-identifications" in shown
    assert f"household risk     average {100 * r.household_average:.4f}%" in shown


def test_individual_risk_keeps_its_precision_where_the_weights_barely_exceed_the_sample():
    """A class of two whose weights sum to 2 + 1e-9: the terms of the fk = 2 formula cancel,
    and computed as written they gave a risk of 1.5; it tends to 1 / fk."""
    from blendin.estimators import individual_risk

    for extra in (1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 1e-1, 1.0, 10.0):
        fk, weights = np.array([1.0, 2.0]), np.array([1.0 + extra, 2.0 + extra])
        # the formulas in exact arithmetic (mpmath-free: the series near 0, else as written)
        x = extra / 2
        pair = (0.5 - x / 3 + x ** 2 / 4 - x ** 3 / 5 if x < 1e-3
                else 2 / extra - (2 / extra) ** 2 * np.log1p(x))
        single = 1 - extra / 2 + extra ** 2 / 3 if extra < 1e-4 else np.log1p(extra) / extra
        got = individual_risk(fk, weights)
        assert got == pytest.approx([single, pair], rel=1e-9), extra
        assert (got <= 1 / fk + 1e-12).all()


@pytest.mark.parametrize("unknown", [None, ""])
def test_records_without_a_household_share_it_with_no_one(unknown, tmp_path):
    """A record whose household id is missing is its own household (its household risk is
    its own risk), counted by hand; the records without an id were one household, which
    made three unrelated records re-identified together (2.709 expected, not 1.676)."""
    df = pd.DataFrame({"q": ["a", "b", "b", "c", "c", "c"],
                       "w": [4, 2, 2, 2, 2, 2],
                       "h": ["h1", unknown, unknown, "h2", unknown, "h2"]})
    a = math.log(4) / 3
    b = 1 - math.log(2)
    c = 0.5 / 2.5
    h2 = 1 - (1 - c) ** 2
    r = bl.risk(df, ["q"], weights="w", household="h").individual
    assert r.household_expected == pytest.approx(a + 2 * b + c + 2 * h2)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    run = CliRunner().invoke(main, ["risk", str(path), "--qi", "q", "--weights", "w",
                                    "--household", "h", "--json"])
    assert json.loads(run.output)["individual"]["household_expected"] == pytest.approx(
        a + 2 * b + c + 2 * h2)
