"""Transforms beyond generalization: microaggregation (MDAV and the optimal univariate
method) and PRAM, in the spec, the release and its check; each figure computed another way
(brute force over partitions, the matrix's algebra, the released values recounted)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

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
from blendin.transform.microaggregation import Loss, optimal
from blendin.transform.pram import Pram
from blendin.transform.table import apply_transforms

TESTDATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro" / "testdata.csv"


def least_squares(values: np.ndarray, k: int) -> float:
    """The least squared error of cutting the sorted values into runs of k to 2k - 1, by
    trying every cut."""
    xs = np.sort(values)
    n = len(xs)
    if n < 2 * k:
        return float(((xs - xs.mean()) ** 2).sum())

    def best(i: int) -> float:
        if i == n:
            return 0.0
        return min((((xs[i:i + s] - xs[i:i + s].mean()) ** 2).sum() + best(i + s)
                    for s in range(k, 2 * k) if i + s <= n), default=np.inf)
    return float(best(0))


@settings(max_examples=120, deadline=None)
@given(st.integers(1, 4), st.lists(st.integers(0, 30), min_size=1, max_size=14))
def test_optimal_univariate_groups_have_the_least_squared_error(k, values):
    x = np.array(values, float)
    group = optimal(x, k)
    sizes = np.bincount(group)
    assert len(x) < 2 * k or (sizes.min() >= k and sizes.max() <= 2 * k - 1)
    error = sum(((x[group == g] - x[group == g].mean()) ** 2).sum() for g in range(len(sizes)))
    assert error == pytest.approx(least_squares(x, k), abs=1e-9)


shares = st.lists(st.integers(1, 50), min_size=1, max_size=6)


@settings(max_examples=80, deadline=None)
@given(shares, st.floats(0, 1), st.floats(0, 1), st.integers(0, 99))
def test_invariant_pram_keeps_the_distribution(counts, pd_, alpha, seed):
    values = np.repeat([f"v{i}" for i in range(len(counts))], counts)
    pram = Pram(pd=pd_, alpha=alpha, seed=seed)
    levels, matrix = pram.matrix(values)
    share = pram.distribution(values)
    assert np.allclose(matrix.sum(axis=1), 1) and (matrix >= -1e-12).all()
    assert np.allclose(share @ matrix, share)
    # a value always kept (pd = 1) is never moved
    assert np.allclose(Pram(pd=1.0, alpha=alpha).matrix(values)[1], np.eye(len(counts)))


def test_pram_draws_follow_the_matrix_and_the_seed():
    values = np.array(["a"] * 6000 + ["b"] * 3000 + ["c"] * 1000)
    pram = Pram(pd=0.7, seed=4)
    after, levels, matrix = pram.apply(values)
    for i, level in enumerate(levels):
        drawn = after[values == level]
        observed = [(drawn == other).mean() for other in levels]
        assert np.allclose(observed, matrix[i], atol=0.03)
    assert (pram.apply(values)[0] == after).all()
    assert (Pram(pd=0.7, seed=5).apply(values)[0] != after).any()
    given = Pram(transition={"a": {"a": 0.5, "b": 0.5}, "b": {"b": 1}, "c": {"c": 1}})
    out = given.apply(values)[0]
    assert set(out[values == "b"]) == {"b"} and set(out[values == "a"]) == {"a", "b"}


@pytest.mark.parametrize(("options", "message"), [
    ({"pd": 1.5}, "pd must be a probability"),
    ({"transition": {"a": {"a": 0.5}}}, "sum to 1"),
    ({"transition": {"a": {"a": 0.5, "z": 0.5}}}, "has no row of its own"),
])
def test_pram_refuses_a_bad_matrix(options, message):
    with pytest.raises(BlendinError, match=message):
        Pram(**options)
    with pytest.raises(BlendinError, match="no row for the value 'b'"):
        Pram(transition={"a": {"a": 1}}).apply(np.array(["a", "b"]))


def survey(rows: int = 400, seed: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "region": rng.choice(list("ABCD"), rows),
        "sex": rng.choice(["f", "m"], rows),
        "marital": rng.choice(["single", "married", "widowed"], rows, p=[.4, .5, .1]),
        "income": rng.lognormal(8, 1, rows).round(2),
        "savings": rng.lognormal(6, 2, rows).round(2),
        "age": rng.integers(16, 90, rows),
    })


def transform_spec(**transforms) -> bl.Spec:
    return bl.Spec(quasi_identifiers={"region": bl.flat(), "sex": bl.flat()},
                   models=[bl.KAnonymity(3)], max_suppression=0.1,
                   transforms=transforms or {"income": bl.Microaggregate(4),
                                             "savings": bl.Microaggregate(4),
                                             "age": bl.Microaggregate(3, "optimal"),
                                             "marital": bl.Pram(pd=0.6, seed=7)})


def test_a_release_with_transforms_keeps_their_promises():
    df = survey()
    result = bl.anonymize(df, transform_spec(), original_row="row")
    out = result.data
    source = df.iloc[out["row"].to_numpy() - 1]  # each released record's input
    assert result.check.passed and len(out) == len(df) - result.suppressed
    money = out[["income", "savings"]]
    assert money.value_counts().min() >= 4 and out["age"].value_counts().min() >= 3
    # group means keep the column totals of the released records
    assert money.sum().to_numpy() == pytest.approx(
        source[["income", "savings"]].sum().to_numpy())
    assert set(out["marital"]) <= {"single", "married", "widowed"}
    mdav, alone, pram = result.transformed
    assert mdav.columns == ("income", "savings") and alone.columns == ("age",)
    expected = Loss.of(source[["income", "savings"]].to_numpy(), money.to_numpy())
    assert [mdav.loss.il1, mdav.loss.il1s, mdav.loss.squared_error] == pytest.approx(
        [expected.il1, expected.il1s, expected.squared_error])
    assert pram.changed == int((out["marital"].to_numpy() != source["marital"].to_numpy())
                               .sum())
    assert result.check.microaggregated == {"income, savings": mdav.smallest,
                                            "age": alone.smallest}
    # the same input and seeds make the same release, whatever its random order
    rows = [sorted(map(tuple, bl.anonymize(df, transform_spec()).data.to_numpy().tolist()))
            for _ in range(2)]
    assert rows[0] == rows[1]


def test_apply_transforms_measures_the_loss_of_what_it_changed():
    table = pa.Table.from_pandas(survey())
    out, (applied,) = apply_transforms(table, {"income": bl.Microaggregate(5)})
    before = table.column("income").to_numpy()
    after = out.column("income").to_numpy()
    expected = Loss.of(before[:, None], after[:, None])
    assert [applied.loss.il1, applied.loss.il1s, applied.loss.squared_error] == pytest.approx(
        [expected.il1, expected.il1s, expected.squared_error])
    assert applied.smallest == pd.Series(after).value_counts().min() >= 5
    assert after.sum() == pytest.approx(before.sum())


def test_the_spec_reads_and_writes_transforms():
    text = """
