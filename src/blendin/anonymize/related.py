"""Related tables: one release of several tables that share a person key.

A person table (one row a person: ``patients``) and event tables (any rows a person:
``visits``, ``prescriptions``) are released together: each column is generalized at one
level wherever it appears, and a person suppressed is removed from every table.

The tables are searched, released and checked as one *stack*: every event row, with its
person's columns of the person table joined, and a ``table`` column naming the table it
came from (a quasi-identifier of its own that is never generalized: an attacker who sees
a person's rows sees which table each is in); the person table's own row joins the stack
for people with no event row, and for everyone when a column of the person table appears
in an event table too (a person's own value must count). A person's signature is then
their person-level values plus the set of their tuples in each table; a cell of a column
that a row's table lacks is a missing value. The stack's release is split back into the
tables, each with its own columns, and the key replaced by a random person number (the same
in every table, drawn afresh each run) so that the released tables still join.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import as_text
from blendin.errors import BlendinError, preview
from blendin.hierarchy.core import Hierarchy, first_seen
from blendin.io import Source, from_arrow, to_arrow, write_table
from blendin.outputs import check_paths, together
from blendin.people import _empty
from blendin.spec import Spec

#: the column of the stack that names each row's table
TABLE = "table"


@dataclass(frozen=True, eq=False)
class Stack:
    """Related tables as one table to search, release and check (see the module)."""

    table: pa.Table
    #: the tables' names, the person table first; each one's key column and columns
    names: tuple[str, ...]
    keys: Mapping[str, str]
    columns: Mapping[str, tuple[str, ...]]
    #: the stack's person key (counted, never released), its released copy (for the
    #: split) and the table column
    key: str
    link: str
    tag: str
    #: every person has their person table's row in the stack (a column is in the person
    #: table and an event table both); else only those without event rows
    person_rows: bool = False

    def spec(self, spec: Spec) -> Spec:
        """``spec`` for the stack: its key counts people, its table column is a
        quasi-identifier that keeps its value at every node and costs nothing."""
        tags = Hierarchy.from_rows([[name] for name in self.names])
        return dataclasses.replace(
            spec, tables={}, person=self.key,
            quasi_identifiers={**spec.quasi_identifiers, self.tag: tags},
            weights={**spec.weights, self.tag: 0.0})

    def split(self, release: pa.Table, seed: int | None = None) -> dict[str, pa.Table]:
        """The stack's (verified) release as the tables, each with its own columns in its
        own order, the key replaced by a random person number 1, 2, ... shared by all."""
        keys = as_text(release.column(self.link))
        people = pc.unique(keys)
        rng = np.random.default_rng(secrets.randbits(63) if seed is None else seed)
        number = pa.array(rng.permutation(len(people)) + 1)
        pseudonym = number.take(pc.index_in(keys, value_set=people))
        tags = release.column(self.tag)
        tables = {}
        for name in self.names:
            rows = pc.equal(tags, name)
            if name == self.names[0] and not self.person_rows:
                rows = _first_of_each(pseudonym)  # every row carries the person's columns
            part = release.filter(rows)
            numbers = pseudonym.filter(rows)
            tables[name] = pa.table({
                column: numbers if column == self.keys[name] else part.column(column)
                for column in self.columns[name]})
        return tables


def _first_of_each(numbers: pa.Array) -> pa.Array:
    """True on the first row of each person number."""
    values = np.asarray(numbers.to_numpy(zero_copy_only=False))
    first = np.zeros(len(values), bool)
    first[np.unique(values, return_index=True)[1]] = True
    return pa.array(first)


def read_tables(data: Mapping, spec: Spec) -> dict[str, pa.Table]:
    """The related tables ``data`` names (DataFrames, Arrow tables or file paths), checked
    against the spec's ``[tables]``, in its order."""
    if not spec.tables:
        raise BlendinError(
            f"several tables were given ({', '.join(map(str, data))}), and the spec names "
            "no related tables", fix='add a [tables.NAME] section for each, e.g. '
            '[tables.patients] person = "patient_id" (docs/people.md)')
    for name in data:
        if name not in spec.tables:
            raise BlendinError(f"the spec names no table {name!r}",
                               fix=f"name the inputs {', '.join(spec.tables)} as the "
                                   "spec's [tables] do (--input NAME=FILE)")
    tables = {}
    for name in spec.tables:
        if name not in data:
            raise BlendinError(f"no input for the spec's table {name!r}",
                               fix=f"give --input {name}=FILE (a {name!r} key of the dict)")
        given = data[name]
        if isinstance(given, str | os.PathLike):
            given = Source(given, delimiter=spec.delimiter, encoding=spec.encoding)
        tables[name] = to_arrow(given)
    return tables


