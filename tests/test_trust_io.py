"""Reading files: the trust defects of issue 35 (items 16 and 19)."""

from pathlib import Path

import pandas as pd
import pyarrow.csv as pcsv
import pytest
from click.testing import CliRunner

import blendin.io as bio
from blendin.anonymize import anonymize
from blendin.check import check
from blendin.cli import main
from blendin.errors import BlendinError
from blendin.io import Source
from blendin.spec import Spec

#: the limits docs/spec.md gives: columns of a CSV header, and its length
MAX_COLUMNS = 20_000
MAX_HEADER_CHARS = 1 << 20

WIDE_SPEC = """\
[quasi_identifiers]
c0 = { flat = true }

[[privacy]]
model = "k-anonymity"
k = 2
"""


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def wide_csv(path: Path, columns: int, rows: int = 2) -> Path:
    """A CSV file of ``columns`` columns c0, c1, ... and ``rows`` equal rows."""
    header = ",".join(f"c{i}" for i in range(columns))
    row = ",".join("x" for _ in range(columns))
    path.write_text("\n".join([header, *[row] * rows]) + "\n")
    return path


def no_rows_parsed(monkeypatch) -> None:
    """Make any parse of a CSV file's rows an error: what is refused must be refused from
    its header alone."""

    def refuse(*args, **kwargs):
        raise AssertionError("the rows were parsed")

    monkeypatch.setattr(pcsv, "open_csv", refuse)


# -- item 16: an absurd header fails fast, from the header alone ----------------------------


def test_a_header_of_100k_columns_fails_before_any_row_is_read(tmp_path, monkeypatch):
    path = wide_csv(tmp_path / "wide.csv", 100_000)
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(WIDE_SPEC)
    no_rows_parsed(monkeypatch)
    with pytest.raises(BlendinError) as raised:
        Source(path)
    message = str(raised.value)
    assert "100000 columns" in message and f"at most {MAX_COLUMNS}" in message
    assert "--delimiter" in message, "the fix names the flag (a wrong delimiter splits more)"
    with pytest.raises(BlendinError, match="100000 columns"):
        check(path, Spec.from_toml(spec_path))


def test_cli_check_of_a_csv_over_the_column_limit_exits_2(tmp_path):
    path = wide_csv(tmp_path / "wide.csv", MAX_COLUMNS + 1)
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(WIDE_SPEC)
    result = run("check", str(path), "--spec", str(spec_path))
    assert result.exit_code == 2, result.output
    assert f"{MAX_COLUMNS + 1} columns" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("newline", [False, True])
