"""ARX hierarchy files: one row per value, ``value;level1;...;top``, no header.

ARX users bring their hierarchies as they are: the delimiter is sniffed among ``; , tab |``
when not given, CRLF and LF both work, the final newline is optional, fields may be quoted.
Errors name the file and the line. ``to_csv`` writes the same format (atomically).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import weakref
from functools import cached_property
from pathlib import Path

import numpy as np

from blendin.errors import BlendinError
from blendin.hierarchy.core import Hierarchy, HierarchyBuilder, distinct_text, isin_text, restrict
from blendin.hierarchy.dates import parse_dates
from blendin.hierarchy.intervals import number_or_nan, parse_numbers
from blendin.io import write_text

DELIMITERS = (";", ",", "\t", "|")
KINDS = ("numeric", "date", "categorical")
#: the last hierarchy each FromCsv built: ((kind, name, missing), values, hierarchy). Runs
#: on the same data ask for the same one: it is built once, and what it computes on demand
#: (its ground values' texts, looked up by every run) stays made
_LAST_BUILT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def sniff_delimiter(text: str, path: str = "the file") -> str:
    """The first of ``; , tab |`` that splits every line into the same number (2 or more)
    of fields; ``;`` (ARX's own) first, as labels such as ``[0,4]`` hold commas.

    Lines are split as CSV, so a quoted field may hold the other candidates.

    >>> sniff_delimiter("1,a,b\\n2,a,b\\n"), sniff_delimiter('1;"a,b";*\\n2;a;*')
    (',', ';')
    """
    sample = "\n".join(text.splitlines()[:200])
    best, best_key = None, None
    for rank, d in enumerate(DELIMITERS):
        try:
            counts = [len(r) for r in csv.reader(io.StringIO(sample), delimiter=d) if r]
        except csv.Error:
            continue
        if not counts or min(counts) < 2:
            continue
        key = (len(set(counts)) == 1, -rank, min(counts))
        if best_key is None or key > best_key:
            best, best_key = d, key
    if best is None:
        raise BlendinError(
            f"{path}: cannot tell the delimiter (none of ; , tab | is on every line)",
            fix="give it, e.g. from_csv(path, delimiter=';') (TOML: delimiter = \";\")",
        )
    return best


def read_rows(path: str | Path, delimiter: str | None = None,
              encoding: str = "utf-8") -> tuple[list[list[str]], np.ndarray, str]:
    """The rows of a hierarchy file, the line number of each, and the delimiter used."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BlendinError(f"hierarchy file {str(path)!r} not found",
                           fix="check the path (in a spec file, relative paths start from "
                           "the spec's folder)") from None
    except OSError as exc:
        raise BlendinError(f"cannot read hierarchy file {str(path)!r}: {exc.strerror}",
                           fix="check the path and its permissions") from None
    text = _decode(data, path, encoding)
    if not text.strip():
        raise BlendinError(f"hierarchy file {str(path)!r} is empty",
                           fix="give one row per value: value;level1;...;top")
    if delimiter is None:
        delimiter = sniff_delimiter(text, str(path))
    rows, lines = [], []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        for row in reader:
            if row and any(field.strip() for field in row):
                rows.append(row)
                lines.append(reader.line_num)
    except csv.Error as exc:
        raise BlendinError(f"{path} line {reader.line_num}: {exc}",
                           fix="check the quotes on that line (a field that starts with \" "
                           "must end with \")") from None
    if rows and all(len(row) == 1 for row in rows):  # (a delimiter given that is not its)
        other = next((d for d in ";,\t|" if d != delimiter and d in rows[0][0]), None)
        if other is not None:
            shown = "\\t" if other == "\t" else other
            raise BlendinError(f"hierarchy file {str(path)!r} has one column with delimiter "
                               f"{delimiter!r}, and its lines hold {other!r}",
                               fix=f'write delimiter = "{shown}" (or leave delimiter out: it '
                               "is sniffed)")
    return rows, np.asarray(lines), delimiter


