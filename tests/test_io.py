import gzip
import os
import threading
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from blendin.errors import BlendinError
from blendin.io import Source, from_arrow, to_arrow, write_table
from blendin.parallel import read_ahead

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_sniffs_delimiter_and_keeps_text(tmp_path, delimiter):
    rows = [["zip", "age", "note"], ["02138", "007", "a b"], ["02139", "41", ""]]
    path = write(tmp_path / "d.csv", "\n".join(delimiter.join(r) for r in rows) + "\n")
    src = Source(path)
    assert src.delimiter == delimiter
    assert src.columns == ["zip", "age", "note"]
    table = src.read_all()
    assert table.column("zip").to_pylist() == ["02138", "02139"]
    assert table.column("age").to_pylist() == ["007", "41"]
    assert all(pa.types.is_string(t) for t in table.schema.types)


def test_batches_reiterable_and_chunked(tmp_path):
    n = 20_000
    df = pd.DataFrame({"a": [str(i % 97) for i in range(n)], "b": ["x"] * n})
    path = tmp_path / "big.csv"
    df.to_csv(path, index=False)
    src = Source(path, block_size=1 << 14)
    first = list(src.batches(["a"]))
    second = list(src.batches(["a"]))
    assert len(first) > 1, "a small block size must give several chunks"
    assert sum(b.num_rows for b in first) == sum(b.num_rows for b in second) == n
    assert first[0].schema.names == ["a"]
    assert pa.Table.from_batches(first).column("a").to_pylist() == df.a.tolist()



def _threads() -> int:
    return sum(t.name == "blendin-read-ahead" for t in threading.enumerate())


@pytest.mark.parametrize("depth", [1, 3, 50])
def test_read_ahead_keeps_order_and_raises_the_readers_error(depth):
    def failing():
        yield from range(10)
        raise ValueError("bad block")

    assert list(read_ahead(iter(range(100)), depth)) == list(range(100))
    seen = []
    with pytest.raises(ValueError, match="bad block"):
        for item in read_ahead(failing(), depth):
            seen.append(item)
    assert seen == list(range(10)) and _threads() == 0


def test_leaving_read_ahead_early_stops_the_thread_and_closes_the_reader():
    closed = []

    def endless():
        try:
            n = 0
            while True:
                yield n
                n += 1
        finally:
            closed.append(True)

    items = read_ahead(endless(), 4)
    assert [next(items) for _ in range(3)] == [0, 1, 2]
    items.close()
    assert closed == [True] and _threads() == 0


def test_a_file_read_ahead_is_the_file(tmp_path):
    n = 30_000
    path = tmp_path / "t.csv"
    pd.DataFrame({"a": [str(i) for i in range(n)]}).to_csv(path, index=False)
    src = Source(path, block_size=1 << 12)
    batches = list(src.batches())
    assert len(batches) > 20
    assert pa.Table.from_batches(batches).column("a").to_pylist() == [str(i) for i in range(n)]
    first = next(src.batches())  # an abandoned read leaves no thread behind
    del first
    assert _threads() == 0

def test_gzip_and_crlf(tmp_path):
    path = tmp_path / "d.csv.gz"
    path.write_bytes(gzip.compress(b"a;b\r\n1;x\r\n2;y\r\n"))
    table = Source(path).read_all()
    assert table.to_pydict() == {"a": ["1", "2"], "b": ["x", "y"]}


def test_parquet_and_memory_sources(tmp_path):
    table = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    pq.write_table(table, tmp_path / "d.parquet")
    assert Source(tmp_path / "d.parquet").read_all().equals(table)
    for frame in (table, table.to_pandas(), pl.from_arrow(table)):
        src = Source(frame)
        assert src.columns == ["a", "b"]
        assert src.read_all().num_rows == 3
        assert sum(b.num_rows for b in src.batches(["b"])) == 3


def test_given_delimiter_wins_over_sniffing(tmp_path):
    path = write(tmp_path / "d.csv", "a;b,c\n1;2,3\n")
    assert Source(path, delimiter=";").columns == ["a", "b,c"]
    assert Source(path, delimiter=",").columns == ["a;b", "c"]


def test_latin1_encoding_option(tmp_path):
    path = write(tmp_path / "d.csv", "name;city\nJosé;Zürich\n", "latin-1")
    with pytest.raises(BlendinError, match=r"not valid utf-8 .*line 2.*--encoding latin-1"):
        Source(path).read_all()
    assert Source(path, encoding="latin-1").read_all().column("name").to_pylist() == ["José"]


