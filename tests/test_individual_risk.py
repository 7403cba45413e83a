"""Individual risk with sampling weights as a release target (model = "individual-risk"),
the survey columns in the spec, and the release report's survey figures (individual and
household risk, special uniques); each recounted from the released rows with pandas."""

from __future__ import annotations

import json
import math
import tomllib

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import blendin as bl
from blendin.cli import main
from blendin.errors import BlendinError
from blendin.estimators import individual_risk


def survey(rows: int = 500, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "region": rng.choice(list("ABCDE"), rows, p=[.35, .3, .2, .1, .05]),
        "sex": rng.choice(["f", "m"], rows),
        "age": rng.integers(18, 80, rows),
        "hid": rng.integers(0, rows // 3, rows),
        "w": rng.choice([1.0, 20.0, 50.0, 120.0], rows),
    })


def weighted_spec(threshold: float = 0.05, **options) -> bl.Spec:
    options = {"models": [bl.IndividualRisk(threshold)], "sampling_weights": "w",
               "household": "hid", **options}
    return bl.Spec(quasi_identifiers={"region": bl.flat(), "sex": bl.flat(),
                                      "age": bl.intervals(10, 20)},
                   max_suppression=0.1, **options)


def record_risks(table: pd.DataFrame, qis, weights: str | None = "w") -> np.ndarray:
    """Each record's risk, from pandas: fk records per class, Fk their weights."""
    grouped = table.groupby(qis, dropna=False)
    fk = grouped[qis[0]].transform("size").to_numpy(float)
    total = grouped[weights].transform("sum").to_numpy(float) if weights else fk
    return individual_risk(fk, total)


def test_a_release_meets_the_individual_risk_it_names():
    df = survey()
    result = bl.anonymize(df, weighted_spec(0.05), original_row="row")
    out = result.data
    qis = ["region", "sex", "age"]
    assert result.check.passed
    assert record_risks(out, qis).max() <= 0.05 + 1e-12
    assert result.check.models[0].figure == pytest.approx(record_risks(out, qis).max())
    # what was removed is exactly the records of the classes above the bound at the node
    at_node = df.copy()
    for q, level in result.levels.items():
        h = result.hierarchies[q]
        ground = h.encode(pa.array(df[q].astype(str)), q)
        at_node[q] = np.asarray(h.labels[level], dtype=object)[h.codes[level][ground]]
    above = record_risks(at_node, qis) > 0.05 + 1e-12
    assert result.suppressed == int(above.sum())
    assert set(out["row"] - 1) == set(np.flatnonzero(~above))


def test_without_weights_it_is_k_anonymity_with_k_of_one_over_the_threshold():
    df = survey()
    spec = weighted_spec(0.2, algorithm="exhaustive", sampling_weights=None)
    kspec = weighted_spec(algorithm="exhaustive", sampling_weights=None,
                          models=[bl.KAnonymity(math.ceil(1 / 0.2))])
    ours, theirs = bl.anonymize(df, spec), bl.anonymize(df, kspec)
    assert ours.levels == theirs.levels and ours.suppressed == theirs.suppressed


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([0.02, 0.05, 0.1, 0.3]))
def test_the_optimal_search_finds_the_exhaustive_searchs_node(seed, threshold):
    df = survey(200, seed)
    best = bl.anonymize(df, weighted_spec(threshold, algorithm="exhaustive"))
    found = bl.anonymize(df, weighted_spec(threshold, algorithm="optimal"))
    assert found.utility["loss"] == pytest.approx(best.utility["loss"])
    assert found.proven_optimal


def test_the_spec_reads_and_writes_the_survey_columns():
    spec = weighted_spec()
    again = bl.Spec.from_dict(tomllib.loads(spec.to_toml()))
    assert (again.sampling_weights, again.household) == ("w", "hid")
    assert again.models == [bl.IndividualRisk(0.05)]


@pytest.mark.parametrize(("change", "message"), [
    ({"person": "hid", "household": None}, "person key counts people"),
    ({"models": [bl.IndividualRisk(0.1), bl.KMap(3, population="people.csv")]},
     "one at a time"),
])
def test_the_spec_refuses_what_individual_risk_cannot_measure(change, message):
    with pytest.raises(BlendinError, match=message):
        weighted_spec(**change).validate()