def _decode(data: bytes, path: Path, encoding: str) -> str:
    codec = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    try:
        return data.decode(codec)
    except LookupError:
        raise BlendinError(f"unknown text encoding {encoding!r}",
                           fix="use e.g. encoding = \"utf-8\" or \"latin-1\"") from None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BlendinError(
            f"{path} line {line} is not {encoding} text (byte 0x{data[exc.start]:02x})",
            fix=f"save the file as UTF-8, or give its encoding: from_csv({str(path)!r}, "
            "encoding='latin-1') (TOML: encoding = \"latin-1\")",
        ) from None


def check_rows(rows: list[list[str]], lines: np.ndarray,
               path: str) -> tuple[np.ndarray, np.ndarray]:
    """Equal lengths, each value once, one parent per label; errors name the line.

    Returns the rows as a table and their line numbers, a row repeated word for word kept
    once (ARX accepts those, and some published files have them).
    """
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    bad = np.flatnonzero(lengths != lengths[0])
    if len(bad):
        i = int(bad[0])
        raise BlendinError(
            f"{path} line {lines[i]} has {lengths[i]} fields but line {lines[0]} has "
            f"{lengths[0]} ({len(bad)} line(s) differ)",
            fix="give every value the same number of levels (repeat a label to pad a row)",
        )
    table = np.array(rows, dtype=object)
    for level in range(table.shape[1] - 1):
        labels, first, inverse = np.unique(table[:, level], return_index=True,
                                           return_inverse=True)
        inverse = inverse.reshape(-1)
        if level == 0 and len(labels) < len(table):
            again = first[inverse] != np.arange(len(table))
            same = (table[first[inverse]] == table).all(axis=1)
            if (again & ~same).any():
                i = int(np.flatnonzero(again & ~same)[0])
                raise BlendinError(
                    f"{path} line {lines[i]}: value {table[i, 0]!r} is already listed, "
                    f"differently, on line {lines[first[inverse[i]]]}",
                    fix="list each value once in the first column",
                )
            return check_rows(table[~again].tolist(), lines[~again], path)
        parent = table[first[inverse], level + 1]
        differs = np.flatnonzero(parent != table[:, level + 1])
        if len(differs):
            i = int(differs[0])
            j = int(first[inverse[i]])
            raise BlendinError(
                f"{path} line {lines[i]}: {table[i, level]!r} generalizes to "
                f"{table[i, level + 1]!r} at level {level + 1}, but on line {lines[j]} to "
                f"{table[j, level + 1]!r}: not a tree",
                fix="give each label one parent, or make the labels distinct",
            )
    return table, lines


def read_hierarchy(path: str | Path, delimiter: str | None = None,
                   encoding: str = "utf-8") -> Hierarchy:
    """The whole hierarchy a file holds (categorical; see FromCsv for numbers and dates)."""
    rows, lines, _ = read_rows(path, delimiter, encoding)
    table, _ = check_rows(rows, lines, str(path))
    return _counted(Hierarchy.from_rows(table.tolist(), name=str(path)), rows)


def _counted(hierarchy: Hierarchy, rows: list[list[str]]) -> Hierarchy:
    """The hierarchy remembering the rows of the file under each label: ARX's domain, a
    repeated row counted again, as ARX's Loss counts it (see metrics, arx-loss)."""
    raw = np.array(rows, dtype=object).astype(str)
    leaves = []
    for level in range(hierarchy.height):
        labels, counts = np.unique(raw[:, level], return_counts=True)
        known = dict(zip(labels.tolist(), counts.tolist()))
        leaves.append(np.array([known[label] for label in
                                hierarchy.labels[level].astype(str)], np.int64))
    return dataclasses.replace(hierarchy, domain_leaves=tuple(leaves), domain_size=len(raw))


def with_kind(hierarchy: Hierarchy, kind: str | None, name: str, missing: str) -> Hierarchy:
    """The hierarchy as numbers or dates (NaN for the missing label) when asked or possible."""
    if kind == "categorical":
        return hierarchy
    if kind == "date":
        present = hierarchy.ground != missing
        numbers = np.full(len(present), np.nan)
        numbers[present] = parse_dates(hierarchy.ground[present], name).astype(np.int64)
        return dataclasses.replace(hierarchy, kind=kind, numbers=numbers)
    return as_numbers(numbered(hierarchy), kind == "numeric", name, missing)