def test_bad_byte_far_from_header_is_located(tmp_path):
    body = "".join(f"{i};x\n" for i in range(5000))
    path = tmp_path / "d.csv"
    path.write_bytes(b"a;b\n" + body.encode() + b"5000;\xe9\n")
    offset = 4 + len(body.encode()) + 5
    with pytest.raises(BlendinError, match=f"at byte {offset} \\(line 5002\\)"):
        Source(path).read_all()


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("", "is empty"),
        ("a;b\n", "has no rows"),
        ("a;a;b\n1;2;3\n", "duplicate column names: 'a'"),
        ("a;b;c\n1;2;3\n", None),
    ],
)
def test_bad_files(tmp_path, text, pattern):
    path = write(tmp_path / "d.csv", text)
    if pattern is None:
        assert Source(path).read_all().num_rows == 1
        return
    with pytest.raises(BlendinError, match=pattern):
        Source(path).read_all()


def test_wrong_delimiter_suggests_the_right_one(tmp_path):
    path = write(tmp_path / "d.csv", "a;b;c\n1;2;3\n")
    with pytest.raises(BlendinError, match="--delimiter ';'"):
        Source(path, delimiter=",")
    tsv = write(tmp_path / "t.csv", "a\tb\n1\t2\n")
    with pytest.raises(BlendinError, match=r"--delimiter '\\t'"):
        Source(tsv, delimiter=",")


def test_ragged_rows_name_the_delimiter(tmp_path):
    path = write(tmp_path / "d.csv", "a,b\n1,2\n1,2,3\n")
    with pytest.raises(BlendinError, match="cannot parse .*delimiter"):
        Source(path).read_all()


def test_missing_file_is_named_with_a_near_name(tmp_path):
    write(tmp_path / "adult.csv", "a\n1\n")
    with pytest.raises(BlendinError, match=r"'.*adlut.csv' does not exist.*adult.csv"):
        Source(tmp_path / "adlut.csv")


def test_memory_errors():
    with pytest.raises(BlendinError, match="no rows"):
        Source(pd.DataFrame({"a": []}))
    dupes = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(BlendinError, match="duplicate column names"):
        Source(dupes)
    with pytest.raises(BlendinError, match="cannot read a list"):
        to_arrow([1, 2])


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".xlsx"])
def test_write_table_round_trip(tmp_path, suffix):
    table = pa.table({"age": ["20-29", "*"], "zip": ["021**", "*"]})
    path = write_table(table, tmp_path / f"out{suffix}")
    assert path.exists()
    if suffix == ".xlsx":
        from openpyxl import load_workbook

        rows = list(load_workbook(path).active.values)
        assert rows == [("age", "zip"), ("20-29", "021**"), ("*", "*")]
    else:
        assert Source(path).read_all().equals(table)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"out{suffix}"]


def test_write_csv_delimiter_and_styler(tmp_path):
    table = pa.table({"a": ["1"], "b": ["x;y"]})
    path = write_table(table, tmp_path / "o.csv", delimiter=";")
    assert Source(path, delimiter=";").read_all().to_pydict() == {"a": ["1"], "b": ["x;y"]}
    seen = []
    write_table(table, tmp_path / "o.xlsx", xlsx_styler=lambda ws: seen.append(ws.title))
    assert seen == ["data"]


def test_failed_write_leaves_nothing_and_keeps_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out.csv"
    target.write_text("old\n")

    def broken(table, path, **kwargs):
        Path(path).write_text("half")
        raise OSError("disk full")

    monkeypatch.setattr(pcsv, "write_csv", broken)
    with pytest.raises(OSError, match="disk full"):
        write_table(pa.table({"a": ["1"]}), target)
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["out.csv"]


def test_failed_styler_leaves_nothing(tmp_path):
    def styler(ws):
        raise RuntimeError("bad colour")

    with pytest.raises(RuntimeError):
        write_table(pa.table({"a": ["1"]}), tmp_path / "o.xlsx", xlsx_styler=styler)
    assert os.listdir(tmp_path) == []


def test_write_errors(tmp_path):
    with pytest.raises(BlendinError, match="unknown file type '.json'"):
        write_table(pa.table({"a": [1]}), tmp_path / "o.json")
    with pytest.raises(BlendinError, match="does not exist"):
        write_table(pa.table({"a": [1]}), tmp_path / "nope" / "o.csv")


