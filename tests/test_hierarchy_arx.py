"""ARX hierarchy files: reading (delimiters, line endings, encodings), errors, writing."""

import csv
import math
import tomllib
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from blendin.codes import as_text
from blendin.errors import BlendinError
from blendin.hierarchy.arx import from_csv, to_csv
from blendin.hierarchy.builders import builder_from_toml
from blendin.hierarchy.core import Hierarchy
from blendin.hierarchy.intervals import intervals

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

AGE_ROWS = [["17", "15-19", "10-19", "*"], ["18", "15-19", "10-19", "*"],
            ["23", "20-24", "20-29", "*"]]


def write(tmp_path: Path, text: str | bytes, name: str = "h.csv") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize("delimiter", [";", ",", "\t", "|"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("final", [True, False])
def test_reads_any_delimiter_and_line_ending(tmp_path, delimiter, newline, final):
    text = newline.join(delimiter.join(r) for r in AGE_ROWS) + (newline if final else "")
    b = from_csv(write(tmp_path, text))
    h = b.build(np.array(["17", "23"], dtype=object), "age")
    assert h.to_rows() == [AGE_ROWS[0], AGE_ROWS[2]]
    assert h.kind == "numeric" and h.numbers.tolist() == [17.0, 23.0]


def test_a_build_from_what_the_last_was_built_from_is_that_hierarchy(tmp_path):
    path = write(tmp_path, "\n".join(";".join(r) for r in AGE_ROWS + [["NA", "NA", "NA", "*"]]))
    builder = from_csv(path)
    values = np.array(["17", "23"], dtype=object)
    first = builder.build(values, "age")
    assert builder.build(values.copy(), "age") is first
    values[0] = "18"  # the caller's array changing does not change what was built from
    assert builder.build(np.array(["17", "23"], dtype=object), "age") is first
    for build, kind in [((["17"], "age"), None), ((["17", "23"], "years"), None),
                        ((["17", "NA"], "age", "NA"), None),
                        ((["17", "23"], "age"), "categorical")]:
        builder.kind = kind
        other = builder.build(*build)
        fresh = from_csv(path, kind=kind).build(*build)
        assert other is not first
        assert (other.to_rows(), other.kind) == (fresh.to_rows(), fresh.kind)
    builder.kind = None
    again = builder.build(["17", "23"], "age")
    assert (again.to_rows(), again.kind, again.numbers.tolist()) == (
        first.to_rows(), first.kind, first.numbers.tolist())


def test_builders_of_one_file_are_equal_without_reading_the_path_again(tmp_path, monkeypatch):
    path = write(tmp_path, "a;*\nb;*")
    monkeypatch.chdir(tmp_path)
    relative, absolute = from_csv("h.csv"), from_csv(path)
    assert relative == absolute and hash(relative) == hash(absolute)
    assert relative != from_csv(path, kind="categorical") and relative != from_csv(path, ";")
    monkeypatch.chdir(tmp_path.parent)  # the relative path named the file where it was read
    path.unlink()
    assert relative == absolute and hash(relative) == hash(absolute)
    assert relative.build(["a"], "x").to_rows() == [["a", "*"]]


def test_explicit_delimiter_bom_blank_lines_and_quotes(tmp_path):
    text = '\ufeffa|"x|y"|*\n\nb|"x|y"|*\n'
    h = from_csv(write(tmp_path, text), delimiter="|").build(["a", "b"], "letter")
    assert h.to_rows() == [["a", "x|y", "*"], ["b", "x|y", "*"]]
    assert h.kind == "categorical"


def test_sniffing_prefers_semicolon_over_commas_inside_labels(tmp_path):
    path = write(tmp_path, "0;[0,4];[0,9];*\n1;[0,4];[0,9];*")
    assert from_csv(path).build(["0"]).to_rows() == [["0", "[0,4]", "[0,9]", "*"]]


def test_kind_can_be_given(tmp_path):
    path = write(tmp_path, "2017-01-05;2017;*\n2018-03-01;2018;*\n")
    h = from_csv(path, kind="date").build(["2017-01-05", ""], "dob")
    assert h.kind == "date" and h.numbers[1] == 17171
    assert math.isnan(h.numbers[0])  # the missing label sorts first and has no day
    h = from_csv(write(tmp_path, "1;*\n2;*\n", "n.csv"), kind="categorical").build(["1"])
    assert h.kind == "categorical" and h.numbers is None
    with pytest.raises(BlendinError, match="not numbers"):
        from_csv(path, kind="numeric").build(["2017-01-05"], "dob")
    with pytest.raises(BlendinError, match=r'n.csv\' is declared kind = "numeric", and has 2') \
            as file_named:  # the file's own values, not a column's
        from_csv(write(tmp_path, "a;*\nb;*\n", "n.csv"), kind="numeric").given()
    assert 'write kind = "categorical"' in file_named.value.fix
    with pytest.raises(BlendinError, match="unknown kind"):
        from_csv(path, kind="text")


def test_not_covering_data_lists_values_count_and_fix(tmp_path):
    path = write(tmp_path, "\n".join(";".join(r) for r in AGE_ROWS))
    values = np.array(["17", "90", "91", "92", "93", "94", "95", "96"], dtype=object)
    with pytest.raises(BlendinError) as err:
        from_csv(path).build(values, "age")
    message = str(err.value)
    assert "'age'" in message and "h.csv" in message and "7 value(s)" in message
    assert "'90', '91', '92', '93', '94' and 2 more" in message and "fix: add a row" in message


def test_missing_label_gets_its_own_branch(tmp_path):
    path = write(tmp_path, "\n".join(";".join(r) for r in AGE_ROWS))
    h = from_csv(path).build(["17", "NA"], "age", missing="NA")
    assert h.to_rows()[-1] == ["NA", "NA", "NA", "*"]
    assert math.isnan(h.numbers[-1])


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("a;x;*\nb;x;*\nc;*\n", r"h\.csv line 3 has 2 fields but line 1 has 3"),
        ("a;x;1\nb;x;2\n", r"h\.csv line 2: 'x' generalizes to '2' at level 2, but on line 1 "
                           r"to '1': not a tree"),
        ("a;x;*\nb;y;*\n\na;y;*\n", r"h\.csv line 4: value 'a' is already listed, differently, "
                                    r"on line 1"),
        ("", r"h\.csv' is empty"),
        ("a\nb\n", "cannot tell the delimiter"),
        ('a;"x\n', "line"),
    ],
)
def test_bad_files_name_file_and_line(tmp_path, text, match):
    with pytest.raises(BlendinError, match=match):
        from_csv(write(tmp_path, text))


