"""``blendin anonymize`` and ``blendin apply``: output, JSON figures checked on the written file."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import blendin as bl
from blendin.check import check
from blendin.cli import main
from blendin.errors import BlendinError
from blendin.spec import Spec

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def write_case(folder: Path, n=300, seed=0, k=4, limit=0.05) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "name": [f"p{i}" for i in range(n)],
        "age": rng.integers(20, 70, n),
        "zip": rng.choice(["02138", "02139", "02141", "03101", "03102"], n),
        "sex": rng.choice(["f", "m"], n),
        "dx": rng.choice(["flu", "gout", "cold"], n),
    })
    data = folder / "people.csv"
    df.to_csv(data, index=False)
    ages = sorted(set(range(20, 70)))
    (folder / "age.csv").write_text("\n".join(
        f"{a};{a // 10 * 10}-{a // 10 * 10 + 9};{'<50' if a < 50 else '>=50'};*" for a in ages))
    spec = folder / "release.toml"
    spec.write_text(f"""
[attributes]
identifiers = ["name"]
sensitive = ["dx"]

[quasi_identifiers]
age = {{ csv = "age.csv" }}
zip = {{ masking = 5 }}
sex = {{ flat = true }}

[[privacy]]
model = "k-anonymity"
k = {k}

[anonymization]
max_suppression = {limit}
""")
    return data, spec


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def test_anonymize_json_figures_match_the_written_file(tmp_path):
    data, spec = write_case(tmp_path)
    out = tmp_path / "release.csv"
    result = run("anonymize", data, "--spec", spec, "-o", out, "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    back = pd.read_csv(out, dtype=str)
    original = pd.read_csv(data, dtype=str)
    assert list(back.columns) == ["age", "zip", "sex", "dx"]
    sizes = back.groupby(["age", "zip", "sex"]).size()
    assert figures["classes"] == len(sizes)
    assert figures["min_class_size"] == sizes.min() >= 4
    assert figures["suppressed"] == len(original) - len(back)
    assert figures["suppressed"] <= 0.05 * len(original)
    assert set(figures["levels"]) == {"age", "zip", "sex"}
    assert figures["nodes_checked"] >= 1 and figures["seconds"] > 0
    assert figures["utility"]["discernibility"] == pytest.approx(
        float((sizes**2).sum() + len(original) * figures["suppressed"]))
    assert check(out, Spec.from_toml(spec)).passed
    # the zip level says how many digits were masked
    level = figures["levels"]["zip"]
    assert all(z.endswith("*" * level) or z == "*" for z in back.zip)


def test_anonymize_text_output(tmp_path):
    data, spec = write_case(tmp_path)
    out = tmp_path / "release.parquet"
    result = run("anonymize", data, "--spec", spec, "-o", out)
    assert result.exit_code == 0, result.output
    text = result.stdout
    table = pq.read_table(out).to_pandas()
    for word in ("levels:", "suppressed:", "classes:", "utility:", "nodes checked:", "time:"):
        assert word in text
    sizes = table.groupby(["age", "zip", "sex"]).size()
    assert f"classes: {len(sizes):,}, smallest {sizes.min():,}" in text


def test_quiet_prints_nothing_and_keep_marks_stars(tmp_path):
    data, spec = write_case(tmp_path, n=120, k=6, limit=0.2)
    out = tmp_path / "release.csv"
    result = run("anonymize", data, "--spec", spec, "-o", out, "--quiet",
                 "--suppressed", "keep")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    back = pd.read_csv(out, dtype=str)
    assert len(back) == 120
    stars = (back[["age", "zip", "sex"]] == "*").all(axis=1)
    kept = back[~stars].groupby(["age", "zip", "sex"]).size()
    assert kept.min() >= 6


def test_save_solution_and_apply(tmp_path):
    data, spec = write_case(tmp_path, n=400, seed=1)
    out, sol = tmp_path / "release.csv", tmp_path / "sol.json"
    first = run("anonymize", data, "--spec", spec, "-o", out, "--save-solution", sol, "--json")
    assert first.exit_code == 0, first.output
    levels = json.loads(first.stdout)["levels"]
    assert json.loads(sol.read_text())["levels"] == levels
    (tmp_path / "new").mkdir()
    new_data, _ = write_case(tmp_path / "new", n=500, seed=2)
    new_out = tmp_path / "new_release.csv"
    second = run("apply", new_data, "--solution", sol, "-o", new_out, "--json")
    assert second.exit_code == 0, second.output
    figures = json.loads(second.stdout)
    assert figures["levels"] == levels
    back = pd.read_csv(new_out, dtype=str)
    sizes = back.groupby(["age", "zip", "sex"]).size()
    assert figures["classes"] == len(sizes) and figures["min_class_size"] == sizes.min()
    assert check(new_out, Spec.from_toml(spec)).passed


def test_apply_that_does_not_hold_writes_nothing(tmp_path):
    data, spec = write_case(tmp_path, n=400, seed=1, limit=0.0)
    sol = tmp_path / "sol.json"
    assert run("anonymize", data, "--spec", spec, "-o", tmp_path / "r.csv",
               "--save-solution", sol).exit_code == 0
    few = tmp_path / "few.csv"
    pd.read_csv(data, dtype=str).head(12).to_csv(few, index=False)
    out = tmp_path / "few_release.csv"
    result = run("apply", few, "--solution", sol, "-o", out)
    assert result.exit_code == 2
    assert "does not hold on this data" in result.stderr
    assert not out.exists()
    # the fix, followed: a higher limit in the spec, given with --spec
    assert "--spec SPEC" in result.stderr, result.stderr
    text = Path(spec).read_text()
    assert "max_suppression = 0.0" in text
    Path(spec).write_text(text.replace("max_suppression = 0.0", "max_suppression = 1.0"))
    result = run("apply", few, "--solution", sol, "-o", out, "--spec", spec)
    assert result.exit_code == 0, result.output
    assert out.exists()


def test_errors_exit_2_and_leave_no_file(tmp_path):
    data, spec = write_case(tmp_path)
    out = tmp_path / "release.csv"
    bad = tmp_path / "bad.toml"
    bad.write_text(spec.read_text().replace("k = 4", "k = 100000"))
    result = run("anonymize", data, "--spec", bad, "-o", out)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and "fix:" in result.stderr
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".release")]
    result = run("anonymize", data, "--spec", spec, "-o", tmp_path / "release.txt")
    assert result.exit_code == 2 and "file type" in result.stderr
    result = run("anonymize", data, "--spec", spec, "-o", data)
    assert result.exit_code == 2 and "input" in result.stderr


def test_checker_rejection_writes_nothing(tmp_path, checker_rejects):
    data, spec = write_case(tmp_path)
    out = tmp_path / "release.csv"
    result = run("anonymize", data, "--spec", spec, "-o", out)
    assert result.exit_code == 2 and "independent check" in result.stderr
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_help_has_an_example():
    for command in ("anonymize", "apply"):
        result = run(command, "--help")
        assert result.exit_code == 0 and "Example:" in result.output


@pytest.mark.skipif(not (DATA / "adult").is_dir(), reason="benchmark data not present")
def test_adult_cli_k2(tmp_path):
    qis = ["age", "education", "marital-status", "native-country", "race", "salary-class",
           "sex", "workclass"]
    lines = ["[input]", 'delimiter = ";"', "[attributes]", 'sensitive = ["occupation"]',
             "[quasi_identifiers]"]
    lines += [f'"{q}" = {{ csv = "{DATA}/adult/adult_hierarchy_{q}.csv" }}' for q in qis]
    lines += ["[[privacy]]", 'model = "k-anonymity"', "k = 2", "[anonymization]",
              "max_suppression = 0.0"]
    spec = tmp_path / "adult.toml"
    spec.write_text("\n".join(lines) + "\n")
    out = tmp_path / "adult.parquet"
    result = run("anonymize", DATA / "adult" / "adult.csv", "--spec", spec, "-o", out,
                 "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    back = pq.read_table(out).to_pandas()
    sizes = back.groupby(qis).size()
    assert figures["classes"] == len(sizes) and figures["min_class_size"] == sizes.min() >= 2
    assert figures["suppressed"] == 0 and len(back) == 30162


@pytest.mark.parametrize("algorithm", ["datafly", "exhaustive", "mondrian"])
def test_algorithm_option(tmp_path, algorithm):
    data, spec = write_case(tmp_path, k=5)
    out = tmp_path / "release.csv"
    metric = [] if algorithm == "mondrian" else ["--metric", "discernibility"]
    result = run("anonymize", data, "--spec", spec, "-o", out, "--algorithm", algorithm,
                 *metric, "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["algorithm"] == algorithm
    assert figures["metric"] == ("loss" if algorithm == "mondrian" else "discernibility")
    assert (figures["levels"] == {}) == (algorithm == "mondrian")
    back = pd.read_csv(out, dtype=str)
    sizes = back.groupby(["age", "zip", "sex"]).size()
    assert figures["classes"] == len(sizes) and figures["min_class_size"] == sizes.min() >= 5
    assert check(out, Spec.from_toml(spec)).passed


def test_apply_with_a_stricter_spec(tmp_path):
    data, spec = write_case(tmp_path, n=400, seed=3, k=2, limit=0.0)
    sol = tmp_path / "sol.json"
    assert run("anonymize", data, "--spec", spec, "-o", tmp_path / "r.csv",
               "--save-solution", sol).exit_code == 0
    strict = tmp_path / "strict.toml"
    strict.write_text(spec.read_text().replace("k = 2", "k = 4").replace(
        "max_suppression = 0.0", "max_suppression = 0.5"))
    out = tmp_path / "strict.csv"
    result = run("apply", data, "--solution", sol, "--spec", strict, "-o", out, "--json")
    assert result.exit_code == 0, result.output
    back = pd.read_csv(out, dtype=str)
    sizes = back.groupby(["age", "zip", "sex"]).size()
    assert sizes.min() >= 4
    assert json.loads(result.stdout)["suppressed"] == 400 - len(back) > 0


def test_report_option(tmp_path):
    data, spec = write_case(tmp_path)
    out, report = tmp_path / "release.csv", tmp_path / "report.html"
    result = run("anonymize", data, "--spec", spec, "-o", out, "--report", report, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["report"] == str(report)
    assert report.read_text().startswith("<!DOCTYPE html>")


def test_delimiter_and_encoding_options(tmp_path):
    rows = ["sex;city;dx"] + [f"{s};Zürich;{d}" for s, d in
                              [("f", "a"), ("f", "b"), ("m", "a"), ("m", "c"), ("m", "a")]]
    data = tmp_path / "latin.csv"
    data.write_bytes("\n".join(rows).encode("latin-1"))
    spec = tmp_path / "s.toml"
    spec.write_text('[quasi_identifiers]\nsex = { flat = true }\n'
                    '[[privacy]]\nmodel = "k-anonymity"\nk = 2\n')
    out = tmp_path / "out.csv"
    bad = run("anonymize", data, "--spec", spec, "-o", out, "--delimiter", ";")
    assert bad.exit_code == 2 and "latin-1" in bad.stderr and not out.exists()
    good = run("anonymize", data, "--spec", spec, "-o", out, "--delimiter", ";",
               "--encoding", "latin-1", "--output-delimiter", ";", "--quiet", "--keep-order")
    assert good.exit_code == 0, good.output
    back = out.read_text(encoding="utf-8").splitlines()
    assert back[0] == '"sex";"city";"dx"'
    assert back[1:] == ['"f";"Zürich";"a"', '"f";"Zürich";"b"', '"m";"Zürich";"a"',
                        '"m";"Zürich";"c"', '"m";"Zürich";"a"']


def _spec_with(spec: Path, text: str) -> Path:
    changed = spec.with_name("changed.toml")
    changed.write_text(spec.read_text().replace('identifiers = ["name"]', text.strip(), 1)
                       if text.startswith("identifiers") else spec.read_text() + text)
    return changed


@pytest.mark.parametrize("args, expected", [
    (["--seed", "-5"], "Invalid value for '--seed'"),
    (["--external", "nope.csv"], "Invalid value for '--external': File 'nope.csv' does not"),
    (["--encoding", "utf-16"], "not valid utf-16 text at byte 0"),
    (["--encoding", "utf-99"], "--encoding 'utf-99' is not a known encoding"),
    (["--delimiter", ";;"], "--delimiter must be one character, got ';;'; fix: pass e.g. "
                            "--delimiter ';'"),
    (["--output-delimiter", "::"], "--output-delimiter must be one character"),
    (["--group-column", "g", "--original-row", "g"], "both named 'g'"),
    (["--group-column", ""], "--group-column names no column"),
    (["--keep-order", "--shuffle-seed", "3"], "leave out --shuffle-seed or --keep-order"),
    (["--sets"], "add --algorithm mondrian"),
    (["spec", '\n[transform]\nnope = { pram = { pd = 0.8 } }\n'],
     "the data has no column 'nope' ([transform])"),
    (["spec", 'identifiers = ["name", "name"]'], "identifiers names 'name' more than once"),
    (["spec", '\n[quasi_identifiers.dob]\ndates = []\n'], "dates = [] is not a list of levels"),
    (["spec", '\n[quasi_identifiers.dob]\nflat = false\n'], "flat = false; fix"),
])
def test_bad_input_is_named_in_the_syntax_typed(tmp_path, args, expected):
    """Each refused before any work, exit code 2, no traceback, the flag or key as typed."""
    data, spec = write_case(tmp_path)
    if args[0] == "spec":
        spec, args = _spec_with(spec, args[1]), []
    out = run("anonymize", data, "--spec", spec, "-o", tmp_path / "r.csv", *args)
    assert out.exit_code == 2, out.output
    assert expected in out.output and "Traceback" not in out.output
    assert not (tmp_path / "r.csv").exists()


def test_tab_is_typed_as_the_help_says_and_a_csv_named_gz_is_told(tmp_path):
    data, spec = write_case(tmp_path)
    tabbed = tmp_path / "tabbed.csv"
    tabbed.write_text(pd.read_csv(data).to_csv(sep="\t", index=False))
    for spelling in ("\\t", "tab"):
        out = run("anonymize", tabbed, "--spec", spec, "-o", tmp_path / "r.csv", "--force",
                  "--delimiter", spelling)
        assert out.exit_code == 0, out.output
    named_gz = tmp_path / "people.csv.gz"
    named_gz.write_bytes(data.read_bytes())
    out = run("risk", named_gz, "--qi", "zip")
    assert out.exit_code == 2 and "cannot be read as gzip compressed text" in out.output
    assert "name it without .gz" in out.output
    out = run("risk", data, "--qi", "zip,sex,zip")
    assert out.exit_code == 2 and "name 'zip' more than once" in out.output


def test_a_solution_of_a_later_version_is_refused(tmp_path):
    data, spec = write_case(tmp_path)
    saved = tmp_path / "s.json"
    assert run("anonymize", data, "--spec", spec, "-o", tmp_path / "r.csv",
               "--save-solution", saved).exit_code == 0
    payload = json.loads(saved.read_text())
    payload["version"] = 99
    saved.write_text(json.dumps(payload))
    out = run("apply", data, "--solution", saved, "-o", tmp_path / "again.csv")
    assert out.exit_code == 2 and "version 99 is not one this blendin reads" in out.output


@pytest.mark.parametrize("name", ["release", "release.txt"])
def test_spark_output_without_its_suffix_names_the_suffixes_spark_writes(tmp_path, name):
    """The fix offered .xlsx, which --engine spark then refused."""
    data, spec = write_case(tmp_path)
    result = run("anonymize", data, "--spec", spec, "-o", tmp_path / name, "--engine", "spark")
    assert result.exit_code == 2
    assert "end the -o name with .parquet or .csv" in result.output, result.output
    assert ".xlsx" not in result.output


@pytest.mark.parametrize("algorithm, option", [
    ("mondrian", ["--metric", "gcp"]), ("mondrian", ["--policy", "relative"]),
    ("mondrian", ["--seed", "1"]), ("datafly", ["--policy", "relative"]),
    ("optimal", ["--time-limit", "5"]), ("exhaustive", ["--max-checks", "9"]),
    ("binary", ["--seed", "2"])])
def test_a_search_option_the_algorithm_ignores_is_refused(tmp_path, algorithm, option):
    """Mondrian minimizes no metric and breaks no ties; only the heuristic has a budget and
    random moves: such an option was accepted, and the release was the same without it."""
    data, spec = write_case(tmp_path, k=5)
    result = run("anonymize", data, "--spec", spec, "-o", tmp_path / "r.csv",
                 "--algorithm", algorithm, *option)
    assert result.exit_code == 2, result.output
    assert f"{option[0]} is not used by the {algorithm} algorithm" in result.output
    assert not (tmp_path / "r.csv").exists()
    if option[0] in ("--time-limit", "--max-checks", "--seed") and algorithm != "mondrian":
        # they bound the heuristic's search of the suppressed records for a node of theirs
        recoded = run("anonymize", data, "--spec", spec, "-o", tmp_path / "r.csv",
                      "--algorithm", algorithm, *option, "--recode-suppressed")
        assert recoded.exit_code == 0, recoded.output


@pytest.mark.parametrize("algorithm, option", [
    ("mondrian", {"metric": "gcp"}), ("optimal", {"time_limit": 5}),
    ("datafly", {"seed": 1}), ("binary", {"max_checks": 9})])
def test_the_library_refuses_them_too(tmp_path, algorithm, option):
    data, spec = write_case(tmp_path, k=5)
    name = next(iter(option))
    with pytest.raises(BlendinError, match=f"{name}= is not used by the {algorithm}"):
        bl.anonymize(str(data), Spec.from_toml(spec), algorithm=algorithm, **option)


@pytest.mark.parametrize("command", ["anonymize", "apply"])
@pytest.mark.parametrize("output, option", [
    ("r.parquet", ["--output-delimiter", ";"]), ("r.xlsx", ["--output-delimiter", ";"]),
    ("r.parquet", ["--escape-formulas"])])
def test_csv_writing_options_are_refused_for_another_release(tmp_path, command, output,
                                                            option):
    """They were accepted for a Parquet or Excel release, and changed nothing."""
    data, spec = write_case(tmp_path, k=2)
    if command == "apply":
        sol = tmp_path / "sol.json"
        assert run("anonymize", data, "--spec", spec, "-o", tmp_path / "first.csv",
                   "--save-solution", sol).exit_code == 0
        args = ["apply", data, "--solution", sol]
    else:
        args = ["anonymize", data, "--spec", spec]
    result = run(*args, "-o", tmp_path / output, *option)
    assert result.exit_code == 2, result.output
    assert f"{option[0]} writes a CSV release" in result.output
    assert not (tmp_path / output).exists()
    assert run(*args, "-o", tmp_path / "r.csv", *option).exit_code == 0


def test_on_without_external_is_refused(tmp_path):
    """--on joins --external: alone (with --report) it was accepted and changed nothing."""
    data, spec = write_case(tmp_path, k=2)
    result = run("anonymize", data, "--spec", spec, "-o", tmp_path / "r.csv", "--report",
                 tmp_path / "r.html", "--on", "age,zip")
    assert result.exit_code == 2 and "no --external was given" in result.output
    assert not (tmp_path / "r.csv").exists() and not (tmp_path / "r.html").exists()


def test_index_base_without_an_added_column_is_refused(tmp_path):
    """--index-base numbers the added columns: alone it was accepted and changed nothing."""
    data, spec = write_case(tmp_path, k=2)
    result = run("anonymize", data, "--spec", spec, "-o", tmp_path / "r.csv",
                 "--index-base", "0")
    assert result.exit_code == 2 and "neither was given" in result.output
    assert not (tmp_path / "r.csv").exists()
    with pytest.raises(BlendinError, match="index_base=0 numbers the classes"):
        bl.anonymize(str(data), Spec.from_toml(spec), index_base=0)
    assert run("anonymize", data, "--spec", spec, "-o", tmp_path / "r.csv", "--index-base",
               "0", "--group-column").exit_code == 0


@pytest.mark.parametrize("call, python", [
    (lambda df, spec, out: bl.risk(df), 'qi=["zip", "dob", "sex"]'),
    (lambda df, spec, out: bl.risk(df, qi=["age"], threshold=2), "threshold=0.2"),
    (lambda df, spec, out: bl.attack(df, df, on=["age"], k=1), "k=5"),
    (lambda df, spec, out: bl.anonymize(df, spec, shuffle_seed=-1), "shuffle_seed=7"),
    (lambda df, spec, out: bl.anonymize(df, spec, output_delimiter="::", output=out),
     "output_delimiter=';'"),
    (lambda df, spec, out: bl.anonymize(df, spec, output_delimiter='"', output=out),
     "output_delimiter=';'"),
    (lambda df, spec, out: bl.anonymize(df, spec, engine="sparkk"), 'engine="embedded"'),
])
def test_errors_of_python_calls_give_the_python_fix(tmp_path, call, python):
    """A Python caller was told to pass --qi, --threshold, --k, --shuffle-seed,
    --output-delimiter or --engine, which it has not got."""
    data, spec = write_case(tmp_path, k=2)
    with pytest.raises(BlendinError) as error:
        call(pd.read_csv(data, dtype=str), Spec.from_toml(spec), tmp_path / "r.csv")
    assert python in error.value.fix and "in Python" in error.value.fix
