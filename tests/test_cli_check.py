import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from blendin.cli import main

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

RELEASE = "age;zip;dx\n20-29;021**;flu\n20-29;021**;gout\n30-39;021**;flu\n*;*;flu\n"
SPEC = """
[attributes]
sensitive = ["dx"]
[quasi_identifiers]
age = {{ intervals = [10] }}
zip = {{ masking = 5 }}
[[privacy]]
model = "k-anonymity"
k = {k}
{extra}
"""
LDIV = '[[privacy]]\nmodel = "distinct-l-diversity"\nattribute = "dx"\nl = {l}\n'


def files(tmp_path, data=RELEASE, k=2, extra="", encoding="utf-8"):
    data_path = tmp_path / "release.csv"
    data_path.write_bytes(data.encode(encoding))
    spec_path = tmp_path / "release.toml"
    spec_path.write_text(SPEC.format(k=k, extra=extra))
    return str(data_path), str(spec_path)


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_violation_human_readable(tmp_path):
    data, spec = files(tmp_path)
    result = run("check", data, "--spec", spec)
    assert result.exit_code == 1, result.output
    assert result.output.startswith("FAILED: 1 of 1")
    assert "suppressed         1 (25.00%)" in result.output
    assert "age=30-39, zip=021**" in result.output
    assert "flu" not in result.output


def test_json_output(tmp_path):
    data, spec = files(tmp_path, extra=LDIV.format(l=2))
    result = run("check", data, "--spec", spec, "--json")
    assert result.exit_code == 1
    out = json.loads(result.output)
    assert (out["passed"], out["records"], out["classes"]) == (False, 4, 2)
    assert (out["min_class_size"], out["suppressed"], out["violating_records"]) == (1, 1, 1)
    assert [(m["model"], m["passed"], m["figure"]) for m in out["models"]] == [
        ("k-anonymity", False, 1.0), ("distinct-l-diversity", False, 1.0)]
    assert "sensitive" not in out["problems"][0]


def test_show_values(tmp_path):
    data, spec = files(tmp_path)
    result = run("check", data, "--spec", spec, "--show-values")
    assert "dx: flu: 1" in result.output


def test_pass_exit_zero(tmp_path):
    data, spec = files(tmp_path, k=1)
    result = run("check", data, "--spec", spec)
    assert result.exit_code == 0 and result.output.startswith("PASSED")


def test_help_has_example():
    result = run("check", "--help")
    assert result.exit_code == 0 and "Example:" in result.output


@pytest.mark.parametrize("command", ["anonymize", "check", "risk"])
def test_help_names_only_options_the_command_has(command):
    """--schema's help named --output-table, which only anonymize has."""
    text = " ".join(run(command, "--help").output.split())
    schema = text[text.index("--schema NAME"):].split(" --password-env")[0]
    assert ("--output-table" in schema) == (command == "anonymize"), schema


def one_line_error(result, pattern):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert pattern in lines[0], lines[0]
    assert "fix:" in lines[0]


@pytest.mark.parametrize(
    ("kwargs", "args", "pattern"),
    [
        ({}, ["--delimiter", ","], "--delimiter ';'"),
        ({"k": 0}, [], "k must be a whole number >= 1"),
        ({"extra": '[[privacy]]\nmodel = "t-closeness"\nattribute = "dx"\nt = 1.5\n'}, [],
         "t must be between 0 and 1"),
        ({"data": "age;zip;dx\n"}, [], "has no rows"),
        ({"data": "age;zip;zip;dx\n1;2;3;4\n"}, [], "duplicate column names: 'zip'"),
        ({"data": "agee;zip;dx\n1;2;3\n"}, [], "no column 'age'"),
        ({"data": "age;zip;dx\n20;021;Grippé\n", "encoding": "latin-1"}, [],
         "--encoding latin-1"),
        ({"extra": '[attributes2]\nx = 1\n'}, [], "unknown section 'attributes2'"),
    ],
)
def test_bad_input(tmp_path, kwargs, args, pattern):
    data, spec = files(tmp_path, **kwargs)
    one_line_error(run("check", data, "--spec", spec, *args), pattern)


def test_column_in_two_roles(tmp_path):
    data, spec = files(tmp_path)
    text = Path(spec).read_text().replace('sensitive = ["dx"]',
                                          'sensitive = ["dx"]\nidentifiers = ["zip"]')
    Path(spec).write_text(text)
    one_line_error(run("check", data, "--spec", spec), "'zip' is both identifier")


def test_missing_files(tmp_path):
    data, spec = files(tmp_path)
    one_line_error(run("check", str(tmp_path / "nope.csv"), "--spec", spec), "does not exist")
    one_line_error(run("check", data, "--spec", str(tmp_path / "nope.toml")), "does not exist")


def test_encoding_option_fixes_it(tmp_path):
    data, spec = files(tmp_path, data="age;zip;dx\n20;021;Grippé\n", k=1, encoding="latin-1")
    assert run("check", data, "--spec", spec, "--encoding", "latin-1").exit_code == 0


def test_tab_delimiter_spelling(tmp_path):
    data, spec = files(tmp_path, data=RELEASE.replace(";", "\t"), k=1)
    assert run("check", data, "--spec", spec, "--delimiter", "\\t").exit_code == 0


def test_api_takes_a_spec_path(tmp_path):
    from blendin.check import check

    data, spec = files(tmp_path)
    report = check(data, spec)
    assert not report.passed and report.records == 4


def test_usage_error_is_2(tmp_path):
    data, _ = files(tmp_path)
    assert run("check", data).exit_code == 2


def test_debug_shows_traceback(tmp_path):
    data, spec = files(tmp_path, k=0)
    result = CliRunner().invoke(main, ["--debug", "check", data, "--spec", spec])
    assert result.exit_code != 0 and result.exception is not None
    assert "k must be a whole number" in str(result.exception)


def test_a_table_too_small_for_k_or_l_fails_the_check(tmp_path):
    """No release of 4 records is 10-anonymous: a verdict (exit code 1), not bad input."""
    for kwargs in ({"k": 10}, {"extra": LDIV.format(l=3)}):
        data, spec = files(tmp_path, **kwargs)
        result = run("check", data, "--spec", spec)
        assert result.exit_code == 1 and "FAIL" in result.output, result.output


def test_adult_with_arx_hierarchies(tmp_path):
    folder = DATA / "adult"
    if not folder.exists():
        pytest.skip("benchmark data absent")
    qis = ["age", "education", "marital-status", "native-country", "race", "salary-class",
           "sex", "workclass"]
    lines = ["[attributes]", 'sensitive = ["occupation"]', "[quasi_identifiers]"]
    lines += [f'"{q}" = {{ csv = "{folder}/adult_hierarchy_{q}.csv" }}' for q in qis]
    lines += ["[[privacy]]", 'model = "k-anonymity"', "k = 2"]
    spec = tmp_path / "adult.toml"
    spec.write_text("\n".join(lines) + "\n")
    result = run("check", str(folder / "adult.csv"), "--spec", str(spec), "--json")
    assert result.exit_code == 1
    out = json.loads(result.output)
    df = pd.read_csv(folder / "adult.csv", sep=";", dtype=str)
    sizes = df.groupby(qis).size()
    assert (out["records"], out["classes"], out["min_class_size"]) == (
        len(df), len(sizes), 1)
    assert out["violating_records"] == sizes[sizes < 2].sum()
