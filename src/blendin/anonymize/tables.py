"""Related tables (the spec's ``[tables]``): released as one stack by the single-table run
(:mod:`blendin.related` makes and splits the stack), in memory, streamed from files into
a folder, or in one database (:mod:`blendin.engines.related_sql`). ``anonymize`` is the
run of one table, handed in by :func:`blendin.anonymize.run.anonymize`."""

from __future__ import annotations

import dataclasses
import os
import secrets
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pyarrow as pa

from blendin.anonymize.result import Result
from blendin.engines.databases import is_database
from blendin.engines.embedded import BatchWriter
from blendin.engines.related_sql import check_keys, number_people, split_query, stack_query
from blendin.engines.sql import SqlSource, TableRef, check_replaced, database, run_name
from blendin.errors import BlendinError
from blendin.io import Source, scratch_folder, to_arrow
from blendin.related import (
    check_folder,
    layout,
    like_inputs,
    numbers,
    sources,
    split_batches,
    stack,
    stack_batches,
    table_paths,
    write_tables,
)
from blendin.spec import Spec


def release_tables(anonymize: Callable[..., Result], data: Mapping, spec: Spec, *, output,
                   suppressed: str, engine, group_column, original_row, keep_order: bool,
                   shuffle_seed, output_delimiter, escape_formulas: bool, database,
                   start: float, **search) -> Result:
    """Related tables (``data`` maps each table's name to it): released as one stack
    (:mod:`blendin.related`), then split; ``output`` is the folder they go to.
    Files in and a folder out are streamed: the stack and its release lie in a temporary
    folder beside the output while the run lasts."""
    for given, option in ((suppressed != "drop", "suppressed='keep' (--suppressed keep)"),
                          (group_column, "--group-column (group_column=)"),
                          (original_row, "--original-row (original_row=)"),
                          (keep_order, "--keep-order (keep_order=)"),
                          (engine not in (None, "embedded"), "another engine (--engine)"),
                          (database, "a table in a database (--table, --query)")):
        if given:
            raise BlendinError(f"related tables are released without {option}: a person "
                               "is removed from every table, and each table's rows are "
                               "shuffled", fix=f"leave out {option}")
    tables = sources(data, spec)
    paths = None
    if output is not None:
        paths = table_paths(output, list(tables), data)
        check_folder(output, paths, data, spec)
    stacked = stack(tables, spec)
    schemas = {name: stacked.table_schema(name) for name in stacked.names}
    writing = {"delimiter": output_delimiter or spec.delimiter or ",",
               "escape_formulas": escape_formulas}
    if paths is not None and all(isinstance(v, str | os.PathLike) for v in data.values()):
        with scratch_folder(output) as temp:  # (a killed run's: removed by the next)
            whole, released = temp / "stack.parquet", temp / "release.parquet"
            with BatchWriter(str(whole), whole) as writer:
                for part in stack_batches(stacked, tables, spec.missing):
                    writer.write(part)
            result = anonymize(str(whole), stacked.spec(spec), output=released,
                               shuffle_seed=shuffle_seed, **search)
            rows = Source(released)

            def parts():
                return (pa.Table.from_batches([b]) for b in rows.batches())

            number = numbers(stacked, parts(), shuffle_seed)
            result.released_by_table = write_tables(
                split_batches(stacked, parts(), number), paths, schemas, **writing)
        result.data, result.written = None, Path(output)
    else:
        whole = pa.concat_tables(list(stack_batches(stacked, tables, spec.missing)))
        result = anonymize(whole, stacked.spec(spec), shuffle_seed=shuffle_seed, **search)
        release = result.table
        number = numbers(stacked, [release], shuffle_seed)
        result.tables = like_inputs(split_batches(stacked, [release], number), stacked, data)
        result.released_by_table = {n: len(t) for n, t in result.tables.items()}
        result.data = release.drop_columns([stacked.link])  # the key is never released
        if paths is not None:
            write_tables(((n, to_arrow(t)) for n, t in result.tables.items()), paths, schemas,
                         **writing)
            result.written = Path(output)
    result.records_by_table = {name: stacked.records[name] for name in stacked.names}
    result.table_column = stacked.tag
    result.seconds = time.perf_counter() - start
    return result