def test_from_arrow_gives_the_kind_given():
    table = pa.table({"a": [1, 2]})
    assert isinstance(from_arrow(table, pd.DataFrame()), pd.DataFrame)
    assert isinstance(from_arrow(table, pl.DataFrame()), pl.DataFrame)
    assert from_arrow(table, table) is table
    assert from_arrow(table, "file.csv") is table
    assert from_arrow(table, pd.DataFrame()).a.tolist() == [1, 2]


def test_reads_adult():
    path = DATA / "adult" / "adult.csv"
    if not path.exists():
        pytest.skip("benchmark data absent")
    src = Source(path)
    assert src.delimiter == ";"
    assert src.columns[:3] == ["sex", "age", "race"]
    table = src.read_all()
    assert table.num_rows == 30162
    assert table.column("salary-class").to_pylist()[0] == "<=50K"


def test_written_files_follow_the_umask_or_keep_the_replaced_files_mode(tmp_path):
    import os
    import stat

    from blendin.io import write_table, write_text

    old = os.umask(0o022)
    try:
        fresh = write_table(pa.table({"a": ["x"]}), tmp_path / "release.csv")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
        note = tmp_path / "note.txt"
        note.write_text("old")
        note.chmod(0o600)
        write_text(note, "new")
        assert note.read_text() == "new" and stat.S_IMODE(note.stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_a_web_address_is_told_apart_from_a_missing_file():
    with pytest.raises(BlendinError, match="'https://example.com/x.csv' is not a file") \
            as refused:
        Source("https://example.com/x.csv").columns  # noqa: B018
    assert "download it first" in refused.value.fix
    with pytest.raises(BlendinError, match="does not exist"):
        Source("no-such-file.csv").columns  # noqa: B018


def test_a_binary_file_is_not_taken_for_text(tmp_path):
    binary = tmp_path / "photo.csv"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50)
    with pytest.raises(BlendinError, match=r"is not a text file: it holds NUL bytes, the "
                                           r"first at byte 8"):
        Source(binary).columns  # noqa: B018
    utf16 = tmp_path / "utf16.csv"
    utf16.write_text("zip,sex\n02138,f\n", encoding="utf-16")
    with pytest.raises(BlendinError, match="needs --encoding utf-16"):
        Source(utf16).columns  # noqa: B018
    assert Source(utf16, encoding="utf-16").columns == ["zip", "sex"]


def test_codes_kept_for_a_table_follow_numbers_its_owner_changes():
    """A Table of numbers may be a NumPy array's own memory: a later call reads what it
    holds then, not the codes an earlier call kept."""
    import numpy as np

    import blendin as bl

    age = np.random.default_rng(0).integers(20, 60, 500)
    table = pa.table({"age": pa.array(age), "sex": np.where(np.arange(500) % 2, "F", "M")})
    spec = bl.Spec(quasi_identifiers={"age": bl.intervals(5, 10, 20), "sex": bl.flat()},
                   models=[bl.KAnonymity(3)])
    assert "99" not in bl.anonymize(table, spec).data.column("age").to_pylist()
    age[:] = 99  # (the table shows 99 now, without a copy)
    assert set(bl.anonymize(table, spec).data.column("age").to_pylist()) == {"99"}


def test_a_release_gives_columns_back_with_their_pandas_and_polars_types():
    """Arrow alone turned a nullable Int64 column with a gap into float64, so an id of
    2**53 + 1 came back as 2**53 (and 7 as 7.0), a boolean column into object, a string
    one into str with NaN for NA, a polars Enum into Categorical."""
    import blendin as bl

    frame = pd.DataFrame({"sex": ["F", "M"] * 2,
                          "id": pd.array([2**53 + 1, None, 7, 8], dtype="Int64"),
                          "ok": pd.array([True, None, False, True], dtype="boolean"),
                          "note": pd.array(["a", None, "b", "c"], dtype="string[pyarrow]"),
                          "age": pd.array([30, 31, 42, 43], dtype="Int64")})
    spec = bl.Spec(quasi_identifiers={"sex": bl.flat(), "age": bl.intervals(20)},
                   models=[bl.KAnonymity(2)])
    released = bl.anonymize(frame, spec, keep_order=True).data
    for name in ("id", "ok", "note"):
        assert released[name].dtype == frame[name].dtype, name
    assert released["id"].tolist() == [2**53 + 1, pd.NA, 7, 8]
    assert all(isinstance(v, str) for v in released["age"])  # generalized: labels
    polar = pl.DataFrame({"sex": ["F", "M"] * 2,
                          "kind": pl.Series(["x", None, "y", "x"], dtype=pl.Enum(["x", "y"]))})
    out = bl.anonymize(polar, bl.Spec(quasi_identifiers={"sex": bl.flat()},
                                      models=[bl.KAnonymity(2)]), keep_order=True).data
    assert out.schema["kind"] == polar.schema["kind"]
    assert out["kind"].to_list() == polar["kind"].to_list()