def numbered(hierarchy: Hierarchy) -> Hierarchy:
    """The hierarchy holding each ground value's number, NaN where it is not one (still
    categorical: :func:`as_numbers` decides)."""
    return dataclasses.replace(hierarchy, numbers=number_or_nan(hierarchy.ground))


def as_numbers(numbered: Hierarchy, required: bool, name: str, missing: str) -> Hierarchy:
    """A :func:`numbered` hierarchy as numbers (NaN for the missing label) when every other
    ground value is one, else categorical; ``required`` raises instead, naming the values."""
    present = numbered.ground != missing
    numbers = np.where(present, numbered.numbers, np.nan)
    all_numbers = bool(np.isfinite(numbers[present]).all())
    if required and not all_numbers:
        parse_numbers(numbered.ground[present], name)  # raises, naming the values
    if required or (all_numbers and present.any()):
        return dataclasses.replace(numbered, kind="numeric", numbers=numbers)
    return dataclasses.replace(numbered, numbers=None)


def respelled(values: np.ndarray, numbered: Hierarchy, missing: str) -> list[tuple[str, str]]:
    """(the data's text, the file's text) of each data value the file does not list but
    writes as the same number (``20`` as ``20.0``: a float column read as 20, a file of
    ``20.0``; ``7`` as ``007``), the file's first such value."""
    values = distinct_text(values)
    absent = values[~isin_text(values, numbered.ground) & (values != missing)]
    if not len(absent):
        return []
    wanted = number_or_nan(absent)
    have = np.asarray(numbered.numbers, dtype=float)
    finite = np.flatnonzero(np.isfinite(have))
    if not len(finite) or not np.isfinite(wanted).any():
        return []
    order = finite[np.argsort(have[finite], kind="stable")]
    at = np.searchsorted(have[order], wanted).clip(max=len(order) - 1)
    found = have[order][at] == wanted
    return list(zip(absent[found].tolist(), numbered.ground[order[at[found]]].tolist()))