def test_a_header_over_the_size_limit_fails_without_reading_the_file_whole(
        tmp_path, monkeypatch, newline):
    """A header line over MAX_HEADER_CHARS (or a file with no line end at all, such as a
    binary file taken for CSV) stops the read of the header: what is held is bounded by
    the limit, not by the file."""
    width = 100_000  # of a column name (csv's own field limit is 131072)
    header = ",".join(f"{i:06d}".ljust(width, "n")
                      for i in range(5 * MAX_HEADER_CHARS // width))
    path = tmp_path / "long.csv"
    path.write_text(header + ("\n1\n" if newline else ""))
    assert path.stat().st_size > 4 * MAX_HEADER_CHARS
    held: list[int] = []
    decode = Source._decode_head

    def spy(self, head: bytes) -> str:
        held.append(len(head))
        return decode(self, head)

    monkeypatch.setattr(Source, "_decode_head", spy)
    no_rows_parsed(monkeypatch)
    with pytest.raises(BlendinError, match=r"header .*longer than 1 MiB") as raised:
        Source(path)
    assert raised.value.fix and "--delimiter" in raised.value.fix
    assert max(held) <= 3 * MAX_HEADER_CHARS, "the header is read up to the limit, no more"


def test_a_column_name_over_csvs_field_limit_is_a_clear_error(tmp_path):
    path = tmp_path / "name.csv"
    path.write_text("a," + "b" * 200_000 + "\n1,2\n")
    with pytest.raises(BlendinError, match="header"):
        Source(path)


def test_a_file_at_the_limits_is_read_and_released_with_every_column(tmp_path, monkeypatch):
    """Under the limits nothing changes: check reads only the spec's columns (the CSV
    reader is asked for those), and a release still carries every non-identifier column."""
    monkeypatch.setattr(bio, "MAX_COLUMNS", 40, raising=False)
    frame = pd.DataFrame({f"c{i}": ["a", "a", "b", "b"] for i in range(40)})
    path = tmp_path / "at.csv"
    frame.to_csv(path, index=False)
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text('[attributes]\nidentifiers = ["c39"]\nsensitive = ["c1"]\n'
                         + WIDE_SPEC)
    spec = Spec.from_toml(spec_path)
    release = anonymize(str(path), spec, output=tmp_path / "out.csv")
    assert release.written is not None
    out = pd.read_csv(tmp_path / "out.csv", dtype=str)
    assert list(out.columns) == [f"c{i}" for i in range(39)], "all but the identifier"
    asked: list[list[str]] = []
    read = Source._csv_batches

    def spy(self, columns, progress=None):
        asked.append(list(columns))
        return read(self, columns, progress)

    monkeypatch.setattr(Source, "_csv_batches", spy)
    assert check(tmp_path / "out.csv", spec).passed
    assert asked == [["c0", "c1"]], "check reads the spec's columns, not the 39"
    wide_csv(path, 41)
    with pytest.raises(BlendinError, match="41 columns"):
        Source(path)


# -- item 19: a release keeps its input's delimiter; check finds the one a file has ----------

ARX_SPEC = """\
[input]
delimiter = ";"

[attributes]
identifiers = ["name"]
sensitive = ["dx"]

[quasi_identifiers]
age = { intervals = [10] }
zip = { masking = 5 }

[[privacy]]
model = "k-anonymity"
k = 2
"""


def arx_files(tmp_path: Path) -> tuple[Path, Path]:
    """An input written with ';' (as ARX writes) and its spec saying so."""
    rows = ["name;age;zip;dx"] + [
        f"p{i};{20 + i % 20};0213{i % 4};{'flu' if i % 3 else 'gout'}" for i in range(40)]
    data = tmp_path / "input.csv"
    data.write_text("\n".join(rows) + "\n")
    spec = tmp_path / "release.toml"
    spec.write_text(ARX_SPEC)
    return data, spec


def header_of(path: Path) -> str:
    return path.read_text().splitlines()[0]


def test_cli_round_trip_with_a_semicolon_spec_exits_0(tmp_path):
    data, spec = arx_files(tmp_path)
    release = tmp_path / "release.csv"
    made = run("anonymize", str(data), "--spec", str(spec), "-o", str(release))
    assert made.exit_code == 0, made.output
    assert header_of(release) == '"age";"zip";"dx"', "the release keeps the input's ';'"
    checked = run("check", str(release), "--spec", str(spec))
    assert checked.exit_code == 0, checked.output


def test_an_explicit_output_delimiter_wins_and_check_still_reads_it(tmp_path):
    data, spec = arx_files(tmp_path)
    release = tmp_path / "release.csv"
    made = run("anonymize", str(data), "--spec", str(spec), "-o", str(release),
               "--output-delimiter", ",")
    assert made.exit_code == 0, made.output
    assert header_of(release) == '"age","zip","dx"'
    checked = run("check", str(release), "--spec", str(spec))
    assert checked.exit_code == 0, checked.output


def test_check_of_a_comma_file_with_a_semicolon_spec_passes(tmp_path):
    _, spec = arx_files(tmp_path)
    release = tmp_path / "commas.csv"
    release.write_text("age,zip,dx\n20-29,021**,flu\n20-29,021**,gout\n"
                       "30-39,021**,flu\n30-39,021**,flu\n")
    checked = run("check", str(release), "--spec", str(spec))
    assert checked.exit_code == 0, checked.output
    report = check(release, Spec.from_toml(spec))
    assert report.passed and report.records == 4 and report.classes == 2


def test_check_never_misreads_a_file_whose_columns_no_delimiter_finds(tmp_path):
    _, spec = arx_files(tmp_path)
    other = tmp_path / "other.csv"
    other.write_text("Age,zip,dx\n20-29,021**,flu\n20-29,021**,gout\n")
    checked = run("check", str(other), "--spec", str(spec))
    assert checked.exit_code == 2, checked.output
    assert "no column 'age'" in checked.output and "did you mean 'Age'" in checked.output
    # a delimiter typed on the command line is used as typed
    typed = tmp_path / "commas.csv"
    typed.write_text("age,zip,dx\n20-29,021**,flu\n20-29,021**,gout\n")
    checked = run("check", str(typed), "--spec", str(spec), "--delimiter", ";")
    assert checked.exit_code == 2, checked.output
    assert "--delimiter ','" in checked.output


def test_library_release_defaults_to_the_specs_delimiter(tmp_path):
    data, spec_path = arx_files(tmp_path)
    spec = Spec.from_toml(spec_path)
    out = tmp_path / "lib.csv"
    result = anonymize(str(data), spec, output=out)
    assert header_of(out) == '"age";"zip";"dx"'
    again = result.write(tmp_path / "again.csv", delimiter=None)
    assert header_of(again) == '"age";"zip";"dx"', "None: the spec's, as the CLI passes it"
    tabs = anonymize(str(data), spec, output=tmp_path / "tabs.csv", output_delimiter="\t")
    assert header_of(tabs.written) == '"age"\t"zip"\t"dx"'
    spec.delimiter = None
    frame = pd.read_csv(data, sep=";", dtype=str)
    plain = anonymize(frame, spec, output=tmp_path / "plain.csv")
    assert header_of(plain.written) == '"age","zip","dx"', "no delimiter in the spec: ','"