def test_a_threshold_is_a_share():
    with pytest.raises(BlendinError, match=r"threshold must be in \(0, 1\]"):
        bl.IndividualRisk(1.5)
    with pytest.raises(BlendinError, match="threshold = 0.05"):
        bl.Spec.from_dict({"quasi_identifiers": {"a": {"flat": True}},
                           "privacy": [{"model": "individual-risk"}]})


def test_bad_weights_and_a_missing_column_name_the_key():
    df = survey().assign(w=lambda d: d["w"].astype(str))
    df.loc[3, "w"] = "0.5"
    with pytest.raises(BlendinError, match=r"'0\.5'.*\[attributes\] sampling_weights"):
        bl.anonymize(df, weighted_spec())
    with pytest.raises(BlendinError, match=r"no column 'weight' \(\[attributes\] "
                                           r"sampling_weights\); fix: .*'w'"):
        bl.anonymize(survey(), weighted_spec(sampling_weights="weight"))


def test_the_cli_measures_and_checks_with_the_specs_survey_columns(tmp_path):
    data = tmp_path / "survey.csv"
    df = survey()
    df.to_csv(data, index=False)
    spec = tmp_path / "spec.toml"
    spec.write_text(weighted_spec().to_toml())
    run = CliRunner().invoke(main, ["risk", str(data), "--spec", str(spec)])
    assert run.exit_code == 0 and "individual risk" in run.output
    run = CliRunner().invoke(main, ["risk", str(data), "--spec", str(spec), "--json"])
    figures = json.loads(run.output)["individual"]
    expected = record_risks(df, ["region", "sex", "age"]).sum()
    assert figures["expected"] == pytest.approx(expected)
    out = tmp_path / "release.csv"
    assert CliRunner().invoke(main, ["anonymize", str(data), "--spec", str(spec), "-o",
                                     str(out)]).exit_code == 0
    assert CliRunner().invoke(main, ["check", str(out), "--spec", str(spec)]).exit_code == 0
    released = pd.read_csv(out)
    # each record standing for itself alone: a class of fewer than 20 is above 0.05
    released.assign(w=1.0).to_csv(out, index=False)
    check = CliRunner().invoke(main, ["check", str(out), "--spec", str(spec)])
    assert check.exit_code == 1 and "individual-risk" in check.output


def test_the_report_shows_the_survey_figures_before_and_after(tmp_path):
    df = survey()
    result = bl.anonymize(df, weighted_spec())
    from blendin.report.html import report_context

    rows = {r["key"]: r for r in report_context(result, original=df)["risk"]}
    before = bl.risk(df, "region,sex,age", weights="w", household="hid", suda=True)
    shown = float(rows["individual-expected"]["before"].replace(",", ""))
    assert shown == pytest.approx(before.individual.expected, rel=1e-3)
    assert rows["suda-records"]["before"].startswith(f"{before.suda.records_with_msu:,}")
    after = bl.risk(result.data, "region,sex,age", weights="w", household="hid", suda=True)
    assert float(rows["household-average"]["after"].rstrip("%")) == pytest.approx(
        100 * after.individual.household_average, abs=0.051)
    assert rows["suda-records"]["after"].startswith(f"{after.suda.records_with_msu:,}")


def test_the_reports_household_figure_counts_records_not_households():
    """The report's expected re-identifications through households is sdcMicro's: each
    record's household risk summed over the records, which is not the households expected
    to be re-identified (each household once); its label said households."""
    df = survey()
    from blendin.report.html import report_context

    result = bl.anonymize(df, weighted_spec())
    row = {r["key"]: r for r in report_context(result, original=df)["risk"]}["household-expected"]
    risk = pd.Series(record_risks(df, ["region", "sex", "age"]))
    with np.errstate(divide="ignore"):  # a risk of 1: log 0, a sure re-identification
        home = 1 - np.exp(np.log1p(-risk.clip(upper=1)).groupby(df["hid"]).transform("sum"))
    per_record = home.sum()
    per_household = home.groupby(df["hid"]).first().sum()
    shown = float(row["before"].replace(",", ""))
    assert shown == pytest.approx(per_record, rel=1e-3)
    assert shown != pytest.approx(per_household, rel=0.05)
    text = " ".join(str(v) for v in row.values()).lower()
    assert "households' re-identifications" not in text and "records" in text
