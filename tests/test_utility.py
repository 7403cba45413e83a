"""blendin utility: ARX's quality measures computed by hand on a small table, properties
(the input against itself is perfect, everything suppressed is worst), the matching of a
release to its input, and classification on a target that one QI decides."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import blendin as bl
from blendin.cli import main
from blendin.errors import BlendinError
from blendin.hierarchy.core import Hierarchy
from blendin.utility import utility

X = Hierarchy.from_rows([["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"],
                         ["4", "3-4", "*"]], kind="numeric", numbers=[1, 2, 3, 4])
INPUT = pd.DataFrame({"x": ["1", "1", "2", "3", "4", "4"]})


def spec_of(**qis) -> bl.Spec:
    return bl.Spec(quasi_identifiers=qis or {"x": X}, models=[bl.KAnonymity(2)])


def test_every_measure_by_hand():
    release = pd.DataFrame({"x": ["1-2", "1-2", "1-2", "3-4", "3-4", "3-4"]})
    report = utility(INPUT, release, spec_of())
    (x,) = report.columns
    assert (x.level, x.height, x.example) == (1, 3, "1-2") and x.suppressed == 0
    assert x.granularity == pytest.approx(1 - (0.5 - 0.25) / 0.75)  # shares 2/4, D = 4
    assert x.generalization_intensity == pytest.approx(0.5)  # level 1 of 2
    lost = 4 * math.log2(3 / 2) + 2 * math.log2(3)  # log2(f(label) / f(value)) a record
    whole = 4 * math.log2(3) + 2 * math.log2(6)  # log2(N / f(value))
    assert x.non_uniform_entropy == pytest.approx(1 - lost / whole)
    assert x.squared_error == pytest.approx(1 - 6 / 44)  # farther end: 1 a record; cap 44
    table = report.table
    assert table["ambiguity"] == pytest.approx(1 - (12 - 6) / (24 - 6))
    assert table["aecs"] == pytest.approx(1 - (3 - 1.5) / (6 - 1.5))
    assert table["discernibility"] == pytest.approx(1 - (18 - 10) / (36 - 10))
    assert table["sse_sst"] == pytest.approx(1 - 1.5 / 6)
    assert table["record_squared_error"] == pytest.approx(1 - 6 / 16)
    before, after = report.statistics["x"]
    assert (before.mean, after.mean, after.median) == (2.5, 2.5, 2.5)
    assert "x: level 1 of 2, e.g. 1-2; 0.0% of values suppressed" in str(report)


@pytest.mark.parametrize("suppressed", ["drop", "keep"])
def test_suppressed_records_by_hand(suppressed):
    shown = ["*"] * 3 if suppressed == "keep" else []
    release = pd.DataFrame({"x": ["1-2", "1-2", "1-2", *shown]})
    report = utility(INPUT, release, spec_of())
    (x,) = report.columns
    assert report.released == 3 and x.suppressed == 0.5
    assert x.granularity == pytest.approx(1 - (0.75 - 0.25) / 0.75)
    assert x.generalization_intensity == pytest.approx(0.25)
    # the suppressed 3, 4, 4 lose log2(3/1) + 2 log2(3/2) more, in ARX's second step
    lost = (2 * math.log2(3 / 2) + math.log2(3) + math.log2(3) + 2 * math.log2(3 / 2))
    whole = 4 * math.log2(3) + 2 * math.log2(6)
    assert x.non_uniform_entropy == pytest.approx(1 - lost / whole)
    assert report.table["discernibility"] == pytest.approx(1 - (9 + 18 - 10) / (36 - 10))


@st.composite
def tables(draw):
    n = draw(st.integers(4, 40))
    return pd.DataFrame({"x": draw(st.lists(st.sampled_from("1234"), min_size=n,
                                            max_size=n)),
                         "s": draw(st.lists(st.sampled_from("fm"), min_size=n, max_size=n))})


S = Hierarchy.from_rows([["f", "*"], ["m", "*"]])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_the_input_against_itself_is_perfect_and_everything_suppressed_is_worst(df):
    spec = spec_of(x=X, s=S)
    perfect = utility(df, df, spec)
    for column in perfect.columns:
        for value in (column.granularity, column.generalization_intensity):
            assert value == pytest.approx(1.0)
        assert column.non_uniform_entropy == pytest.approx(1.0) or math.isnan(
            column.non_uniform_entropy)
    assert all(v == pytest.approx(1.0) for k, v in perfect.table.items()
               if not math.isnan(v))
    worst = utility(df, df.iloc[:0], spec)
    assert worst.released == 0
    for column in worst.columns:
        assert column.granularity == pytest.approx(0.0)
        assert column.generalization_intensity == pytest.approx(0.0)
        assert column.suppressed == 1.0
    for name in ("discernibility", "ambiguity"):  # nan: the input is one class already
        assert worst.table[name] == pytest.approx(0.0) or math.isnan(worst.table[name])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(2, 4))
def test_a_release_of_blendin_is_matched_and_coarser_is_never_better(df, k):
    spec = bl.Spec(quasi_identifiers={"x": X, "s": S}, models=[bl.KAnonymity(k)],
                   max_suppression=0.3)
    try:
        result = bl.anonymize(df, spec)
    except BlendinError:
        return
    report = utility(df, result.data, spec)
    if result.levels == {"x": 2, "s": 1}:  # every record shows only *: as if suppressed
        assert report.released == 0 and [c.level for c in report.columns] == [2, 1]
        return
    assert [c.level for c in report.columns] == [result.levels["x"], result.levels["s"]]
    assert report.released == len(result.data)
    assert report.records - report.released == result.suppressed
    top = utility(df, df.assign(x="*", s="*"), spec)  # all at the top: no better
    for name, value in top.overall.items():
        if not math.isnan(report.overall[name]):  # nan: a column of one value
            assert value <= report.overall[name] + 1e-12


def test_a_release_not_of_this_input_is_refused():
    with pytest.raises(BlendinError, match="does not come from this input"):
        utility(INPUT, pd.DataFrame({"x": ["1-2"] * 5}), spec_of())  # 3 of 1-2 in the input
    with pytest.raises(BlendinError, match="no single level"):
        utility(INPUT, pd.DataFrame({"x": ["1-2", "1-2", "1-2", "3", "4", "4"]}), spec_of())
    with pytest.raises(BlendinError, match="has no column"):
        utility(INPUT, pd.DataFrame({"y": ["1"]}), spec_of())


def test_classification_falls_to_the_baseline_when_the_deciding_qi_is_gone():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"x": rng.choice(list("1234"), 300), "s": rng.choice(list("fm"), 300)})
    df["target"] = np.where(df.x.isin(["1", "2"]), "low", "high")
    spec = spec_of(x=X, s=S)
    kept = utility(df, df.assign(x=df.x.map({"1": "1-2", "2": "1-2", "3": "3-4",
                                             "4": "3-4"})), spec, target="target", folds=3)
    gone = utility(df, df.assign(x="*"), spec, target="target", folds=3)
    for model in ("logistic regression", "naive bayes", "random forest"):
        assert kept.classification.original[model].accuracy == pytest.approx(1.0)
        assert kept.classification.kept(model) == pytest.approx(1.0)
        assert gone.classification.released[model].accuracy <= (
            gone.classification.baseline.accuracy + 0.05)
        assert gone.classification.kept(model) < 0.15
    assert gone.classification.baseline.auc == pytest.approx(0.5)
    with pytest.raises(BlendinError, match="is a quasi-identifier"):
        utility(df, df, spec, target="x")
    with pytest.raises(BlendinError, match="needs 2 folds or more, got 1"):  # (was 2, unsaid)
        utility(df, df, spec, target="target", folds=1)
    # a target unique in every record (a name): sklearn's ValueError came out as a traceback
    with pytest.raises(BlendinError, match="a value of its own in every record"):
        utility(df.assign(name=[f"p{i}" for i in range(len(df))]), df, spec, target="name")


def test_cli(tmp_path):
    INPUT.to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "s.toml").write_text('[quasi_identifiers]\nx = { intervals = [2] }\n'
                                     '[[privacy]]\nmodel = "k-anonymity"\nk = 2\n')
    made = CliRunner().invoke(main, ["anonymize", str(tmp_path / "in.csv"), "--spec",
                                     str(tmp_path / "s.toml"), "-o", str(tmp_path / "out.csv")])
    assert made.exit_code == 0, made.output
    args = ["utility", str(tmp_path / "in.csv"), str(tmp_path / "out.csv"), "--spec",
            str(tmp_path / "s.toml")]
    run = CliRunner().invoke(main, [*args, "--csv", str(tmp_path / "c.csv")])
    assert run.exit_code == 0, run.output
    assert "quality of the table:" in run.output
    columns = pd.read_csv(tmp_path / "c.csv")
    assert columns.name.tolist() == ["x"] and columns.level.tolist() == [1]
    import json

    payload = json.loads(CliRunner().invoke(main, [*args, "--json"]).output)
    assert payload["released"] == 6 and payload["columns"][0]["name"] == "x"
    bad = CliRunner().invoke(main, [*args, "--target", "nope"])
    assert bad.exit_code == 2 and "no column 'nope'" in bad.output


def test_the_report_shows_what_the_release_keeps_before_what_was_lost(tmp_path):
    df = bl.datasets.hospital(400, seed=3)
    spec = bl.Spec(identifiers=["name", "ssn"], quasi_identifiers={
        "zip": bl.masking(), "sex": bl.flat()}, models=[bl.KAnonymity(5)],
        max_suppression=0.1)
    result = bl.anonymize(df, spec)
    page = result.report(tmp_path / "r.html", original=df).read_text()
    report = result.utility_report(df)
    assert page.index('id="keeps"') < page.index('id="utility"')
    for column in report.columns:
        assert f"<li>{column.line()}</li>" in page
    shown = page[page.find('id="keeps-discernibility"'):][:60]
    assert f">{report.table['discernibility']:.4g}<" in shown
    assert 'id="keeps"' not in result.report(tmp_path / "n.html").read_text()  # no input


def test_contingency_tables_and_their_distance_by_hand(tmp_path):
    df = pd.DataFrame({"x": ["1", "1", "2", "3", "4", "4"], "s": ["f", "f", "m", "m", "f", "f"]})
    spec = spec_of(x=X, s=S)
    same = utility(df, df, spec, pairs=["x,s"]).contingencies[0]
    assert same.distance == 0.0 and same.original.equals(same.released)
    banded = df.assign(x=df.x.map({"1": "1-2", "2": "1-2", "3": "3-4", "4": "3-4"}))
    (crossed,) = utility(df, banded, spec, pairs=[("x", "s")]).contingencies
    assert crossed.released.to_pydict() == {"x": ["1-2", "1-2", "3-4", "3-4"],
                                            "s": ["f", "m", "f", "m"], "records": [2, 1, 2, 1]}
    # spread evenly: Q(1,f) = Q(4,f) = 1/6, Q(2,m) = Q(3,m) = 0.5/6; P = 2/6, 1/6, 1/6, 2/6
    assert crossed.distance == pytest.approx(0.5 * (3 / 6 + (1 - 3 / 6)))
    nothing = utility(df, df.iloc[:0], spec, pairs=["x,s"]).contingencies[0]
    assert nothing.distance == 1.0
    with pytest.raises(BlendinError, match="does not name two columns"):
        utility(df, df, spec, pairs=["x"])
    df.to_csv(tmp_path / "d.csv", index=False)
    banded.to_csv(tmp_path / "r.csv", index=False)
    (tmp_path / "s.toml").write_text(
        '[quasi_identifiers]\nx = { csv = "x.csv" }\ns = { flat = true }\n'
        '[[privacy]]\nmodel = "k-anonymity"\nk = 1\n')
    (tmp_path / "x.csv").write_text("1;1-2;*\n2;1-2;*\n3;3-4;*\n4;3-4;*\n")
    run = CliRunner().invoke(main, ["utility", str(tmp_path / "d.csv"), str(tmp_path / "r.csv"),
                                    "--spec", str(tmp_path / "s.toml"), "--pair", "x,s"])
    assert run.exit_code == 0, run.output
    assert "x x s: 4 pairs of values in the input, 4 of labels in the release; distance " \
           "0.5000" in run.output


def test_distributions_count_what_each_side_shows():
    df = bl.datasets.hospital(600, seed=5)
    spec = bl.Spec(identifiers=["name", "ssn"], quasi_identifiers={
        "zip": bl.masking(), "sex": bl.flat()}, models=[bl.KAnonymity(8)],
        max_suppression=0.1, sensitive=["diagnosis"])
    release = bl.anonymize(df, spec).data
    report = utility(df, release, spec)
    found = {d.name: d for d in report.distributions}
    assert list(found) == ["zip", "sex", "diagnosis"]
    gone = len(df) - len(release)
    assert gone > 0
    for name in found:
        before, after = dict(found[name].before), dict(found[name].after)
        assert before == df[name].astype(str).value_counts().to_dict()
        shown = release[name].astype(str).value_counts().to_dict()
        if name in spec.quasi_identifiers:  # the suppressed records show as *
            shown["*"] = shown.get("*", 0) + gone
        assert after == shown
    zips = [v for v, _ in found["zip"].before]
    assert zips == sorted(zips)  # a QI goes in its hierarchy's order
    counts = [n for _, n in found["diagnosis"].before]
    assert counts == sorted(counts, reverse=True)  # another column by count
    assert [v for v, _ in found["diagnosis"].after] == [v for v, _ in found["diagnosis"].before]


@given(st.lists(st.integers(1, 50), min_size=1, max_size=80), st.integers(2, 12),
       st.booleans())
def test_distribution_bars_keep_every_record(counts, limit, ordered):
    from blendin.utility.columns import Distribution

    pairs = tuple((str(i), n) for i, n in enumerate(counts))
    d = Distribution("x", pairs, pairs[:1], ordered)
    before, after = d.bars(limit)
    assert len(before) <= limit and sum(n for _, n in before) == sum(counts)
    assert after == list(pairs[:1])


def test_cli_writes_the_report_and_the_plots(tmp_path):
    df = bl.datasets.hospital(500, seed=7)
    df.to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "s.toml").write_text(
        '[attributes]\nidentifiers = ["name", "ssn"]\nsensitive = ["diagnosis"]\n'
        '[quasi_identifiers]\nzip = { masking = true }\n"sex" = { flat = true }\n'
        '[[privacy]]\nmodel = "k-anonymity"\nk = 5\n[anonymization]\nmax_suppression = 0.1\n')
    made = CliRunner().invoke(main, ["anonymize", str(tmp_path / "in.csv"), "--spec",
                                     str(tmp_path / "s.toml"), "-o", str(tmp_path / "out.csv")])
    assert made.exit_code == 0, made.output
    args = ["utility", str(tmp_path / "in.csv"), str(tmp_path / "out.csv"), "--spec",
            str(tmp_path / "s.toml"), "--target", "ethnicity", "--model", "naive-bayes"]
    run = CliRunner().invoke(main, [*args, "--report", str(tmp_path / "u.html"), "--plots",
                                    str(tmp_path / "plots"), "--json"])
    assert run.exit_code == 0, run.output
    import json

    payload = json.loads(run.output)
    assert list(payload["classification"]["models"]) == ["naive bayes"]
    assert [d["column"] for d in payload["distributions"]] == ["zip", "sex", "diagnosis"]
    names = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert names == ["classification.png", "distribution-diagnosis.png",
                     "distribution-sex.png", "distribution-zip.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in (tmp_path / "plots").iterdir())
    page = (tmp_path / "u.html").read_text()
    assert page.count('<figure id="distribution-') == 3 and 'id="kept-naive-bayes"' in page
    kept = payload["classification"]["models"]["naive bayes"]["kept"]
    shown = page[page.find('id="kept-naive-bayes"'):][:40]
    assert ("–" in shown) if kept != kept else (f"{100 * kept:.1f}%" in shown)
    again = CliRunner().invoke(main, [*args, "--plots", str(tmp_path / "plots")])
    assert again.exit_code == 2 and "already holds plots" in again.output
    assert "--force" in again.output
    (tmp_path / "f").write_text("")
    file = CliRunner().invoke(main, [*args, "--plots", str(tmp_path / "f")])
    assert file.exit_code == 2 and "is a file" in file.output
    forced = CliRunner().invoke(main, [*args, "--plots", str(tmp_path / "plots"), "--force"])
    assert forced.exit_code == 0, forced.output


def test_the_release_report_draws_each_qi_without_a_value_the_release_hides(tmp_path):
    df = bl.datasets.hospital(400, seed=3)
    spec = bl.Spec(identifiers=["name", "ssn"], quasi_identifiers={
        "zip": bl.masking(), "sex": bl.flat()}, models=[bl.KAnonymity(5)],
        max_suppression=0.1, sensitive=["diagnosis"])
    result = bl.anonymize(df, spec)
    page = result.report(tmp_path / "r.html", original=df).read_text()
    for name in ("zip", "sex"):
        assert f'<figure id="distribution-{name}">' in page
    assert 'id="distribution-diagnosis"' not in page  # a sensitive column: in-house only
    assert page.index('id="distribution-zip"') < page.index('id="utility"')
    report = utility(df, result.data, spec, input_values=False)
    assert [d.name for d in report.distributions] == ["zip", "sex"]
    (zips,) = [d for d in report.distributions if d.name == "zip"]
    released = result.data["zip"].value_counts().to_dict()
    assert {v for v, _ in zips.before} <= {*released, "*"}  # only labels the release shows
    # the input at the released labels (the release's counts plus what was suppressed),
    # the records of labels the release does not show as *
    level = result.levels["zip"]
    at_level = df["zip"].map(lambda z: z[:5 - level] + "*" * level)
    shown = at_level.where(at_level.isin(list(released)), "*").value_counts().to_dict()
    assert dict(zips.before) == shown and "*" in shown


def test_unknown_models_are_refused():
    from blendin.utility import classify

    x = np.zeros((10, 1), int)
    with pytest.raises(BlendinError, match="unknown model"):
        classify(np.arange(10) % 2, x, x, features=["x"], name="y", models=["svm"])


def test_a_label_is_bounded_by_the_released_records_only():
    # (2, m) is suppressed: the released 1-2 holds only 1s, so ARX reads it as [1, 1]
    df = pd.DataFrame({"x": ["1", "1", "1", "2"], "s": ["f", "f", "f", "m"]})
    release = pd.DataFrame({"x": ["1-2"] * 3, "s": ["f"] * 3})
    report = utility(df, release, spec_of(x=X, s=S))
    (x,) = [c for c in report.columns if c.name == "x"]
    # released 1s: no error; the suppressed 2: its distance to 1, the column's far end
    assert x.squared_error == pytest.approx(1 - 1 / 4)


def test_a_column_at_the_top_reads_as_nothing_left():
    release = pd.DataFrame({"x": ["*"] * 6, "s": list("ffmmff")})
    df = INPUT.assign(s=list("ffmmff"))
    report = utility(df, release, spec_of(x=X, s=S))
    x = next(c for c in report.columns if c.name == "x")
    assert x.line() == "x: nothing (every value is *)" and x.granularity == 0.0


def test_a_latin_1_input_and_the_release_anonymize_wrote_from_it(tmp_path):
    """The spec's [input] encoding was applied to the release too, which anonymize writes
    in UTF-8: its labels read garbled ('ZÃ¼rich') and utility refused the pair."""
    cities = ["Zürich", "Genève", "Bern"] * 20
    (tmp_path / "in.csv").write_bytes(b"city,sex\n" + "".join(
        f"{c},{'fm'[i % 2]}\n" for i, c in enumerate(cities)).encode("latin-1"))
    (tmp_path / "s.toml").write_text('[input]\nencoding = "latin-1"\n[quasi_identifiers]\n'
                                     'city = { flat = true }\nsex = { flat = true }\n'
                                     '[[privacy]]\nmodel = "k-anonymity"\nk = 2\n')
    made = CliRunner().invoke(main, ["anonymize", str(tmp_path / "in.csv"), "--spec",
                                     str(tmp_path / "s.toml"), "-o", str(tmp_path / "out.csv")])
    assert made.exit_code == 0, made.output
    run = CliRunner().invoke(main, ["utility", str(tmp_path / "in.csv"),
                                    str(tmp_path / "out.csv"), "--spec", str(tmp_path / "s.toml")])
    assert run.exit_code == 0, run.output
    assert "city: values as they are" in run.output


def test_gathered_bars_hold_the_same_number_of_values():
    """72 ordered values in at most 30 bars: every bar but the last holds as many values,
    so the bars' heights compare (12 bars of three values and 18 of two drew the input as
    thinning out at one age)."""
    from blendin.utility.columns import Distribution

    pairs = tuple((str(18 + i), 10) for i in range(72))
    before, _ = Distribution("age", pairs, pairs, True).bars(30)
    assert [n for _, n in before] == [30] * 24 and before[0][0] == "18–20"
    before, _ = Distribution("age", pairs[:7], pairs, True).bars(3)
    assert before == [("18–20", 30), ("21–23", 30), ("24", 10)]
