"""What the app shows of a loaded table: per column its kind, distinct values and the share of
records whose value is unique, and a suggested role and hierarchy with the reason for each.

The suggestions are guesses for a person to confirm, never decisions: every one is editable
in the page. Counting is one Arrow ``value_counts`` per column, no loop over rows.

>>> import pyarrow as pa
>>> table = pa.table({"ssn": ["1", "2", "3", "4"], "dob": ["1970-01-02"] * 4,
...                   "diagnosis": ["a", "b", "a", "c"]})
>>> [(c.name, c.role) for c in profile(table)]
[('ssn', 'identifier'), ('dob', 'quasi-identifier'), ('diagnosis', 'sensitive')]
>>> profile(table)[0].reason
'ssn: names a person directly: identifier'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from blendin.roles import role_by_name

ROLES = ("identifier", "quasi-identifier", "sensitive", "insensitive", "person key")

#: share of unique values above which a column is taken for an identifier
IDENTIFIER_SHARE = 0.9

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_INT = re.compile(r"^-?\d+$")
_NUM = re.compile(r"^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


@dataclass
class ColumnProfile:
    """One column: its kind, distinct count, unique share and the suggested role/hierarchy."""

    name: str
    kind: str
    distinct: int
    unique_share: float
    role: str
    reason: str
    hierarchy: dict = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)


def kind_of(values: pa.Array) -> str:
    """``date``, ``code`` (digits of one width, some with leading zeros, as ZIP codes),
    ``integer``, ``number`` or ``text``: what every (non-empty) value looks like.

    >>> kind_of(pa.array(["02138", "02139"])), kind_of(pa.array(["1.5", "2"]))
    ('code', 'number')
    """
    text = pc.cast(values, pa.string()).filter(pc.not_equal(pc.cast(values, pa.string()), ""))
    if len(text) == 0:
        return "text"
    for kind, pattern in (("date", _DATE), ("integer", _INT), ("number", _NUM)):
        if pc.all(pc.match_substring_regex(text, pattern.pattern)).as_py():
            if kind == "integer" and _fixed_width_code(text):
                return "code"
            return kind
    return "text"


def _fixed_width_code(text: pa.Array) -> bool:
    """Digit strings of one width with leading zeros (ZIP codes), not counts."""
    lengths = pc.utf8_length(text)
    same = pc.min_max(lengths)
    return (same["min"].as_py() == same["max"].as_py()
            and pc.any(pc.starts_with(text, "0")).as_py())


def profile(table: pa.Table) -> list[ColumnProfile]:
    """Profile every column of ``table`` (values compared as text, as the library reads them)."""
    rows = max(table.num_rows, 1)
    out = []
    for name in table.column_names:
        nested = is_nested(table.schema.field(name).type)
        column = as_text(table.column(name))
        counts = pc.value_counts(column.combine_chunks())
        sizes = counts.field("counts")
        distinct = len(counts)
        unique_share = pc.sum(pc.equal(sizes, 1)).as_py() / rows
        kind = "nested" if nested else kind_of(counts.field("values"))
        role, reason = (("insensitive", "holds lists or records: kept as it is (it cannot "
                         "be a quasi-identifier or sensitive)") if nested else
                        suggest_role(name, kind, distinct, unique_share, rows))
        examples = [str(v) for v in counts.field("values")[:5].to_pylist()
                    if v is not None][:4]
        out.append(ColumnProfile(name, kind, distinct, unique_share, role, reason,
                                 suggest_hierarchy(kind, distinct), examples))
    return out


def is_nested(kind: pa.DataType) -> bool:
    """Lists, structs and maps (a database's arrays and records), which no QI can be."""
    return pa.types.is_nested(kind) or pa.types.is_map(kind)


def as_text(column) -> pa.ChunkedArray:
    """A column as text; nested values as Python writes them (for the page only).

    >>> as_text(pa.chunked_array([[[1, 2], None]])).to_pylist()
    ['[1, 2]', None]
    """
    if not is_nested(column.type):
        return pc.cast(column, pa.string())
    return pa.chunked_array([pa.array([None if v is None else str(v)
                                       for v in column.to_pylist()], pa.string())])


def suggest_role(name: str, kind: str, distinct: int, unique_share: float,
                 rows: int) -> tuple[str, str]:
    """The likely role of a column and why.

    >>> suggest_role("record", "text", 998, 0.998, 1000)
    ('identifier', 'unique in 99.8% of rows: likely an identifier')
    >>> suggest_role("colour", "text", 3, 0.0, 1000)[0]
    'insensitive'
    """
    by_name = role_by_name(name)
    if by_name is not None:
        return by_name
    if unique_share >= IDENTIFIER_SHARE and rows > 1:
        return "identifier", f"unique in {100 * unique_share:.1f}% of rows: likely an identifier"
    if kind == "date":
        return "quasi-identifier", "a date: may be known to others, quasi-identifier"
    return "insensitive", "no rule matched: kept as it is (change it if others know it)"


def suggest_hierarchy(kind: str, distinct: int) -> dict:
    """A starting hierarchy (as a spec TOML table) for a column of this kind.

    >>> suggest_hierarchy("date", 900), suggest_hierarchy("integer", 80)
    ({'dates': ['month', 'year', 'decade']}, {'intervals': [5, 10, 20]})
    """
    if kind == "date":
        return {"dates": ["month", "year", "decade"]}
    if kind == "code":
        return {"masking": True}
    if kind in ("integer", "number") and distinct > 10:
        return {"intervals": [5, 10, 20]}
    return {"flat": True}