class FromCsv(HierarchyBuilder):
    """A hierarchy read from an ARX CSV file (read once, when the builder is made)."""

    def __init__(self, path: str | Path, delimiter: str | None = None, encoding: str = "utf-8",
                 kind: str | None = None) -> None:
        if kind is not None and kind not in KINDS:
            raise BlendinError(f"from_csv: unknown kind {kind!r}",
                               fix=f"use one of {', '.join(KINDS)}, or leave it out")
        if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1):
            raise BlendinError(f"from_csv: delimiter {delimiter!r} is not one character",
                               fix="give e.g. delimiter=';'")
        self.path = Path(path)
        self.delimiter = delimiter
        self.encoding = encoding
        self.kind = kind
        self._hierarchy = read_hierarchy(self.path, delimiter, encoding)
        #: the file read, resolved now: hashing must not touch the file system (every build
        #: looks its builder up by hash)
        self._resolved = self.path.resolve()

    def build(self, values: np.ndarray, name: str = "column", missing: str = "") -> Hierarchy:
        key = (self.kind, name, missing)
        last = _LAST_BUILT.get(self)
        if last is not None and last[0] == key and np.array_equal(last[1], values):
            return last[2]
        hierarchy = self._build(values, name, missing)
        _LAST_BUILT[self] = (key, np.array(values, copy=True), hierarchy)
        return hierarchy

    def _build(self, values: np.ndarray, name: str, missing: str) -> Hierarchy:
        source = f"the hierarchy file {str(self.path)!r}"
        try:
            if self.kind in ("categorical", "date"):
                restricted = restrict(self._hierarchy, values, name, missing, source=source)
                return with_kind(restricted, self.kind, name, missing)
            cut = restrict(self._numbered, values, name, missing, source=source)
        except BlendinError:
            pairs = respelled(values, self._numbered, missing)
            if not pairs:
                raise
            raise BlendinError(
                f"{source} writes {len(pairs)} value(s) of {name!r} otherwise than the data: "
                + ", ".join(f"{data!r} as {file!r}" for data, file in pairs[:5])
                + (f" and {len(pairs) - 5} more" if len(pairs) > 5 else ""),
                fix=f"write them in the file as the data has them, or read {name!r} as the "
                "file writes them (a CSV file's text is read as it is; pandas: "
                "dtype=str)") from None
        return as_numbers(cut, self.kind == "numeric", name, missing)

    @cached_property
    def _numbered(self) -> Hierarchy:
        """The file's ground values parsed as numbers once, for every build to cut down."""
        return numbered(self._hierarchy)

    def given(self) -> Hierarchy:
        return self._given

    @cached_property
    def _given(self) -> Hierarchy:
        """The whole file's hierarchy with its kind, made once (every run asks for it)."""
        try:
            return with_kind(self._hierarchy, self.kind, str(self.path), "")
        except BlendinError as error:  # (the values are the file's, not a column's)
            raise BlendinError(
                f"the hierarchy file {str(self.path)!r} is declared kind = \"{self.kind}\", "
                f"and has {error.problem.split(' has ', 1)[-1]}",
                fix="write kind = \"categorical\" (or leave kind out), or correct the "
                "file's values") from None

    def to_toml(self, base_dir: Path | None = None) -> dict:
        path = self.path.resolve()
        if base_dir is not None and path.is_relative_to(Path(base_dir).resolve()):
            path = path.relative_to(Path(base_dir).resolve())  # else absolute
        table: dict = {"csv": path.as_posix()}
        if self.delimiter is not None:
            table["delimiter"] = self.delimiter
        if self.encoding != "utf-8":
            table["encoding"] = self.encoding
        if self.kind is not None:
            table["kind"] = self.kind
        return table

    def _key(self) -> tuple:
        return (self._resolved, self.delimiter, self.encoding, self.kind)

    def __eq__(self, other: object) -> bool:
        return type(other) is FromCsv and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in (("delimiter", self.delimiter),
                        ("kind", self.kind)) if v is not None)
        if self.encoding != "utf-8":
            extra += f", encoding={self.encoding!r}"
        return f"from_csv({str(self.path)!r}{extra})"


def from_csv(path: str | Path, delimiter: str | None = None, *, encoding: str = "utf-8",
             kind: str | None = None) -> FromCsv:
    """An ARX hierarchy file (``value;level1;...;top`` per line, no header).

    The file is read and checked at once (equal row lengths, each value once, a tree);
    build() keeps the rows of the data's values and fails if a value has no row. ``kind``
    (numeric, date, categorical) defaults to numeric when every value is a number.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "sex.csv"
    >>> _ = path.write_text("male;*\\r\\nfemale;*")
    >>> from_csv(path).build(["male"], "sex").to_rows()
    [['male', '*']]
    """
    return FromCsv(path, delimiter, encoding, kind)


def to_csv(hierarchy: Hierarchy, path: str | Path, delimiter: str = ";") -> Path:
    """Write ``hierarchy`` as an ARX hierarchy file (UTF-8, LF), atomically; returns the path.

    Rows follow the values' numbers when there are some, else the text order.

    >>> import tempfile, pathlib
    >>> h = Hierarchy.from_rows([["9", "5-9", "*"], ["10", "10-14", "*"]], kind="numeric",
    ...                         numbers=[9, 10])
    >>> out = to_csv(h, pathlib.Path(tempfile.mkdtemp()) / "age.csv")
    >>> out.read_text()
    '9;5-9;*\\n10;10-14;*\\n'
    """
    if not isinstance(hierarchy, Hierarchy):
        raise BlendinError(f"to_csv needs a Hierarchy, got {type(hierarchy).__name__}",
                           fix="build it first: builder.build(values, name)")
    path = Path(path)
    rows = np.array(hierarchy.to_rows(), dtype=object)
    if hierarchy.numbers is not None:
        rows = rows[np.argsort(hierarchy.numbers, kind="stable")]  # NaN (missing) last
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator="\n").writerows(rows.tolist())

    write_text(path, buffer.getvalue())
    return path

