"""Local (cell) suppression: the counting of compatible records, the blanks chosen, and the
release made with them (spec, checker, CLI), each checked another way: record by record,
pair by pair, and by brute force on tiny tables."""

from __future__ import annotations

import itertools
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import blendin as bl
from blendin.check import check_regrouped
from blendin.codes import COUNT
from blendin.errors import BlendinError
from blendin.transform.cells import compatible, suppress_cells

TESTDATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro" / "testdata.csv"
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


def pairwise(records: np.ndarray, blank: np.ndarray) -> np.ndarray:
    """Per record (one row each), the records compatible with it, pair by pair."""
    same = records[:, None, :] == records[None, :, :]
    either = blank[:, None, :] | blank[None, :, :]
    return np.all(same | either, axis=2).sum(axis=1)


def distinct(records: np.ndarray):
    tuples, inverse, counts = np.unique(records, axis=0, return_inverse=True,
                                        return_counts=True)
    return tuples, inverse.reshape(-1), counts


def drawn(data, columns: int, rows: int, highest: int) -> np.ndarray:
    """A table of ``rows`` records of codes 0..``highest`` drawn by hypothesis."""
    row = st.lists(st.integers(0, highest), min_size=columns, max_size=columns)
    return np.array(data.draw(st.lists(row, min_size=rows, max_size=rows)))


tables = st.integers(1, 4).flatmap(lambda m: st.lists(
    st.tuples(st.lists(st.integers(0, 3), min_size=m, max_size=m),
              st.lists(st.booleans(), min_size=m, max_size=m)), min_size=1, max_size=30))


@settings(max_examples=150, deadline=None)
@given(tables)
def test_compatible_counts_the_pairs_that_agree_wherever_neither_is_blank(rows):
    codes = np.array([r for r, _ in rows])
    blank = np.array([b for _, b in rows])
    counts = np.arange(1, len(rows) + 1)
    expected = (np.all((codes[:, None] == codes[None]) | blank[:, None] | blank[None], axis=2)
                * counts[None, :]).sum(axis=1)
    assert compatible(codes, blank, counts).tolist() == expected.tolist()


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.integers(2, 5), st.data())
def test_every_record_reaches_k_and_only_short_records_lose_cells(m, k, data):
    records = drawn(data, m, data.draw(st.integers(k, 40)), 4)
    tuples, of_record, counts = distinct(records)
    blank = suppress_cells(tuples, counts, k)
    per_record = blank[of_record]
    assert pairwise(records, per_record).min() >= k
    short = counts < k
    assert not blank[~short].any()
    # never more cells than removing (blanking) every short record whole
    assert (blank * counts[:, None]).sum() <= counts[short].sum() * m
    # no blank can be given back: each is needed by its record or another
    for row, column in zip(*np.nonzero(blank)):
        fewer = blank.copy()
        fewer[row, column] = False
        assert compatible(tuples, fewer, counts).min() < k


def fewest_cells(records: np.ndarray, k: int) -> int:
    """The fewest blank cells, in the records that fall short of k, that bring every record
    to k, by trying every set of those cells (records that blend in keep their values, as
    sdcMicro's localSuppression keeps them)."""
    n, m = records.shape
    short = np.flatnonzero(pairwise(records, np.zeros((n, m), bool)) < k)
    cells = [(row, column) for row in short for column in range(m)]
    for size in range(len(cells) + 1):
        for chosen in itertools.combinations(cells, size):
            blank = np.zeros((n, m), bool)
            for row, column in chosen:
                blank[row, column] = True
            if pairwise(records, blank).min() >= k:
                return size
    raise AssertionError("blanking every cell of the short records always works")


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(1, 3), st.integers(2, 3), st.data())
def test_beside_the_fewest_cells_by_brute_force(m, k, data):
    records = drawn(data, m, data.draw(st.integers(k, 6)), 2)
    tuples, _, counts = distinct(records)
    ours = int((suppress_cells(tuples, counts, k) * counts[:, None]).sum())
    fewest = fewest_cells(records, k)
    # a heuristic (the problem is NP-hard): never below the fewest; of 1,400 random tables
    # of up to 6 records, 1,162 got the fewest, 203 one cell more, 34 two, 1 three
    # (docs/sdc.md); these examples are drawn the same way every run
    assert fewest <= ours <= fewest + 3