def test_a_pandas_column_of_mixed_kinds_is_named():
    """An object column holding text and numbers (as Excel reads often give) ended in a
    bare ArrowTypeError; now a BlendinError names the column, the kinds and the fix."""
    frame = pd.DataFrame({"sex": ["F", "M"], "code": pd.Series(["x", 1.5], dtype=object)})
    with pytest.raises(BlendinError, match=r"column 'code' holds values of several kinds "
                       r"\(float, str\).*astype\(\"string\"\)"):
        to_arrow(frame)


def test_an_excel_release_holds_times_with_zones_and_refuses_what_a_cell_cannot(tmp_path):
    """openpyxl raised a bare TypeError for a timestamp with a time zone and an
    IllegalCharacterError for a text with a control character (a CSV file may hold a
    vertical tab): each after the whole run. The time is written as its text with the
    offset (the instant kept); control characters and bytes are refused, naming the
    column, bytes from the schema alone, before any work."""
    import datetime as dt

    from openpyxl import load_workbook

    from blendin.io import check_writable_types

    when = pa.array([dt.datetime(2020, 1, 31, 23, 30)], pa.timestamp("us", tz="UTC"))
    zoned = pa.table({"at": when.cast(pa.timestamp("us", tz="America/New_York"))})
    path = write_table(zoned, tmp_path / "zoned.xlsx")
    assert list(load_workbook(path).active.values) == [
        ("at",), ("2020-01-31 18:30:00.000000-0500",)]
    with pytest.raises(BlendinError, match=r"column 'note' holds a control character .*"
                       r"'a\\x0bb'"):
        write_table(pa.table({"note": ["a\x0bb", "tab\tand\nline"]}), tmp_path / "c.xlsx")
    with pytest.raises(BlendinError, match=r"column 'raw' holds bytes"):
        check_writable_types(pa.schema([("raw", pa.binary())]), ".xlsx")
    check_writable_types(pa.schema([("raw", pa.binary())]), ".csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["zoned.xlsx"]


def test_an_excel_release_keeps_every_digit_of_long_numbers(tmp_path):
    """openpyxl writes a whole number as a float: an id of 17 digits came back rounded
    (12345678901234567 as 12345678901234568). Excel keeps 15 significant digits, so such
    a column (and a decimal of more digits) is written as text; shorter ones stay numbers."""
    import decimal

    from openpyxl import load_workbook

    table = pa.table({"id": [12345678901234567, 7], "n": [7, 8],
                      "amount": pa.array([decimal.Decimal("1234567890123456.78"), None],
                                         pa.decimal128(38, 2)),
                      "price": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(38, 2))})
    rows = list(load_workbook(write_table(table, tmp_path / "ids.xlsx")).active.values)
    assert rows[1:] == [("12345678901234567", 7, "1234567890123456.78", 1.5),
                        ("7", 8, None, None)]


@pytest.mark.parametrize("header", [b'"age","zip"', b"age,zip", b'"age";"zip"'])
def test_a_byte_order_mark_before_a_quoted_name_is_no_part_of_it(tmp_path, header):
    """The mark was stripped after the header was split, so a quoted first name (R's
    write.csv, QUOTE_ALL writers saving UTF-8 with a BOM) was read as '"age"', quotes and
    all: the spec's column 'age' was missing."""
    path = tmp_path / "bom.csv"
    sep = b";" if b";" in header else b","
    path.write_bytes(b"\xef\xbb\xbf" + header + b"\r\n20" + sep + b"02138\r\n")
    source = Source(path)
    assert source.columns == ["age", "zip"]
    assert source.read_all().to_pydict() == {"age": ["20"], "zip": ["02138"]}