def release_tables_in_database(anonymize: Callable[..., Result], data, spec: Spec, *,
                               output, output_table: str | None, schema: str | None,
                               password_env: str | None, replace: bool, shuffle_seed,
                               refused: Mapping, writing: Mapping, start: float,
                               **search) -> Result:
    """Related tables in one database (the spec's ``[tables]`` name them): their stack is
    one query the SQL engine releases as a table there, which is split into the tables'
    releases (``output_table`` with ``{table}`` in it names each) or written to the folder
    ``output``, all in one transaction (:mod:`blendin.engines.related_sql`)."""
    for option, given in refused.items():
        if given:
            raise BlendinError(f"related tables in a database are released without {option}",
                               fix=f"leave out {option}")
    ref = TableRef(data, table=next(iter(spec.tables)), schema=schema,
                   password_env=password_env)
    if (output_table is not None and output is not None
            and not ref.same_database(TableRef(output, table=output_table))):
        raise BlendinError("related tables are released into the database they are read "
                           "from", fix="give the input's database as -o, or -o FOLDER")
    db = database(ref)
    tables = {name: SqlSource(db, dataclasses.replace(ref, table=name))
              for name in spec.tables}
    stacked = layout(tables, spec, tags=[str(i) for i in range(len(tables))])
    targets, paths = _related_outputs(db, stacked, spec, output, output_table, schema,
                                      replace)
    check_keys(db, tables, stacked)
    query = stack_query(db, tables, stacked, list(spec.quasi_identifiers))
    run = run_name()
    released, numbered = db.table(f"{run}_stack", schema), db.quote(f"{run}_numbers")
    with db.transaction():  # every table made, or none
        result = anonymize(dataclasses.replace(ref, table=None, query=query),
                           stacked.spec(spec), output=dataclasses.replace(
                               ref, table=f"{run}_stack"), shuffle_seed=shuffle_seed,
                           **search)
        number_people(db, stacked, released, numbered,
                      secrets.randbits(62) if shuffle_seed is None else shuffle_seed)
        queries = {name: split_query(db, stacked, released, numbered, name)
                   for name in stacked.names}
        if targets is not None:
            counts = {}
            for name, target in targets.items():
                if replace:
                    db.execute(f"DROP TABLE IF EXISTS {target}")
                db.execute(f"CREATE TABLE {target} AS {queries[name]}")
                counts[name] = int(db.scalar(f"SELECT count(*) FROM {target}"))
        else:
            parts = ((name, pa.Table.from_batches([batch])) for name in stacked.names
                     for batch in db.batches(queries[name]))
            counts = write_tables(parts, paths, {n: db.schema(q) for n, q in queries.items()},
                                  **writing)
        db.execute(f"DROP TABLE {released}")
        db.execute(f"DROP TABLE {numbered}")
    result.records_by_table = {name: int(db.scalar(f"SELECT count(*) FROM "
                                                   f"{tables[name].relation}"))
                               for name in stacked.names}
    result.released_by_table, result.table_column = counts, stacked.tag
    result.data = result.written_table = None
    result.written = None if targets is not None else Path(output)
    result.seconds = time.perf_counter() - start
    return result


def _related_outputs(db, stacked, spec: Spec, output, output_table: str | None,
                     schema: str | None, replace: bool):
    """Where related tables in a database go: tables named by ``output_table`` (with
    ``{table}``) in it, or files in the folder ``output``; checked before any work."""
    if output_table is not None:
        if "{table}" not in output_table:
            raise BlendinError(f"--output-table {output_table!r} names one table, and the "
                               f"release is {len(stacked.names)} tables",
                               fix='put {table} in the name, e.g. --output-table '
                                   '"{table}_release"')

        def read() -> frozenset[str]:
            return frozenset().union(*(db.reads(f"SELECT * FROM {db.table(name, schema)}")
                                       for name in stacked.names))

        targets = {}
        for name in stacked.names:
            target = output_table.replace("{table}", name)
            check_replaced(db, read, target, schema, replace, "an input table")
            targets[name] = db.table(target, schema)
        return targets, None
    if output is None or is_database(output):
        raise BlendinError("related tables in a database are released as tables there or as "
                           "files in a folder", fix='give --output-table "{table}_release" '
                           "(output_table=), or -o FOLDER")
    paths = table_paths(output, list(stacked.names), {}, suffix=".csv")
    check_folder(output, paths, {}, spec)
    return None, paths
