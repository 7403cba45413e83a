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
their person-level values plus the set of their tuples in each table. The stack's release
is split back into the tables, each with its own columns, and the key replaced by a random
person number (the same in every table, drawn afresh each run) so that the released
tables still join.

The stack is made and split batch by batch: files in, files out, only the person table
is held in memory (:func:`stack_batches`, :func:`split_batches`).
"""

from __future__ import annotations

import dataclasses
import os
import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import as_text
from blendin.engines.embedded import BatchWriter
from blendin.engines.kernels import repeated
from blendin.errors import BlendinError, preview
from blendin.hierarchy.core import Hierarchy, first_seen
from blendin.io import Source, atomic_path, from_arrow
from blendin.outputs import check_paths, together_in
from blendin.people import empty_keys
from blendin.spec import Spec

#: the column of the stack that names each row's table
TABLE = "table"


@dataclass(eq=False)
class Stack:
    """Related tables as one table to search, release and check (see the module)."""

    #: the tables' names, the person table first; each one's key column and columns
    names: tuple[str, ...]
    keys: Mapping[str, str]
    columns: Mapping[str, tuple[str, ...]]
    #: the stack's person key (counted, never released), its released copy (for the
    #: split) and the table column
    key: str
    link: str
    tag: str
    #: the stack's columns and types
    schema: pa.Schema
    #: every person has their person table's row in the stack (a column is in the person
    #: table and an event table both); else only those without event rows
    person_rows: bool = False
    #: each table's value in the table column (its name; its position in a database)
    tags: tuple[str, ...] = ()
    #: in memory: the person table, its keys as text (person ``i`` is row ``i``), and the
    #: value a row gets in a QI its table lacks
    people: pa.Table | None = None
    people_keys: pa.Array | None = None
    fillers: Mapping[str, object] = field(default_factory=dict)
    #: the people with event rows (filled as the stack is made)
    with_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    #: each table's rows, counted as the stack is made
    records: dict[str, int] = field(default_factory=dict)

    @property
    def owner(self) -> str:
        return self.names[0]

    def table_schema(self, name: str) -> pa.Schema:
        """The columns and types of table ``name`` as released (its key: a number)."""
        return pa.schema([(c, pa.int64() if c == self.keys[name] else self.schema.field(c).type)
                          for c in self.columns[name]])

    def spec(self, spec: Spec) -> Spec:
        """``spec`` for the stack: its key counts people, its table column is a
        quasi-identifier that keeps its value at every node and costs nothing."""
        tags = Hierarchy.from_rows([[tag] for tag in self.tags])
        return dataclasses.replace(
            spec, tables={}, person=self.key,
            quasi_identifiers={**spec.quasi_identifiers, self.tag: tags},
            weights={**spec.weights, self.tag: 0.0})


def refuse_options(given: Mapping[str, object]) -> None:
    """The options related tables do not take (``given``: each keyword argument's value,
    None or False when not given), named as a flag and as the keyword; a name given as a
    flag (``--dry-run``) is one of the command line only."""
    for name, value in given.items():
        if value is not None and value is not False:
            if name.startswith("--"):
                raise BlendinError(f"{name} does not work with related tables yet",
                                   fix=f"leave out {name}")
            flag = "--" + name.replace("_", "-")
            raise BlendinError(f"{flag} ({name}=) does not work with related tables yet",
                               fix=f"leave out {flag} ({name}= in Python)")


def sources(data: Mapping, spec: Spec) -> dict[str, Source]:
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
    found = {}
    for name in spec.tables:
        if name not in data:
            raise BlendinError(f"no input for the spec's table {name!r}",
                               fix=f"give --input {name}=FILE (in Python: a {name!r} key "
                               "of the dict)")
        found[name] = Source(data[name], delimiter=spec.delimiter, encoding=spec.encoding,
                             empty_ok=name != spec_owner(spec))
    return found


def spec_owner(spec: Spec) -> str:
    """The person table: the first of the spec's ``[tables]``."""
    return next(iter(spec.tables))


def layout(tables: Mapping, spec: Spec, tags: Sequence[str] | None = None) -> Stack:
    """How the related ``tables`` (the spec's ``[tables]``, person table first; sources
    with ``columns`` and ``types()``, in memory or in a database) stack: the names of its
    own columns, and the type of each column (text where the tables disagree)."""
    names = tuple(spec.tables)
    keys = dict(spec.tables)
    for name in names:
        _has_columns(name, tables[name].columns, [keys[name]],
                     "the person key ([tables] person)")
    _has_roles(tables, spec)
    taken = {c for t in tables.values() for c in t.columns}
    tag = _free_name(TABLE, taken)
    key = _free_name("person", taken | {tag})  # a table may have a column named as a key
    link = _free_name("link", taken | {tag, key})
    own = set(tables[names[0]].columns) - {keys[names[0]]}
    shared = any(own & (set(tables[e].columns) - {keys[e]}) for e in names[1:])
    types: dict[str, set] = {}
    for name in names:
        for column, kind in tables[name].types().items():
            if column != keys[name]:
                types.setdefault(column, set()).add(kind)
    schema = pa.schema([(key, pa.string()), (tag, pa.string()),
                        *((c, k.pop() if len(k) == 1 else pa.string())
                          for c, k in types.items()), (link, pa.string())])
    columns = {name: tuple(tables[name].columns) for name in names}
    return Stack(names, keys, columns, key, link, tag, schema, bool(shared),
                 tuple(tags or names))