[quasi_identifiers]
region = { flat = true }
income = { microaggregate = { k = 3 } }

[transform]
marital = { pram = { pd = 0.7, seed = 2 } }
savings = { microaggregate = { k = 4, method = "optimal" } }

[[privacy]]
model = "k-anonymity"
k = 2
"""
    spec = bl.Spec.from_dict(tomllib.loads(text))
    assert spec.transformed_qis == ["income"]
    assert spec.transforms["savings"] == bl.Microaggregate(4, "optimal")
    assert spec.roles()["income"] == "quasi-identifier"
    again = bl.Spec.from_dict(tomllib.loads(spec.to_toml()))
    assert again.transforms == spec.transforms and again.transformed_qis == ["income"]


@pytest.mark.parametrize(("section", "message"), [
    ('[transform]\nregion = { pram = { pd = 0.5 } }', "has a hierarchy and a transform"),
    ('[attributes]\nidentifiers = ["name"]\n[transform]\nname = { pram = {} }',
     "is an identifier"),
    ('[transform]\nincome = { microaggregate = { k = 1 } }', "2 or more"),
    ('[transform]\nincome = { microaggregate = { k = 3, metod = "mdav" } }',
     "unknown microaggregate option 'metod'"),
    ('[transform]\nincome = { shuffle = true }', "a transform is one of"),
    ('[attributes]\nsensitive = ["dx"]\n[[privacy]]\nmodel = "distinct-l-diversity"\n'
     'attribute = "dx"\nl = 2\n[transform]\ndx = { pram = {} }', "which its transform"),
])
def test_the_spec_refuses_transforms_it_cannot_make(section, message):
    text = ('[quasi_identifiers]\nregion = { flat = true }\n[[privacy]]\nmodel = '
            f'"k-anonymity"\nk = 2\n{section}\n')
    with pytest.raises(BlendinError, match=message):
        bl.Spec.from_dict(tomllib.loads(text))


def test_the_cli_releases_checks_and_catches_a_broken_microaggregation(tmp_path):
    data = tmp_path / "survey.csv"
    survey().to_csv(data, index=False)
    spec = tmp_path / "spec.toml"
    spec.write_text(transform_spec().to_toml())
    out = tmp_path / "release.csv"
    run = CliRunner().invoke(main, ["anonymize", str(data), "--spec", str(spec), "-o",
                                    str(out), "--report", str(tmp_path / "r.html"), "--json"])
    assert run.exit_code == 0, run.output
    figures = json.loads(run.output)
    assert [t["kind"] for t in figures["transformed"]] == ["microaggregate",
                                                           "microaggregate", "pram"]
    page = (tmp_path / "r.html").read_text()
    assert "Values changed beyond generalization" in page and "PRAM" in page
    assert CliRunner().invoke(main, ["check", str(out), "--spec", str(spec)]).exit_code == 0
    broken = pd.read_csv(out)
    broken.loc[0, "income"] += 1  # a tuple of one
    broken.to_csv(out, index=False)
    check = CliRunner().invoke(main, ["check", str(out), "--spec", str(spec)])
    assert check.exit_code == 1 and "FAILED: microaggregated values" in check.output


def test_a_text_column_cannot_be_microaggregated(tmp_path):
    df = survey().assign(income=lambda d: d["income"].astype(str))
    df.loc[5, "income"] = "n/a"
    with pytest.raises(BlendinError, match="'n/a', which is not a number"):
        bl.anonymize(df, transform_spec(income=bl.Microaggregate(3)))
    data = tmp_path / "survey.csv"
    df.to_csv(data, index=False)
    spec = tmp_path / "spec.toml"
    spec.write_text(transform_spec(income=bl.Microaggregate(3)).to_toml())
    run = CliRunner().invoke(main, ["anonymize", str(data), "--spec", str(spec), "-o",
                                    str(tmp_path / "out.csv")])
    assert run.exit_code == 2 and "income" in run.output and "Traceback" not in run.output
    assert not (tmp_path / "out.csv").exists()


def test_transforms_are_refused_in_a_database(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "survey.duckdb"
    frame = survey()  # noqa: F841 (read by DuckDB by its name)
    with duckdb.connect(str(path)) as db:
        db.execute("CREATE TABLE survey AS SELECT * FROM frame")
    with pytest.raises(BlendinError, match="not made in a database"):
        bl.anonymize(str(path), transform_spec(), table="survey")


@pytest.mark.skipif(not TESTDATA.exists(), reason="../shared/data (sdcMicro's testdata) absent")
def test_mdav_through_the_spec_matches_sdcmicro_on_its_testdata():
    df = pd.read_csv(TESTDATA)
    spec = bl.Spec(quasi_identifiers={"urbrur": bl.flat()}, models=[bl.KAnonymity(3)],
                   transforms={c: bl.Microaggregate(3) for c in ("expend", "income",
                                                                 "savings")})
    result = bl.anonymize(df, spec)
    (applied,) = result.transformed
    # sdcMicro 5.8.1: microaggregation(.., method = "mdav", aggr = 3): 1,526 groups,
    # dUtility(.., "IL1s") 533.3433570202
    assert applied.groups == 1526
    assert applied.loss.il1s == pytest.approx(533.3433570202, abs=1e-6)


@pytest.mark.parametrize("rows", [3, 4])
def test_a_release_of_fewer_records_than_the_microaggregation_k_is_a_clear_error(rows):
    """3 records left (the input's 3, or 4 less the 'm' suppressed) cannot share a mean with
    4: the run says so and how to fix it, not that blendin has a bug."""
    frame = pd.DataFrame({"sex": ["f", "f", "f", "m"][:rows], "income": [1, 2, 3, 4][:rows]})
    spec = bl.Spec.from_dict({
        "quasi_identifiers": {"sex": {"flat": True}},
        "transform": {"income": {"microaggregate": {"k": 4}}},
        "privacy": [{"model": "k-anonymity", "k": 2}],
        "anonymization": {"max_suppression": 0.5}})
    with pytest.raises(BlendinError, match=r"'income' is microaggregated in groups of k = 4 "
                                           r"records, and the release holds 3; fix: lower"):
        bl.anonymize(frame, spec)


def test_a_microaggregated_quasi_identifier_is_grouped_within_each_class():
    """income is a quasi-identifier: the woman of income 900 must not be alone among the
    women with the mean she shows (sex f, income 901 held by one record, though every
    class and every mean held 3). Grouped within classes, each (sex, income) holds k; the
    checker counts the pairs, and refuses such a release made elsewhere."""
    frame = pd.DataFrame({"sex": ["f", "f", "f", "m", "m", "m"],
                          "income": [100, 101, 900, 102, 901, 902]})
    spec = bl.Spec.from_dict({
        "quasi_identifiers": {"sex": {"flat": True},
                              "income": {"microaggregate": {"k": 3}}},
        "privacy": [{"model": "k-anonymity", "k": 3}]})
    result = bl.anonymize(frame, spec, shuffle_seed=1)
    assert result.data.groupby(["sex", "income"]).size().min() >= 3
    across = frame.assign(income=[101.0, 101.0, 901.0, 101.0, 901.0, 901.0])
    report = bl.check(across, spec)
    assert not report.passed and not report.microaggregation_held
    assert bl.check(result.data, spec).passed
    rng = np.random.default_rng(3)
    many = pd.DataFrame({"sex": rng.choice(["f", "m"], 200),
                         "age": rng.integers(20, 60, 200).astype(str),
                         "income": rng.integers(1000, 9000, 200)})
    wider = bl.Spec.from_dict({
        "quasi_identifiers": {"sex": {"flat": True}, "age": {"intervals": [10, 20]},
                              "income": {"microaggregate": {"k": 3}}},
        "privacy": [{"model": "k-anonymity", "k": 5}],
        "anonymization": {"max_suppression": 0.1}})
    released = bl.anonymize(many, wider).data
    assert released.groupby(["sex", "age", "income"]).size().min() >= 5
    with pytest.raises(BlendinError, match=r"'income' is a quasi-identifier microaggregated "
                                           r"within each released class in groups of k = 3"):
        bl.anonymize(pd.concat([frame, pd.DataFrame({"sex": ["x"], "income": [5]})]),
                     bl.Spec.from_dict({**spec.to_dict(),
                                        "anonymization": {"max_suppression": 0.2}}),
                     suppressed="keep")  # the one suppressed record kept: a class of 1


def test_the_report_names_the_transformed_columns_in_the_specification():
    """A sensitive attribute randomized by PRAM is not 'released as it is', and a
    microaggregated column is named: the specification listed the one as released as it is
    and left the other out."""
    from test_report import Page

    from blendin.report import render_report

    df = survey()
    spec = transform_spec(income=bl.Microaggregate(4), marital=bl.Pram(pd=0.6, seed=7))
    spec.sensitive = ["marital"]
    result = bl.anonymize(df, spec)
    text = " ".join(Page(render_report(result, original=df)).ids["spec"].split())
    assert "marital (randomized by PRAM)" in text
    assert "Changed by a transform (below): income (microaggregated)" in text