def test_a_hand_computed_case_and_the_priority():
    # (0, 1) is alone; blanking either column makes it match two others
    codes = np.array([[0, 0], [0, 1], [1, 1]])
    counts = np.array([2, 1, 2])
    assert suppress_cells(codes, counts, 2, priority=[1, 0]).astype(int).tolist() == [
        [0, 0], [0, 1], [0, 0]]
    assert suppress_cells(codes, counts, 2, priority=[0, 1]).astype(int).tolist() == [
        [0, 0], [1, 0], [0, 0]]
    with pytest.raises(BlendinError, match="fewer than k"):
        suppress_cells(codes, counts, 6)


def test_the_checker_counts_a_star_as_any_value_and_rejects_a_short_record():
    spec = bl.Spec(quasi_identifiers={"a": bl.as_is(), "b": bl.as_is()},
                   models=[bl.KAnonymity(3)], suppression="cells", max_suppression=1)
    good = pa.table({"a": ["x", "x", "*"], "b": ["1", "*", "2"], COUNT: [2, 1, 1]})
    report = check_regrouped(good, spec, ["a", "b"])
    # (x, 1): 2 + (x, *) 1 + (*, 2)? no, 2 differs from 1 -> 3; (*, 2): (x, *) -> 2
    assert not report.passed and report.min_class_size == 2
    assert report.cells == {"a": 1, "b": 1}
    fixed = pa.table({"a": ["x", "x", "*"], "b": ["1", "*", "*"], COUNT: [2, 1, 1]})
    report = check_regrouped(fixed, spec, ["a", "b"])
    assert report.passed and report.min_class_size == 4 and report.suppressed == 0
    # the same table read with record suppression: (x, *) is a class of one
    records = bl.Spec(quasi_identifiers=spec.quasi_identifiers, models=spec.models)
    assert not check_regrouped(fixed, records, ["a", "b"]).passed


def survey(rows: int = 600, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "region": rng.choice(list("ABCDEFG"), rows, p=[.3, .2, .2, .1, .1, .06, .04]),
        "sex": rng.choice(["f", "m"], rows),
        "age": rng.integers(15, 90, rows).astype(str),
        "tenure": rng.choice(["own", "rent", "other"], rows, p=[.6, .35, .05]),
        "income": rng.integers(1000, 9000, rows),
    })


def cells_spec(**options) -> bl.Spec:
    options = {"models": [bl.KAnonymity(3)], "suppression": "cells", **options}
    return bl.Spec(quasi_identifiers={"region": bl.as_is(), "sex": bl.as_is(),
                                      "age": bl.intervals(10, 20), "tenure": bl.as_is()},
                   max_suppression=0.2, **options)


def test_a_release_keeps_every_record_and_blanks_only_cells():
    df = survey()
    result = bl.anonymize(df, cells_spec(), keep_order=True)
    out = result.data
    assert len(out) == len(df) and result.suppressed == 0 and result.check.passed
    stars = out[["region", "sex", "age", "tenure"]] == "*"
    assert result.cells == stars.sum().to_dict()
    assert result.cell_records == int(stars.any(axis=1).sum())
    assert result.check.cells == result.cells
    # where a cell is not blank it is the input's value (or its interval)
    assert (out["region"][~stars["region"]] == df["region"][~stars["region"]]).all()
    assert (out["income"] == df["income"]).all()
    # the checker's figure, recounted pair by pair on the written values
    codes = np.stack([pd.factorize(out[c])[0] for c in stars.columns], axis=1)
    assert pairwise(codes, stars.to_numpy()).min() == result.check.min_class_size >= 3
    # the same node with records removed blanks every QI of more records
    records = bl.anonymize(df, cells_spec(suppression="records"))
    assert records.levels == result.levels
    assert sum(result.cells.values()) < records.suppressed * 4


def test_cell_priority_blanks_the_named_column_first():
    df = survey()
    first = bl.anonymize(df, cells_spec(cell_priority=["sex"]))
    assert first.cells["sex"] == max(first.cells.values()) > 0
    default = bl.anonymize(df, cells_spec())
    assert default.cells["sex"] < first.cells["sex"]


def test_the_spec_reads_and_writes_cells(tmp_path):
    spec = cells_spec(cell_priority=["tenure", "sex"])
    again = bl.Spec.from_dict(tomllib.loads(spec.to_toml()))
    assert again.suppression == "cells" and again.cell_priority == ["tenure", "sex"]
    assert isinstance(again.quasi_identifiers["region"], type(bl.as_is()))