def stack(tables: Mapping[str, Source], spec: Spec) -> Stack:
    """:func:`layout`, and the person table read into memory after checking its keys:
    each present and on one row only."""
    stacked = layout(tables, spec)
    people = tables[stacked.owner].read_all()
    stacked.people = people
    stacked.people_keys = _person_keys(people, stacked.owner, stacked.keys[stacked.owner],
                                       spec.missing)
    stacked.fillers = {q: _first_value(tables, q, stacked.schema.field(q).type)
                       for q in spec.quasi_identifiers}
    stacked.with_rows = np.zeros(len(stacked.people_keys), bool)
    return stacked


def in_memory(data: Mapping, spec: Spec) -> tuple[Stack, pa.Table]:
    """The related tables ``data`` names, stacked in memory (what check and risk read)."""
    tables = sources(data, spec)
    stacked = stack(tables, spec)
    return stacked, pa.concat_tables(list(stack_batches(stacked, tables, spec.missing)))


def stack_batches(stacked: Stack, tables: Mapping[str, Source],
                  missing: str = "") -> Iterator[pa.Table]:
    """The stack, batch by batch: each event table's rows with their person's columns,
    then the person table's rows that join it."""
    owner, people = stacked.owner, stacked.people
    own = [c for c in people.column_names if c != stacked.keys[owner]]
    for name in stacked.names[1:]:
        seen = 0
        for batch in tables[name].batches():
            batch = pa.Table.from_batches([batch])
            at = _event_owners(batch, name, stacked.keys[name], stacked.people_keys, owner,
                               missing, seen)
            seen += batch.num_rows
            stacked.with_rows[at] = True
            mine = [c for c in batch.column_names if c != stacked.keys[name]]
            rows = pa.array(at)
            joined = {c: people.column(c).take(rows) for c in own if c not in mine}
            yield _conform(stacked, name, stacked.people_keys.take(rows),
                           {**{c: batch.column(c) for c in mine}, **joined})
        stacked.records[name] = seen
    stacked.records[owner] = people.num_rows
    alone = (np.ones(len(stacked.with_rows), bool) if stacked.person_rows
             else ~stacked.with_rows)
    if alone.any():
        rows = people.filter(pa.array(alone))
        yield _conform(stacked, owner, as_text(rows.column(stacked.keys[owner]), missing),
                       {c: rows.column(c) for c in own})


def _conform(stacked: Stack, name: str, keys, columns: Mapping) -> pa.Table:
    """A part of the stack in its schema: a QI the table lacks holds the column's filler
    (the same in every row of the table, it tells none of them apart, and every hierarchy
    covers it); any other column it lacks is empty."""
    n = len(keys)
    made = {stacked.key: keys, stacked.tag: repeated(pa.scalar(name, pa.string()), n)}
    for column in stacked.schema:
        if column.name in made:
            continue
        if column.name == stacked.link:
            made[column.name] = keys
        elif column.name in columns:
            made[column.name] = columns[column.name]
        elif column.name in stacked.fillers:
            made[column.name] = repeated(pa.scalar(stacked.fillers[column.name],
                                                   column.type), n)
        else:
            made[column.name] = pa.nulls(n, column.type)
    return pa.table({c.name: pc.cast(made[c.name], c.type) if
                     made[c.name].type != c.type else made[c.name] for c in stacked.schema})


def numbers(stacked: Stack, released: Iterable[pa.Table], seed: int | None) -> np.ndarray:
    """Each person's random number (1, 2, ... over the people released; 0 for the others),
    from a first pass over the released stack."""
    kept = np.zeros(len(stacked.people_keys), bool)
    for part in released:
        kept[_index(stacked, part)] = True
    rng = np.random.default_rng(secrets.randbits(63) if seed is None else seed)
    number = np.zeros(len(kept), np.int64)
    number[kept] = rng.permutation(int(kept.sum())) + 1
    return number


def split_batches(stacked: Stack, released: Iterable[pa.Table], number: np.ndarray
                  ) -> Iterator[tuple[str, pa.Table]]:
    """The released stack as the tables, batch by batch: ``(name, rows)``, each table's
    rows with its own columns in its own order and the key replaced by ``number``."""
    seen = np.zeros(len(number), bool)
    for part in released:
        at = _index(stacked, part)
        tags = part.column(stacked.tag)
        for name in stacked.names:
            if name == stacked.owner and not stacked.person_rows:
                # a row of each person not yet written: every row carries their columns
                fresh = np.zeros(len(at), bool)
                fresh[np.unique(at, return_index=True)[1]] = True
                fresh &= ~seen[at]
                seen[at[fresh]] = True
                rows = pa.array(fresh)
            else:
                rows = pc.equal(tags, name)
            chosen = part.filter(rows)
            mine = pa.array(number[at[np.asarray(rows.to_numpy(zero_copy_only=False),
                                                  bool)]])
            yield name, pa.table({
                column: mine if column == stacked.keys[name] else chosen.column(column)
                for column in stacked.columns[name]})