def test_repeated_identical_rows_are_kept_once(tmp_path):
    h = from_csv(write(tmp_path, "a;x;*\nb;x;*\na;x;*\n")).build(["a", "b"])
    assert h.to_rows() == [["a", "x", "*"], ["b", "x", "*"]]


def test_non_utf8_file_names_encoding_fix(tmp_path):
    path = write(tmp_path, "Zürich;CH;*\nGenève;CH;*\n".encode("latin-1"))
    with pytest.raises(BlendinError, match=r"line 1 is not utf-8 text.*encoding='latin-1'"):
        from_csv(path)
    h = from_csv(path, encoding="latin-1").build(["Zürich"], "city")
    assert h.to_rows() == [["Zürich", "CH", "*"]]


def test_missing_file(tmp_path):
    with pytest.raises(BlendinError, match="not found"):
        from_csv(tmp_path / "nope.csv")


def test_to_csv_round_trip_and_atomic(tmp_path):
    h = intervals(5, 10).build(np.array(["3", "17", "12", "", "100"], dtype=object), "age")
    out = to_csv(h, tmp_path / "age.csv")
    assert out.read_text().splitlines()[0] == "3;0-4;0-9;*"
    assert out.read_text().splitlines()[-1] == ";;;*"  # missing (NaN) last
    again = from_csv(out).build(h.ground, "age")
    assert sorted(again.to_rows()) == sorted(h.to_rows())
    assert [p.name for p in tmp_path.iterdir()] == ["age.csv"]  # no temporary left
    tricky = Hierarchy.from_rows([["a;b", 'say "hi"', "*"], ["c", "d,e", "*"]])
    out = to_csv(tricky, tmp_path / "tricky.csv")
    assert sorted(from_csv(out, ";").build(["a;b", "c"]).to_rows()) == sorted(tricky.to_rows())
    out = to_csv(tricky, tmp_path / "tricky.tsv", delimiter="\t")
    assert from_csv(out).build(["c"]).to_rows() == [["c", "d,e", "*"]]
    with pytest.raises(BlendinError, match="needs a Hierarchy"):
        to_csv(intervals(5), tmp_path / "x.csv")