@pytest.mark.parametrize(("change", "message"), [
    ({"models": [bl.KAnonymity(3), bl.DistinctLDiversity("income", 2)]},
     "keep only model"),
    ({"cell_priority": ["income"]}, "not a quasi-identifier"),
    ({"suppression": "cell"}, "did you mean 'cells'"),
    ({"algorithm": "mondrian"}, "mondrian"),
    ({"person": "income"}, "person key"),
])
def test_cells_refuse_what_they_cannot_keep(change, message):
    options = {"sensitive": ["income"]} if "models" in change else {}
    with pytest.raises(BlendinError, match=message):
        cells_spec(**options, **change).validate()  # noqa: B018


def test_cell_priority_needs_cells():
    with pytest.raises(BlendinError, match='add suppression = "cells"'):
        bl.Spec(quasi_identifiers={"a": bl.as_is()}, models=[bl.KAnonymity(2)],
                cell_priority=["a"]).validate()


def test_a_star_label_below_the_top_is_refused():
    df = pd.DataFrame({"a": list("xxyz"), "b": list("1122")})
    star = bl.Hierarchy.from_rows([["x", "x"], ["y", "*"], ["z", "*"]])
    spec = bl.Spec(quasi_identifiers={"a": star, "b": bl.as_is()},
                   models=[bl.KAnonymity(2)], max_suppression=1, suppression="cells")
    with pytest.raises(BlendinError, match="read as a blank cell"):
        bl.anonymize(df, spec, algorithm="exhaustive")


def test_the_cli_writes_and_checks_a_release_with_blank_cells(tmp_path):
    from click.testing import CliRunner

    from blendin.cli import main

    data = tmp_path / "survey.csv"
    survey().to_csv(data, index=False)
    spec = tmp_path / "cells.toml"
    spec.write_text(cells_spec(cell_priority=["tenure"]).to_toml())
    out = tmp_path / "release.csv"
    run = CliRunner().invoke(main, ["anonymize", str(data), "--spec", str(spec), "-o",
                                    str(out)])
    assert run.exit_code == 0, run.output
    released = pd.read_csv(out, dtype=str)
    blanks = int((released[["region", "sex", "age", "tenure"]] == "*").to_numpy().sum())
    assert f"blanked cells: {blanks:,} (tenure" in run.output
    check = CliRunner().invoke(main, ["check", str(out), "--spec", str(spec)])
    assert check.exit_code == 0 and "fewest compatible" in check.output
    bad = tmp_path / "bad.toml"
    bad.write_text(spec.read_text().replace('"cells"', '"cell"'))
    run = CliRunner().invoke(main, ["anonymize", str(data), "--spec", str(bad), "-o",
                                    str(tmp_path / "x.csv")])
    assert run.exit_code == 2 and "did you mean 'cells'" in run.output


@pytest.mark.skipif(not TESTDATA.exists(), reason="../shared/data (sdcMicro's testdata) absent")
def test_fewer_cells_than_sdcmicro_on_its_testdata():
    df = pd.read_csv(TESTDATA, usecols=KEYS, dtype=str)
    spec = bl.Spec(quasi_identifiers={k: bl.as_is() for k in KEYS}, models=[bl.KAnonymity(3)],
                   max_suppression=1, suppression="cells")
    result = bl.anonymize(df, spec)
    # sdcMicro 5.8.1 localSuppression(k = 3): 293 cells (relat 229, water 40, roof 14, ...)
    assert result.check.passed and sum(result.cells.values()) <= 293


