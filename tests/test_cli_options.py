"""Options that qualify another one are refused without it: they were accepted and
changed nothing (risk --dis-fraction without --suda, attack --escape-formulas without a
CSV -o, utility --model without --target, --force with nothing to replace)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from engine_cases import write_linking_case

from blendin.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = write_linking_case(tmp_path_factory.mktemp("options"), seed=1)
    return folder


@pytest.mark.parametrize("args, flag, needed", [
    (["risk", "{h}", "--qi", "zip,sex", "--dis-fraction", "0.5"], "--dis-fraction", "--suda"),
    (["risk", "{h}", "--qi", "zip,sex", "--force"], "--force", "--suda-out"),
    (["attack", "{h}", "--external", "{v}", "--on", "zip,sex", "--escape-formulas"],
     "--escape-formulas", "a CSV -o"),
    (["attack", "{h}", "--external", "{v}", "--on", "zip,sex", "-o", "{f}/a.parquet",
      "--escape-formulas"], "--escape-formulas", "a CSV -o"),
    (["attack", "{h}", "--external", "{v}", "--on", "zip,sex", "--force"], "--force", "-o"),
    (["utility", "{h}", "{h}", "--spec", "{s}", "--model", "naive-bayes"], "--model",
     "--target"),
    (["utility", "{h}", "{h}", "--spec", "{s}", "--folds", "3"], "--folds", "--target"),
    (["utility", "{h}", "{h}", "--spec", "{s}", "--sample", "100"], "--sample", "--target"),
    (["utility", "{h}", "{h}", "--spec", "{s}", "--seed", "2"], "--seed", "--target"),
    (["utility", "{h}", "{h}", "--spec", "{s}", "--force"], "--force", "--csv"),
])
def test_an_option_without_the_one_it_qualifies_is_refused(files, args, flag, needed):
    names = {"h": files / "hospital.csv", "v": files / "voters.csv", "s": files / "s.toml",
             "f": files}
    args = [a.format(**names) for a in args]
    run = CliRunner().invoke(main, args)
    assert run.exit_code == 2, run.output
    assert f"{flag} has no effect without {needed}" in run.output
    assert not (files / "a.parquet").exists()


def test_demo_force_without_out_is_refused():
    run = CliRunner().invoke(main, ["demo", "--force", "--patients", "50", "--voters", "60"])
    assert run.exit_code == 2 and "--force has no effect without --out" in run.output


@pytest.mark.parametrize("args, flag", [
    (["check", "{p}", "--spec", "{s}", "--encoding", "latin-1"], "--encoding"),
    (["check", "{p}", "--spec", "{s}", "--delimiter", ";"], "--delimiter"),
    (["risk", "{p}", "--qi", "zip", "--encoding", "latin-1"], "--encoding"),
    (["risk", "{p}", "--qi", "zip", "--delimiter", ";"], "--delimiter"),
    (["anonymize", "{p}", "--spec", "{s}", "-o", "{f}/r.csv", "--encoding", "latin-1"],
     "--encoding"),
    (["anonymize", "{p}", "--spec", "{s}", "-o", "{f}/r.parquet", "--delimiter", ";"],
     "--delimiter"),
])
def test_csv_reading_options_are_refused_for_parquet(files, args, flag):
    """A Parquet file has no delimiter nor text encoding: they were accepted and changed
    nothing (--delimiter still sets a CSV release's delimiter, as the input's)."""
    import pandas as pd

    parquet = files / "hospital.parquet"
    pd.read_csv(files / "hospital.csv", dtype=str).to_parquet(parquet)
    names = {"p": parquet, "s": files / "s.toml", "f": files}
    run = CliRunner().invoke(main, [a.format(**names) for a in args])
    assert run.exit_code == 2, run.output
    assert f"{flag} reads a CSV file, and '{parquet}' is Parquet" in run.output
    assert not (files / "r.csv").exists() and not (files / "r.parquet").exists()
    kept = CliRunner().invoke(main, ["anonymize", str(parquet), "--spec", str(files / "s.toml"),
                                     "-o", str(files / "r.csv"), "--delimiter", ";", "-q"])
    assert kept.exit_code == 0, kept.output
    assert "\";\"" in (files / "r.csv").read_text().splitlines()[0]
    (files / "r.csv").unlink()


@pytest.mark.parametrize("command, target", [("check", "blendin.check.check"),
                                             ("anonymize", "blendin.anonymize.anonymize")])
def test_ctrl_c_exits_130(files, monkeypatch, command, target):
    """Ctrl-C ended with click's "Aborted!" and exit code 1, which check means "a model is
    violated"; SIGTERM already gave 143."""
    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    module, name = target.rsplit(".", 1)
    monkeypatch.setattr(__import__(module, fromlist=[name]), name, stopped)
    args = [command, str(files / "hospital.csv"), "--spec", str(files / "s.toml")]
    if command == "anonymize":
        args += ["-o", str(files / "never.csv")]
    run = CliRunner().invoke(main, args)
    assert run.exit_code == 130 and "interrupted" in run.output, (run.exit_code, run.output)
    assert not (files / "never.csv").exists()
