"""A CSV file parsed in windows on several threads reads as the same rows, and fails with the
same errors, as the file read one block after the other: windows are cut at line breaks an
even number of quotes precedes, and a window that ended inside a quoted value (or failed)
hands the rest of the file to the block-by-block reader."""

import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blendin import io
from blendin.errors import BlendinError
from blendin.io import Source, _record_end, _windows


@pytest.fixture(autouse=True)
def several_threads(monkeypatch):
    """Windows are read where there are several threads: on a machine of one core too."""
    monkeypatch.setattr(io, "workers", lambda: 2)

FIELDS = st.one_of(
    st.text(alphabet="ab, éß", max_size=6),
    st.text(alphabet='ab"\n;\r', max_size=6).map(lambda t: '"' + t.replace('"', '""') + '"'),
    st.sampled_from(["", '""', "x y", 'in"side', '"a\nb"', '"\r\n"', "ÄÖ"]),
)


def _both(path, block: int, columns=None, encoding="utf-8", whole: int = 1 << 22):
    """The rows read in windows of ``block`` bytes, and in blocks of ``whole`` bytes one
    after the other (by default the file in one: Arrow's block reader can misread a quoted
    line break that a block boundary cuts), or each one's error."""
    def read(windows: bool):
        source = Source(path, delimiter=";", block_size=block if windows else whole,
                        encoding=encoding)
        if not windows:
            source._csv_windows = source._csv_stream
        try:
            return pa.Table.from_batches(list(source.batches(columns)))
        except BlendinError as error:
            return f"error: {error}"
    return read(True), read(False)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(FIELDS, min_size=3, max_size=3), min_size=1, max_size=40),
       endings=st.sampled_from(["\n", "\r\n"]), block=st.sampled_from([64, 100, 1 << 12]),
       empty_lines=st.booleans(), last_break=st.booleans())
def test_windows_read_as_the_blocks_do(tmp_path_factory, rows, endings, block, empty_lines,
                                       last_break):
    lines = ["a;b;c", *(";".join(row) for row in rows)]
    if empty_lines:
        lines.insert(len(lines) // 2, "")
    path = tmp_path_factory.mktemp("w") / "t.csv"
    path.write_bytes((endings.join(lines) + (endings if last_break else "")).encode())
    windowed, streamed = _both(path, block)
    if isinstance(streamed, pa.Table):
        assert isinstance(windowed, pa.Table) and windowed.equals(streamed)
    else:
        assert windowed == streamed


def test_a_quote_inside_an_unquoted_value_and_line_breaks_in_quotes(tmp_path):
    """A quote within an unquoted value is a character (the quotes' count is then no guide)
    and quoted values hold line breaks and delimiters: the rows are the file's."""
    rows = ['5\'11";x;"multi\nline ' + str(i) + '"' for i in range(300)]
    rows += [f'{i};"semi;colon";plain' for i in range(300)]
    path = tmp_path / "q.csv"
    path.write_text("h;w;note\n" + "\n".join(rows) + "\n")
    windowed, streamed = _both(path, 64)
    assert windowed.equals(streamed) and windowed.num_rows == 600
    assert windowed.column("note")[0].as_py() == "multi\nline 0"


@pytest.mark.parametrize("block", [64, 1 << 12])
def test_the_same_error_for_a_ragged_row_and_a_bad_byte(tmp_path, block):
    ragged = tmp_path / "r.csv"
    ragged.write_text("a;b\n" + "1;2\n" * 500 + "1;2;3\n" + "4;5\n" * 10)
    windowed, streamed = _both(ragged, block)
    assert windowed == streamed and "Expected 2 columns, got 3" in windowed
    assert "Row #502:" in windowed  # numbered, though several threads parsed it
    bad = tmp_path / "b.csv"
    bad.write_bytes(b"a;b\n" + b"1;2\n" * 50_000 + b"\xff;2\n")  # past the header's read
    windowed, streamed = _both(bad, block)
    assert windowed == streamed and "not valid utf-8" in windowed


def test_latin1_columns_and_a_header_only_file(tmp_path):
    path = tmp_path / "l.csv"
    path.write_bytes(("name;city\n" + "Jürgen;Köln\nAnaïs;Orléans\n" * 400).encode("latin-1"))
    windowed, streamed = _both(path, 64, columns=["city"], encoding="latin-1")
    assert windowed.equals(streamed) and windowed.column("city")[1].as_py() == "Orléans"
    empty = tmp_path / "h.csv"
    empty.write_text("a;b\n")
    assert _both(empty, 16)[0] == _both(empty, 16)[1]
    assert "no rows" in _both(empty, 16)[0]


def test_windows_end_after_an_even_count_of_quotes(tmp_path):
    assert _record_end(b'a;"x\ny"\nb;c\n') == 12
    assert _record_end(b'a;"x\ny\nb') is None  # every break inside the quotes
    assert _record_end(b"no break") is None
    path = tmp_path / "t.csv"
    text = b'h\n"1\n2"\n3\n' * 50
    path.write_bytes(text)
    with open(path, "rb") as file:
        read = list(_windows(file.fileno(), len(text), 7, room=3))
    assert all(len(held) >= end - start + 3 for start, end, held in read)  # room after
    windows = [bytes(held[:end - start]) for start, end, held in read]
    assert b"".join(windows) == text
    assert all(window.count(b'"') % 2 == 0 for window in windows)


def test_a_record_longer_than_the_windows_may_grow_is_read_block_by_block(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("a;b\n1;" + "x" * 500 + "\n2;y\n" + "3;z\n" * 100)
    with open(path, "rb") as file:
        windows = list(_windows(file.fileno(), os.path.getsize(path), 16))
    assert windows[-1][2] is None  # no line break in 8 windows: the rest goes on in blocks
    windowed, streamed = _both(path, 16)
    assert windowed.equals(streamed) and windowed.column("b")[0].as_py() == "x" * 500
    windowed, streamed = _both(path, 512)
    assert windowed.equals(streamed) and windowed.column("b")[0].as_py() == "x" * 500


@pytest.mark.parametrize("threads", [1, 2])
def test_a_quoted_record_longer_than_a_block_is_read(tmp_path, monkeypatch, threads):
    # Arrow's block reader fails on a record with line breaks longer than its block
    # ("straddling object"): read again with larger blocks, no row lost or repeated
    monkeypatch.setattr(io, "workers", lambda: threads)
    monkeypatch.setattr(io, "STREAM_BLOCK", 64)
    long = "x\n" * 2000
    path = tmp_path / "long.csv"
    path.write_text("a;b\n" + "1;y\n" * 300 + f'2;"{long}"\n' + "3;z\n" * 300)
    table = pa.Table.from_batches(list(Source(path, delimiter=";", block_size=64).batches()))
    assert table.column("a").to_pylist() == ["1"] * 300 + ["2"] + ["3"] * 300
    assert table.column("b")[300].as_py() == long
