"""Related tables in one database: their stack as one query, its release split there.

The stack (see :mod:`blendin.related`) is a ``UNION ALL`` of each event table joined with
the person table, and of the person table's own rows that join it; the SQL engine
searches, releases and checks it as it would a ``--query``, and its release, a table in
the database, is split into the tables' releases by ``CREATE TABLE ... AS SELECT``, each
key replaced by a random person number. Every name is quoted; no value is written into a
statement (a QI a table lacks takes the first value of the column, read by a subquery).
"""

from __future__ import annotations

from collections.abc import Mapping

from blendin.engines.databases import Database
from blendin.engines.sql import key_of
from blendin.errors import BlendinError


def check_keys(db: Database, tables: Mapping, stacked) -> None:
    """Each table's key present on every row, once a person in the person table, and
    naming a person of the person table on every event row (counted, never shown: a
    table in a database has no row order to name a row by)."""
    q, owner = db.quote, stacked.owner
    for name in stacked.names:
        key = q(stacked.keys[name])
        empty = db.scalar(f"SELECT count(*) FROM {tables[name].relation} WHERE s.{key} IS "
                          f"NULL OR {key_of(db, stacked.keys[name], 's.')} = ''")
        if empty:
            raise BlendinError(f"the person key {stacked.keys[name]!r} of table {name!r} is "
                               f"empty on {empty:,} row(s): every row must name its person",
                               fix=f"fill in {stacked.keys[name]!r} on every row of {name!r}")
    key = q(stacked.keys[owner])
    twice = db.scalar(f"SELECT count(*) FROM (SELECT s.{key} FROM {tables[owner].relation} "
                      f"GROUP BY s.{key} HAVING count(*) > 1) AS d")
    if twice:
        raise BlendinError(f"table {owner!r}, the person table, has {twice:,} people on two "
                           "rows or more: it holds one row a person",
                           fix=f"keep one row a person in {owner!r}, or list another table "
                               "first in [tables] (the first is the person table)")
    for name in stacked.names[1:]:
        lost = db.scalar(f"SELECT count(*) FROM {_aliased(tables[name], 'e')} WHERE NOT "
                         f"EXISTS (SELECT 1 FROM {tables[owner].relation} WHERE "
                         f"{_joined(db, stacked, name)})")
        if lost:
            raise BlendinError(f"{lost:,} row(s) of table {name!r} name a person who is not "
                               f"in {owner!r}, the person table",
                               fix=f"add those people to {owner!r}, or drop their rows from "
                                   f"{name!r}")


def stack_query(db: Database, tables: Mapping, stacked, qis) -> str:
    """The stack as one SELECT: its columns in ``stacked.schema``'s order."""
    q, owner = db.quote, stacked.owner
    own = [c for c in stacked.columns[owner] if c != stacked.keys[owner]]
    parts = []
    for position, name in enumerate(stacked.names):
        mine = [c for c in stacked.columns[name] if c != stacked.keys[name]]
        alias = "s" if name == owner else "e"
        person = key_of(db, stacked.keys[name], f"{alias}.")
        values = {stacked.key: person, stacked.tag: str(position), stacked.link: person}
        values.update({c: f"{alias}.{q(c)}" for c in mine})
        if name != owner:
            values.update({c: f"s.{q(c)}" for c in own if c not in mine})
        for column in stacked.schema:
            if column.name in values:
                continue
            values[column.name] = (_first(db, tables, column.name) if column.name in qis
                                   else "NULL")
        shown = ", ".join(f"{_typed(values[c.name], c, stacked, tables)} AS {q(c.name)}"
                          for c in stacked.schema)
        if name == owner:
            alone = "" if stacked.person_rows else " WHERE " + " AND ".join(
                f"NOT EXISTS (SELECT 1 FROM {_aliased(tables[e], 'e')} WHERE "
                f"{_joined(db, stacked, e)})" for e in stacked.names[1:])
            parts.append(f"SELECT {shown} FROM {tables[owner].relation}{alone}")
        else:
            parts.append(f"SELECT {shown} FROM {_aliased(tables[name], 'e')} JOIN "
                         f"{tables[owner].relation} ON {_joined(db, stacked, name)}")
    return " UNION ALL ".join(parts)


def _aliased(source, alias: str) -> str:
    return f"({source.sql}) AS {alias}"


def _joined(db: Database, stacked, name: str) -> str:
    """An event row ``e`` of table ``name`` and its person's row ``s``."""
    return (f"{key_of(db, stacked.keys[name], 'e.')} = "
            f"{key_of(db, stacked.keys[stacked.owner], 's.')}")


def _first(db: Database, tables: Mapping, column: str) -> str:
    """The first value of ``column`` in the first table that has it, by a subquery."""
    source = next(t for t in tables.values() if column in t.columns)
    return (f"(SELECT f.{db.quote(column)} FROM ({source.sql}) AS f WHERE "
            f"f.{db.quote(column)} IS NOT NULL LIMIT 1)")


def _typed(value: str, column, stacked, tables: Mapping) -> str:
    """``value`` cast to text where the tables disagree on the column's type (or it is
    the stack's own text column), so that every part of the UNION agrees."""
    own = {stacked.key, stacked.link}
    kinds = {t.types()[column.name] for t in tables.values() if column.name in t.columns}
    if column.name in own or len(kinds) > 1:
        return f"CAST({value} AS VARCHAR)"
    return value


def split_query(db: Database, stacked, released: str, numbers: str, name: str) -> str:
    """The release of table ``name``: its rows of the released stack ``released`` (a
    quoted table), its own columns in its order, the key replaced by each person's number
    in ``numbers``; the person table takes one row a person (any: each carries their
    columns) unless its rows are in the stack."""
    q = db.quote
    columns = ", ".join(f"n.{q('number')} AS {q(c)}" if c == stacked.keys[name]
                        else f"r.{q(c)}" for c in stacked.columns[name])
    position = stacked.names.index(name)
    if name == stacked.owner and not stacked.person_rows:
        rows = (f"(SELECT x.*, row_number() OVER (PARTITION BY x.{q(stacked.link)}) AS "
                f"{q('first')} FROM {released} AS x) AS r")
        where = f"r.{q('first')} = 1"
    else:
        rows = f"{released} AS r"
        where = f"CAST(r.{q(stacked.tag)} AS VARCHAR) = '{position}'"
    return (f"SELECT {columns} FROM {rows} JOIN {numbers} AS n ON "
            f"r.{q(stacked.link)} = n.{q('link')} WHERE {where}")


def number_people(db: Database, stacked, released: str, numbers: str, seed: int) -> None:
    """``numbers``: each released person's link and a random number 1, 2, ..."""
    q = db.quote
    db.seed(seed)
    people = (f"SELECT DISTINCT r.{q(stacked.link)} AS {q('link')} FROM {released} AS r "
              f"ORDER BY 1")
    drawn = f"SELECT d.{q('link')}, random() AS {q('draw')} FROM ({people}) AS d"
    db.execute(f"CREATE TEMP TABLE {numbers} AS SELECT x.{q('link')}, row_number() OVER "
               f"(ORDER BY x.{q('draw')}) AS {q('number')} FROM ({drawn}) AS x")