def like_inputs(parts: Iterable[tuple[str, pa.Table]], stacked: Stack, data: Mapping
                ) -> dict:
    """The released tables gathered, each as the kind of table its input was (a file's:
    pyarrow)."""
    gathered: dict[str, list[pa.Table]] = {name: [] for name in stacked.names}
    for name, rows in parts:
        gathered[name].append(rows)
    tables = {}
    for name, pieces in gathered.items():
        table = (pa.concat_tables(pieces, promote_options="permissive") if pieces
                 else stacked.table_schema(name).empty_table())
        given = data[name]
        tables[name] = (table if isinstance(given, str | os.PathLike)
                        else from_arrow(table, given))
    return tables


def _index(stacked: Stack, part: pa.Table) -> np.ndarray:
    """Each released row's person (their row in the person table)."""
    found = pc.index_in(as_text(part.column(stacked.link)), value_set=stacked.people_keys)
    return found.to_numpy(zero_copy_only=False).astype(np.int64)


def _first_value(tables: Mapping[str, Source], column: str, kind: pa.DataType):
    """The first value of ``column`` in the first table that has it (None if empty)."""
    for source in tables.values():
        if column in source.columns:
            for batch in source.batches([column]):
                given = pc.drop_null(batch.column(0))
                if len(given):
                    return pc.cast(given[:1], kind)[0].as_py()
    return None


def _has_columns(table: str, names: Sequence[str], wanted: Sequence[str], role: str) -> None:
    for name in wanted:
        if name not in names:
            raise BlendinError(f"table {table!r} has no column {name!r} ({role})",
                               fix=f"the columns are: {preview(list(names), 12)}")


def _has_roles(tables: Mapping[str, Source], spec: Spec) -> None:
    """Every column the spec names is in some table."""
    present = {c for t in tables.values() for c in t.columns}
    for name, role in spec.roles().items():
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
        raise BlendinError(
            f"table {name!r}, the person table, has two rows of one person (rows "
            f"{int(first[again]) + 1} and {again + 1}, column {key!r}): it holds one row a "
            "person", fix=f"keep one row a person in {name!r}, or list another table first "
                          "in [tables] (the first is the person table)")
    return text


def _no_empty(text: pa.Array, table: str, key: str, missing: str, seen: int = 0) -> None:
    empty = np.flatnonzero(empty_keys(text, missing).to_numpy(zero_copy_only=False))
    if len(empty):
        raise BlendinError(
            f"the person key {key!r} of table {table!r} is empty on row "
            f"{seen + empty[0] + 1}: every row must name its person",
            fix=f"fill in {key!r} on every row of {table!r}, or drop those rows")


def _event_owners(table: pa.Table, name: str, key: str, people: pa.Array, owner: str,
                  missing: str, seen: int = 0) -> np.ndarray:
    """Each event row's person (their row in the person table); ``seen`` rows of the
    table came before."""
    text = as_text(table.column(key), missing).combine_chunks()
    _no_empty(text, name, key, missing, seen)
    at = pc.index_in(text, value_set=people)
    if at.null_count:
        row = int(np.flatnonzero(at.is_null().to_numpy(zero_copy_only=False))[0])
        raise BlendinError(
            f"row {seen + row + 1} of table {name!r} names a person who is not in "
            f"{owner!r}, the person table",
            fix=f"add those people to {owner!r}, or drop their rows from {name!r}")
    return at.to_numpy(zero_copy_only=False).astype(np.int64)


def _free_name(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    return name


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
        check_paths({}, {"-o": (str(folder), "folder")})  # (a folder may be made there)
        return
    inputs = {f"the input {name}": str(given) for name, given in data.items()
              if isinstance(given, str | os.PathLike)}
    inputs.update({label: str(path) for label, path in spec.files_read().items()})
    check_paths(inputs, {f"the release of {name}": (str(path), "table")
                         for name, path in paths.items()}, force=force)


def write_tables(parts: Iterable[tuple[str, pa.Table]], paths: Mapping[str, Path],
                 schemas: Mapping[str, pa.Schema], *, delimiter: str = ",",
                 escape_formulas: bool = False) -> dict[str, int]:
    """Write each ``(name, rows)`` part to its table's path as it comes (a table with no
    row gets its header, from ``schemas``); every file takes its name once all are
    written, or none does. Returns the rows of each table."""
    with together_in(*(path.parent for path in paths.values())), ExitStack() as files:
        writers = {}
        for name, path in paths.items():
            temp = files.enter_context(atomic_path(path))
            writers[name] = files.enter_context(BatchWriter(
                temp, path, delimiter=delimiter, escape_formulas=escape_formulas))
        for name, rows in parts:
            writers[name].write(rows)
        for name, writer in writers.items():
            if not writer.opened:
                writer.write(schemas[name].empty_table())
        return {name: writer.rows for name, writer in writers.items()}