def test_toml_round_trip_relative_to_base_dir(tmp_path):
    (tmp_path / "hierarchies").mkdir()
    path = write(tmp_path / "hierarchies", "a;*\nb;*\n", "letters.csv")
    b = from_csv(path, delimiter=";", encoding="latin-1")
    table = b.to_toml(tmp_path)
    assert table == {"csv": "hierarchies/letters.csv", "delimiter": ";", "encoding": "latin-1"}
    again = builder_from_toml(tomllib.loads(tomli_w.dumps({"h": table}))["h"], tmp_path)
    assert again == b and again.to_toml(tmp_path) == table
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    assert from_csv(path).to_toml(elsewhere) == {"csv": path.resolve().as_posix()}
    assert builder_from_toml({"csv": str(path), "kind": "categorical"}, elsewhere) == from_csv(
        path, kind="categorical")
    with pytest.raises(BlendinError, match="unknown key 'sep'.*csv, delimiter, encoding, kind"):
        builder_from_toml({"csv": "x.csv", "sep": ";"}, tmp_path)


# ---------------------------------------------------------------------------------------------
# the shared benchmark hierarchies

HEIGHTS = {
    "adult": ("adult.csv", {"sex": 2, "age": 5, "race": 2, "marital-status": 3,
                            "education": 4, "native-country": 3, "workclass": 3,
                            "occupation": 3, "salary-class": 2}),
    "fars": ("fars_int.csv", {"iage": 6, "irace": 3, "ideathmon": 4, "ideathday": 4,
                              "isex": 2, "ihispanic": 3, "istatenum": 4, "iinjury": 3}),
}


@pytest.mark.parametrize("dataset", sorted(HEIGHTS))
def test_shared_hierarchies_cover_their_data(dataset):
    folder = DATA / dataset
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent")
    data_file, heights = HEIGHTS[dataset]
    table = pcsv.read_csv(folder / data_file, parse_options=pcsv.ParseOptions(delimiter=";"),
                          convert_options=pcsv.ConvertOptions(
                              column_types={c: "string" for c in heights}))
    for column, height in heights.items():
        path = folder / f"{data_file[:-4]}_hierarchy_{column}.csv"
        values = pc.unique(as_text(table.column(column))).to_numpy(zero_copy_only=False)
        h = from_csv(path).build(values, column)
        assert h.height == height, column
        assert sorted(h.ground) == sorted(values.tolist())
        with open(path, encoding="utf-8", newline="") as f:  # rows as the file has them
            expected = {row[0]: row for row in csv.reader(f, delimiter=";") if row}
        assert all(expected[row[0]] == row for row in h.to_rows()), column


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.text("ab;,|\t\"' xyz", min_size=1, max_size=6),
                          st.integers(0, 3)), min_size=1, max_size=20, unique_by=lambda t: t[0]),
       st.sampled_from([";", ",", "\t", "|"]))
def test_to_csv_from_csv_round_trip_property(tmp_path_factory, leaves, delimiter):
    rows = [[value, f"g{group}", f"h{group // 2}", "*"] for value, group in leaves]
    h = Hierarchy.from_rows(rows)
    path = to_csv(h, tmp_path_factory.mktemp("rt") / "h.csv", delimiter=delimiter)
    again = from_csv(path, delimiter).build(h.ground, "x")
    assert again.to_rows() == h.to_rows()
    if not any(d in value for value, _ in leaves for d in ";,\t|"):  # else ambiguous
        assert from_csv(path).build(h.ground, "x").to_rows() == h.to_rows()


def test_a_delimiter_given_that_is_not_the_files_is_named(tmp_path):
    path = write(tmp_path, "Asian;Asian;*\nWhite;White;*\n", "eth.csv")
    with pytest.raises(BlendinError, match="has one column with delimiter ',', and its "
                                           "lines hold ';'") as told:
        from_csv(path, delimiter=",")
    assert told.value.fix.startswith('write delimiter = ";"')
    assert from_csv(path).given().height == 3  # sniffed: three columns


def test_a_value_the_file_writes_otherwise_is_named_with_both_spellings(tmp_path):
    """A float column (pandas reads ages with a gap as 20.0, blendin writes 20) against a
    file of 20.0, or ZIPs read as 2138 against 02138: the error said to add rows for '20'
    and '21', which the file has. It names both spellings; a value of no number the file
    lists is reported as before."""
    path = tmp_path / "age.csv"
    path.write_text("20.0;20-29;*\n21.0;20-29;*\n007;0-9;*\n")
    with pytest.raises(BlendinError, match=r"writes 3 value\(s\) of 'age' otherwise than the "
                       r"data: '20' as '20.0', '21' as '21.0', '7' as '007'; fix: write them"):
        from_csv(path).build(np.array(["20", "21", "7"], dtype=object), "age")
    with pytest.raises(BlendinError, match=r"does not cover 1 value\(s\) of the data: '22'"):
        from_csv(path).build(np.array(["20.0", "22"], dtype=object), "age")
    built = from_csv(path).build(np.array(["20.0", "007"], dtype=object), "age")
    assert built.to_rows() == [["007", "0-9", "*"], ["20.0", "20-29", "*"]]