def test_risk_reads_a_star_as_any_value_with_cells(tmp_path):
    from click.testing import CliRunner

    from blendin.cli import main
    from blendin.estimators import individual_risk

    release = pd.DataFrame({"a": ["x", "x", "*", "y", "y", "y"],
                            "b": ["1", "*", "2", "2", "2", "*"],
                            "w": [10.0, 20.0, 5.0, 1.0, 2.0, 4.0]})
    codes = np.stack([pd.factorize(release[c])[0] for c in "ab"], axis=1)
    stars = (release[["a", "b"]] == "*").to_numpy()
    fk = pairwise(codes, stars)
    report = bl.risk(release, "a,b", weights="w", cells=True)
    assert report.cells and report.suppressed == 0 and report.records == 6
    by_class = {tuple(r): f for r, f in zip(codes.tolist(), fk.tolist())}
    assert sorted(report.sizes.tolist()) == sorted(by_class.values())
    assert report.prosecutor.highest == pytest.approx(1 / fk.min())
    assert report.prosecutor.average == pytest.approx((1 / fk).mean())
    # sdcMicro's fk and Fk count the records and weights compatible with each record
    same = np.all((codes[:, None] == codes[None]) | stars[:, None] | stars[None], axis=2)
    weights = release["w"].to_numpy()
    risk = individual_risk(fk.astype(float), same.astype(float) @ weights)
    assert report.individual.expected == pytest.approx(risk.sum())
    # read as values, * is a label: all but the two (y, 2) stand alone
    assert bl.risk(release, "a,b").sample_uniques == 4
    path = tmp_path / "release.csv"
    release.to_csv(path, index=False)
    run = CliRunner().invoke(main, ["risk", str(path), "--qi", "a,b", "--cells"])
    assert run.exit_code == 0 and f"the fewest compatible records {fk.min()}" in run.output


def test_the_report_shows_the_cells_and_measures_risk_with_them(tmp_path):
    df = survey()
    result = bl.anonymize(df, cells_spec())
    page = result.report(tmp_path / "report.html", original=df).read_text()
    assert "Cells blanked" in page and "Records short of k" in page
    assert "Fewest compatible records" in page
    from blendin.report.html import report_context

    risk = {r["label"]: r["after"] for r in report_context(result, original=df)["risk"]}
    assert risk["Smallest class"] == str(result.check.min_class_size)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_homogeneity_with_cells_counts_the_compatible_records(data):
    """With blank cells a class is the records compatible with it: it gives its sensitive
    value away only when every compatible record holds that value (counted pair by pair);
    a blanked record alone in its pattern was counted as a disclosing class of its own."""
    rows = data.draw(st.integers(1, 9))
    codes = drawn(data, 2, rows, 2)
    blank = drawn(data, 2, rows, 3) == 0  # a quarter of the cells blanked
    values = drawn(data, 1, rows, 1)[:, 0]
    release = pd.DataFrame({c: np.where(blank[:, j], "*", codes[:, j].astype(str))
                            for j, c in enumerate("ab")})
    release["s"] = values.astype(str)
    shown = release[["a", "b"]].to_numpy()  # with cells, a record all * is one too
    stars = shown == "*"
    same = np.all((shown[:, None] == shown[None]) | stars[:, None] | stars[None], axis=2)
    s = release["s"].to_numpy()
    disclosed = np.array([len(set(s[row])) == 1 for row in same])
    report = bl.risk(release, "a,b", sensitive="s", cells=True).homogeneity["s"]
    assert report.records == int(disclosed.sum())
    assert report.classes == len({tuple(t) for t in shown[disclosed].tolist()})


def test_the_report_and_utility_name_blank_cells_as_what_they_do_not_measure():
    """A release with blank cells cannot be matched record by record: the report's "What
    the release keeps" says so and shows no empty tables, and utility's error names the
    cells rather than telling the user to give the input they already gave."""
    from test_report import Page

    from blendin.report import render_report

    df = survey()
    result = bl.anonymize(df, cells_spec())
    assert sum(result.cells.values())
    page = Page(render_report(result, original=df))
    keeps = page.ids["keeps"]
    assert "cells" in keeps and "quality measures" not in keeps
    assert "<table" not in page.raw.split('id="keeps"')[1].split("</section>")[0]
    with pytest.raises(BlendinError, match="cells") as error:
        bl.utility(df, result.data, result.spec)
    assert "give the input the release was made from" not in str(error.value)


def test_suppressed_keep_is_refused_with_cells(tmp_path):
    """Cells suppress no record: --suppressed keep was accepted and the release was the
    same, byte for byte."""
    from click.testing import CliRunner

    from blendin.cli import main

    with pytest.raises(BlendinError, match='suppression = "cells" suppresses none'):
        bl.anonymize(survey(), cells_spec(), suppressed="keep")
    survey().to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "s.toml").write_text(cells_spec().to_toml())
    run = CliRunner().invoke(main, ["anonymize", str(tmp_path / "s.csv"), "--spec",
                                    str(tmp_path / "s.toml"), "-o", str(tmp_path / "r.csv"),
                                    "--suppressed", "keep"])
    assert run.exit_code == 2 and "--suppressed keep" in run.output, run.output
    assert not (tmp_path / "r.csv").exists()