def stack(tables: Mapping[str, pa.Table], spec: Spec) -> Stack:
    """The related ``tables`` (the spec's ``[tables]``, person table first) as one stack,
    after checking their keys: present in every row, once a person in the person table,
    and naming a person of the person table in every event row."""
    names = tuple(spec.tables)
    keys = dict(spec.tables)
    for name in names:
        _has_columns(name, tables[name], [keys[name]], "the person key ([tables] person)")
    _has_roles(tables, spec)
    owner, *events = names
    people = _person_keys(tables[owner], owner, keys[owner], spec.missing)
    taken = {c for t in tables.values() for c in t.column_names}
    tag = _free_name(TABLE, taken)
    key = _free_name("person", taken | {tag})  # a table may have a column named as a key
    link = _free_name("link", taken | {tag, key})
    own = [c for c in tables[owner].column_names if c != keys[owner]]
    parts, with_rows = [], np.zeros(len(people), bool)
    shared = any(set(own) & set(tables[e].column_names) - {keys[e]} for e in events)
    for name in events:
        table = tables[name]
        at = _event_owners(table, name, keys[name], people, owner, spec.missing)
        with_rows[at] = True
        mine = [c for c in table.column_names if c != keys[name]]
        joined = {c: tables[owner].column(c).take(pa.array(at)) for c in own if c not in mine}
        parts.append(pa.table({key: people.take(pa.array(at)),
                               tag: pa.array([name] * table.num_rows, pa.string()),
                               **{c: table.column(c) for c in mine}, **joined}))
    alone = np.ones(len(people), bool) if shared else ~with_rows
    if alone.any():
        rows = tables[owner].filter(pa.array(alone))
        parts.insert(0, pa.table({key: as_text(rows.column(keys[owner])),
                                  tag: pa.array([owner] * rows.num_rows, pa.string()),
                                  **{c: rows.column(c) for c in own}}))
    columns = {name: tuple(tables[name].column_names) for name in names}
    whole = _concat(_filled(parts, tables, list(spec.quasi_identifiers)))
    return Stack(whole.append_column(link, whole.column(key)), names, keys, columns, key,
                 link, tag, bool(shared))


def _has_columns(table: str, data: pa.Table, names: Sequence[str], role: str) -> None:
    for name in names:
        if name not in data.column_names:
            raise BlendinError(f"table {table!r} has no column {name!r} ({role})",
                               fix=f"the columns are: {preview(data.column_names, 12)}")


def _has_roles(tables: Mapping[str, pa.Table], spec: Spec) -> None:
    """Every column the spec names is in some table."""
    present = {c for t in tables.values() for c in t.column_names}
    for role, names in spec._role_lists():
        for name in names:
            if role != "person key" and name not in present:
                raise BlendinError(f"no table has the column {name!r} ({role})",
                                   fix="check the spec's column names against the tables'")


def _person_keys(table: pa.Table, name: str, key: str, missing: str) -> pa.Array:
    """The person table's keys as text, each non-empty and on one row only."""
    text = as_text(table.column(key), missing).combine_chunks()
    _no_empty(text, name, key, missing)
    encoded = pc.dictionary_encode(text)
    if len(encoded.dictionary) < table.num_rows:
        codes = encoded.indices.to_numpy()
        first = first_seen(codes, len(encoded.dictionary))[codes]
        again = int(np.flatnonzero(first != np.arange(len(codes)))[0])
        first = int(first[again])
        raise BlendinError(
            f"table {name!r}, the person table, has two rows of one person (rows "
            f"{first + 1} and {again + 1}, column {key!r}): it holds one row a person",
            fix=f"keep one row a person in {name!r}, or list another table first in "
                "[tables] (the first is the person table)")
    return text


def _no_empty(text: pa.Array, table: str, key: str, missing: str) -> None:
    empty = np.flatnonzero(_empty(text, missing).to_numpy(zero_copy_only=False))
    if len(empty):
        raise BlendinError(
            f"the person key {key!r} of table {table!r} is empty on row {empty[0] + 1} "
            f"({len(empty):,} row(s) in all): every row must name its person",
            fix=f"fill in {key!r} on every row of {table!r}, or drop those rows")


