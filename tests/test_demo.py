import re

import pandas as pd
import pytest
from click.testing import CliRunner

from blendin.cli import main
from blendin.demo import JOIN, QUASI_IDENTIFIERS, run_demo


@pytest.fixture(scope="module", params=[0, 1, 7])
def demo(request):
    return run_demo(seed=request.param, patients=600, voters=1800)


def test_the_attack_works_before_and_fails_after(demo):
    before, after = demo.attack_before, demo.attack_after
    assert before.records_reidentified / before.release > 0.5
    assert before.correct >= 0.9 * before.records_reidentified
    assert before.learned["diagnosis"] > 0.5 * before.release
    assert after.reidentified == 0 and after.records_reidentified == 0
    assert after.learned["diagnosis"] == 0


def test_before_figures_agree_with_pandas(demo):
    deid = demo.deidentified
    # every patient is a voter, so a record is singled out exactly when its join values are
    # unique in the hospital table
    join_sizes = deid.groupby(list(JOIN))["diagnosis"].transform("size")
    assert demo.attack_before.records_reidentified == int((join_sizes == 1).sum())
    sizes = deid.groupby(list(QUASI_IDENTIFIERS)).size()
    assert demo.risk_before.sample_uniques == int((sizes == 1).sum())
    assert demo.risk_before.prosecutor.average == pytest.approx(len(sizes) / len(deid))


def test_after_figures_agree_with_pandas(demo):
    release = demo.release
    groups = release.groupby(list(QUASI_IDENTIFIERS))
    assert groups.size().min() >= 5
    assert groups["diagnosis"].nunique().min() >= 2
    assert demo.risk_after.prosecutor.highest == pytest.approx(1 / groups.size().min())
    assert demo.attack_after.release == len(release) == len(demo.hospital) - \
        demo.result.suppressed
    table = "\n".join(demo.table())
    assert "patients singled out" in table and "information loss" in table


def test_same_seed_same_story():
    a = run_demo(seed=3, patients=300, voters=900)
    b = run_demo(seed=3, patients=300, voters=900)
    pd.testing.assert_frame_equal(a.release, b.release)
    assert a.attack_before.to_dict() == b.attack_before.to_dict()


def test_cli_writes_what_the_walkthrough_uses(tmp_path):
    out = tmp_path / "demo"
    runner = CliRunner()
    result = runner.invoke(main, ["demo", "--patients", "300", "--voters", "900",
                                  "-o", str(out)])  # -o as the other commands
    assert result.exit_code == 0, result.output
    assert "de-identified" in result.output and "anonymized" in result.output
    for name in ("hospital.csv", "deidentified.csv", "voters.csv", "release.csv", "report.html",
                 "spec.toml"):
        assert (out / name).is_file()
    attack = runner.invoke(main, ["attack", str(out / "release.csv"), "--external",
                                  str(out / "voters.csv"), "--on", "zip,dob,sex"])
    assert attack.exit_code == 0, attack.output
    assert re.search(r"match exactly 1 \(re-identified\) +0 ", attack.output), attack.output
    before = runner.invoke(main, ["attack", str(out / "hospital.csv"), "--external",
                                  str(out / "voters.csv"), "--on", "zip,dob,sex",
                                  "--truth", "name", "--sensitive", "diagnosis",
                                  "-o", str(out / "matches.csv")])
    assert before.exit_code == 0 and "re-identifications correct" in before.output
    matches = pd.read_csv(out / "matches.csv", dtype=str)
    hospital = pd.read_csv(out / "hospital.csv", dtype=str)
    found = matches[matches.matches == "1"].merge(hospital, on="name")
    assert len(found) > 250 and (found.learned_diagnosis == found.diagnosis).all()
    risk = runner.invoke(main, ["risk", str(out / "release.csv"), "--spec",
                                str(out / "spec.toml"), "--population", "9000"])
    assert risk.exit_code == 0, risk.output
    assert "smallest 5" in risk.output or "smallest 6" in risk.output


def test_cli_errors_are_one_line(tmp_path):
    runner = CliRunner()
    data = tmp_path / "r.csv"
    data.write_text("zip,dob\n021**,1965\n")
    ext = tmp_path / "v.csv"
    ext.write_text("zip,birth\n02138,1965-01-01\n")
    result = runner.invoke(main, ["attack", str(data), "--external", str(ext), "--on",
                                  "zip,dob"])
    assert result.exit_code == 2
    assert "'dob' not in the external table" in result.output
    result = runner.invoke(main, ["risk", str(data), "--qi", "zip,age"])
    assert result.exit_code == 2 and "'age'" in result.output


def test_visits_counted_in_rows_hide_lone_patients(demo):
    """The release counted in rows has classes of 5 rows or more, yet some patients are
    the only person in theirs (counted here with Python sets); the release counted in
    people has 5 people in every class, and drops every row of a suppressed patient."""
    story = demo.visits
    rows = story.by_rows.data
    released = rows[rows[list(QUASI_IDENTIFIERS)].ne("*").any(axis=1)]
    assert released.groupby(list(QUASI_IDENTIFIERS)).size().min() >= 5
    patient = story.table["patient_id"].to_numpy()
    classes = {}
    for values, row in zip(released[list(QUASI_IDENTIFIERS)].itertuples(index=False),
                           released["row"]):
        classes.setdefault(tuple(values), set()).add(patient[row])
    assert story.alone == sum(len(people) == 1 for people in classes.values())
    assert story.alone > 0 and not story.check_rows.passed
    people = story.by_people
    assert people.check.passed and people.min_class_size >= 5
    assert "patient_id" not in people.data.columns
    kept_rows = len(story.table) - people.suppressed
    assert len(people.data) == kept_rows


def test_the_population_uniques_row_names_the_estimate_its_population_and_estimator(demo):
    import blendin as bl
    from blendin.estimators import population_uniqueness

    sizes = demo.deidentified.groupby(list(QUASI_IDENTIFIERS)).size().to_numpy()
    estimate = population_uniqueness(sizes, demo.population)
    row = next(line for line in demo.table() if line.startswith("population uniques"))
    name = {"zayatz": "Zayatz", "pitman": "Pitman", "snb": "SNB"}[estimate.model]
    assert f"{estimate.dankar:,.0f} of {demo.population:,} ({name})" in row
    risk = bl.risk(demo.deidentified, list(QUASI_IDENTIFIERS), population=demo.population)
    assert risk.population.dankar == pytest.approx(estimate.dankar)
    text = "\n".join(demo.table())
    assert "several voters can match the same patient" in text.replace("\n", " ")


def test_demo_files_are_written_together_and_a_new_folder_checked_first(tmp_path):
    import pytest

    from blendin.demo import run_demo, write_demo

    demo = run_demo(seed=0, patients=200, voters=400)
    out = tmp_path / "demo"
    with pytest.raises(OSError), pytest.MonkeyPatch.context() as patch:
        def failing(*args, **kwargs):
            raise OSError("File too large")

        patch.setattr(type(demo.result), "report", failing)  # the last file fails
        write_demo(demo, out)
    assert not out.exists()  # no file of the six, and not the folder made for them
    (tmp_path / "file").write_text("x")
    from click.testing import CliRunner

    from blendin.cli import main
    refused = CliRunner().invoke(main, ["demo", "--patients", "200", "--voters", "400",
                                        "--out", str(tmp_path / "file" / "sub")])
    assert refused.exit_code == 2 and "is a file" in refused.output