def _event_owners(table: pa.Table, name: str, key: str, people: pa.Array, owner: str,
                  missing: str) -> np.ndarray:
    """Each event row's person (their row in the person table)."""
    text = as_text(table.column(key), missing).combine_chunks()
    _no_empty(text, name, key, missing)
    at = pc.index_in(text, value_set=people)
    if at.null_count:
        row = int(np.flatnonzero(at.is_null().to_numpy(zero_copy_only=False))[0])
        raise BlendinError(
            f"row {row + 1} of table {name!r} names a person who is not in {owner!r}, the "
            f"person table ({at.null_count:,} row(s) in all)",
            fix=f"add those people to {owner!r}, or drop their rows from {name!r}")
    return at.to_numpy(zero_copy_only=False).astype(np.int64)


def _filled(parts: Sequence[pa.Table], tables: Mapping[str, pa.Table],
            qis: Sequence[str]) -> list[pa.Table]:
    """Each part with the quasi-identifiers its table lacks, as one value of the column
    (the first the data has): the same in every row of the part, it tells none of them
    apart, and every hierarchy covers it. (Absent sensitive values stay empty.)"""
    fillers = {}
    for qi in qis:
        column = next(t.column(qi) for t in tables.values() if qi in t.column_names)
        given = pc.drop_null(column)
        fillers[qi] = given[0] if len(given) else column[0]
    return [_with(part, fillers) for part in parts]


def _with(part: pa.Table, fillers: Mapping[str, pa.Scalar]) -> pa.Table:
    for qi, value in fillers.items():
        if qi not in part.column_names:
            part = part.append_column(qi, pa.array([value.as_py()] * part.num_rows,
                                                   value.type))
    return part


def _free_name(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    return name


def _concat(parts: Sequence[pa.Table]) -> pa.Table:
    """The parts as one table (a column a part lacks is null there); a column of
    different types in different tables is read as text."""
    try:
        return pa.concat_tables(parts, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pa.concat_tables([pa.table({c: as_text(t.column(c)) for c in t.column_names})
                                 for t in parts], promote_options="permissive")


def like_inputs(tables: Mapping[str, pa.Table], data: Mapping) -> dict:
    """Each released table as the kind of table its input was (a file's: pyarrow)."""
    return {name: table if isinstance(data[name], str | os.PathLike)
            else from_arrow(table, data[name]) for name, table in tables.items()}


def table_paths(folder: str | os.PathLike, names: Sequence[str], data: Mapping,
                suffix: str | None = None) -> dict[str, Path]:
    """Where each released table is written in ``folder``: its name, and the suffix of its
    input file (``suffix`` where given, ``.csv`` for an in-memory input)."""
    folder = Path(folder)
    paths = {}
    for name in names:
        given = data.get(name)
        kind = suffix or (Path(given).suffix if isinstance(given, str | os.PathLike)
                          else ".csv")
        paths[name] = folder / f"{name}{kind}"
    return paths


def check_folder(folder: str | os.PathLike, paths: Mapping[str, Path], data: Mapping,
                 spec: Spec, force: bool = True) -> None:
    """Before any work: the folder is no file, and no released table replaces an input."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise BlendinError(f"{str(folder)!r} is a file, and related tables are written to "
                           "a folder (one file a table)", fix="give a folder, e.g. -o release/")
    if not folder.exists():  # made once the release is proven: nothing in it to replace
        if not folder.parent.is_dir():
            raise BlendinError(f"folder {str(folder.parent)!r} does not exist",
                               fix="create it first, or write somewhere else")
        return
    inputs = {f"the input {name}": str(given) for name, given in data.items()
              if isinstance(given, str | os.PathLike)}
    inputs.update({label: str(path) for label, path in spec.files_read().items()})
    check_paths(inputs, {f"the release of {name}": (str(path), "table")
                         for name, path in paths.items()}, force=force)


def write_tables(tables: Mapping[str, pa.Table], paths: Mapping[str, Path], *,
                 delimiter: str = ",", escape_formulas: bool = False) -> dict[str, Path]:
    """Write every table to its path; all take their names together, or none."""
    for path in paths.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    with together():
        return {name: write_table(tables[name], paths[name], delimiter=delimiter,
                                  escape_formulas=escape_formulas)
                for name in tables}
