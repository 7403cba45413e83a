"""The SQL engine: the rows stay in the database (PostgreSQL, DuckDB); the search runs here.

- the frequency table is one ``GROUP BY`` over the QI and sensitive columns, run by the
  database; only the grouped rows cross the wire, and they are read as text here by the
  same code as the embedded engine's (:func:`blendin.codes.as_text`), so both engines spell
  a value alike;
- the release is one ``CREATE TABLE ... AS SELECT`` that maps the QIs to their labels,
  drops (or stars) the suppressed records, blanks their sensitive values and orders the
  rows at random. A full-domain node maps each QI by a small temporary table of its
  values' labels, keyed on the database's own text of each value (a QI released as it is
  needs none), and finds the suppressed classes by one anti-join on their labels; a
  release in parts or a Mondrian partitioning maps each distinct QI tuple, numbered in a
  temporary table, read here and recoded by the very recoders the other engines run
  (:mod:`blendin.engines.kernels`);
- the checker regroups the released table by an SQL ``GROUP BY`` and must pass before the
  table takes its name: the table is made under a temporary name and renamed in the same
  transaction, so a failed, cancelled or killed run leaves no table (the server rolls the
  transaction back); an existing table of that name is replaced only when asked;
- the source is only ever read (``SELECT``); a ``query`` must be one ``SELECT``.

A release to a file or to memory is made the same way in a temporary table and then read
in batches. Statements are built with quoted names (sqlglot quotes them in the database's
dialect); values are bound as parameters or loaded as tables, never written into SQL.
"""

from __future__ import annotations

import math
import os
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import COUNT, as_text
from blendin.engines.base import Release
from blendin.engines.databases import (
    TEXT,
    Database,
    connect,
    hidden,
    is_database,
    ticking,
)
from blendin.engines.embedded import BatchWriter, in_tables
from blendin.engines.kernels import (
    FullDomainRecoder,
    Shuffle,
    decoded,
    ground_codes,
    plain_schema,
    repeated,
    without_people,
)
from blendin.errors import BlendinError, preview
from blendin.groupby import dictionary_chunks
from blendin.hierarchy.core import SUPPRESSED, Hierarchy
from blendin.io import _is_nested, atomic_path, write_table
from blendin.models import dp
from blendin.models.dp import DifferentialPrivacy
from blendin.models.presence import SUBSET_VALUES

#: the prefix of the tables a run makes: temporary ones, and the release before its rename
PREFIX = "__blendin_"


def run_name(suffix: str = "") -> str:
    """A fresh name for a table a run makes (``PREFIX``, this process, a random part, and
    ``suffix``): no other run's, so that runs side by side never meet.

    >>> name = run_name("rows")
    >>> name.startswith(PREFIX) and name.endswith("_rows") and name != run_name("rows")
    True
    """
    return f"{PREFIX}{os.getpid()}_{secrets.token_hex(4)}" + (f"_{suffix}" if suffix else "")


@dataclass(frozen=True)
class TableRef:
    """A table (or a query's rows) in a database: ``database`` is a URL
    (``postgresql://USER@HOST:PORT/DB``, ``duckdb:///FILE``), a ``.duckdb`` path, a DuckDB
    connection or a SQLAlchemy engine; ``table`` (in ``schema``) or ``query`` names the
    rows. ``password_env`` names the environment variable holding the password;
    ``password`` gives it (the app's form): neither is ever shown.

    >>> TableRef("duckdb:///:memory:", table="patients").describe()
    'table "patients" in duckdb:///:memory:'
    """

    database: object
    table: str | None = None
    query: str | None = None
    schema: str | None = None
    password_env: str | None = None
    password: str | None = field(default=None, repr=False, compare=False)
    #: the connection, once opened (shared by the references to one database)
    opened: list = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        if (self.table is None) == (self.query is None):
            raise BlendinError("name the rows to read: a table or a query, not both"
                               if self.table else "a database needs a table or a query",
                               fix="give --table NAME or --query \"SELECT ...\" (table= or "
                               "query= in Python)")

    def describe(self) -> str:
        where = (hidden(str(self.database)) if isinstance(self.database, str | os.PathLike)
                 else type(self.database).__name__)
        return f"{self.rows()} in {where}"

    def rows(self) -> str:
        """The rows it names, without the database: ``table "x"`` or ``the query``."""
        if self.query is not None:
            return "the query"
        return f'table "{self.schema}"."{self.table}"' if self.schema else f'table "{self.table}"'

    def same_database(self, other: TableRef) -> bool:
        """Whether ``other`` is in this database (one object, or URLs alike but for a
        password and the scheme's spelling, or one DuckDB file)."""
        return self.database is other.database or (
            isinstance(self.database, str | os.PathLike)
            and isinstance(other.database, str | os.PathLike)
            and place(self.database) == place(other.database))


def in_database(data, output=None, *, table: str | None = None, query: str | None = None,
                schema: str | None = None, output_table: str | None = None,
                password_env: str | None = None):
    """``data`` and ``output`` as :class:`TableRef` where they are tables in a database
    (``table`` or ``query`` names the input's rows, ``output_table`` the release's table,
    in ``output``'s database or else the input's); anything else as given.

    >>> data, output = in_database("duckdb:///:memory:", table="t", output_table="r")
    >>> data.table, output.table, output.same_database(data)
    ('t', 'r', True)
    """
    if table is not None or query is not None or (
            is_database(data) and not isinstance(data, TableRef)):
        data = TableRef(data, table, query, schema, password_env)
    if output_table is None:
        if output is not None and is_database(output) and not isinstance(output, TableRef):
            raise BlendinError("the release into a database needs a table name",
                               fix="give --output-table NAME (output_table= in Python)")
        return data, output
    if not output_table.strip():
        raise BlendinError("--output-table names no table",
                           fix="give --output-table NAME (output_table= in Python)")
    if "." in output_table and schema is None:
        # a dotted name would be one table named so, where SQL reads a schema and a table
        schema_, _, name = output_table.partition(".")
        raise BlendinError(f"--output-table {output_table!r} has a dot, and names are taken "
                           "as written", fix=f"give the schema apart: --schema {schema_} "
                           f"--output-table {name} (schema= in Python); a name with a dot "
                           "in it is taken as written once --schema is given")
    if output is None and not isinstance(data, TableRef):
        raise BlendinError("output_table names a table in a database, and none is given",
                           fix="give the database as the output (-o URL) or read from it")
    where = data.database if output is None else output
    shared = (data.opened if isinstance(data, TableRef)
              and data.same_database(TableRef(where, table=output_table)) else [])
    return data, TableRef(where, table=output_table, schema=schema,
                          password_env=password_env, opened=shared)


def place(database: str | os.PathLike) -> str:
    """Where a database URL or file points, for comparing two of them.

    >>> place("postgres://me:pw@db:5432/x") == place("postgresql://me@db:5432/x")
    True
    """
    text = str(database)
    scheme, sep, rest = text.partition("://")
    if not sep:  # a DuckDB file
        return "duckdb:" + str(Path(text).resolve())
    if scheme.lower() == "duckdb":
        rest = rest[1:] if rest.startswith("/") else rest
        return "duckdb:" + (rest if rest in ("", ":memory:") else str(Path(rest).resolve()))
    return "postgresql://" + hidden(text).partition("://")[2]


#: functions that change the database they run in, which a read-only transaction lets
#: through: a sequence's next value, large objects, replication slots and origins, another
#: connection (dblink), the server's state
CHANGING = frozenset({"nextval", "setval", "pg_terminate_backend", "pg_cancel_backend",
                      "pg_reload_conf", "pg_rotate_logfile", "pg_switch_wal", "pg_promote"})
CHANGING_PREFIXES = ("lo_", "dblink", "pg_create_", "pg_drop_", "pg_replication_origin",
                     "pg_logical_emit", "pg_file_")


def check_query(query: str, dialect: str) -> str:
    """A source query must be one ``SELECT`` (or ``WITH ... SELECT``) that changes
    nothing: the source is only read. Its text is given back without what follows its
    last token (semicolons, a comment), so that it reads whole within parentheses.

    >>> check_query("SELECT * FROM t; -- this year's", "duckdb")
    'SELECT * FROM t'
    """
    import sqlglot
    from sqlglot import exp

    try:
        statements = [s for s in sqlglot.parse(query, read=dialect)  # (not a comment
                      if s is not None and not isinstance(s, exp.Semicolon)]  # after ";")
        tokens = sqlglot.tokenize(query, read=dialect)
    except sqlglot.errors.ParseError as error:
        raise BlendinError(f"the query is not valid SQL: {_parse_error(error)}",
                           fix="give one SELECT statement with --query") from None
    writes = (exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop,
              exp.Alter, exp.Command)
    if (len(statements) != 1 or not isinstance(statements[0], exp.Query)
            or any(statements[0].find_all(*writes))):
        raise BlendinError("the query must be one SELECT statement that changes nothing (the "
                           "source is only read)",
                           fix="give one SELECT ... with --query, or a table with --table")
    for call in statements[0].find_all(exp.Anonymous):
        name = call.name.lower().rpartition(".")[2]
        if name in CHANGING or name.startswith(CHANGING_PREFIXES):
            raise BlendinError(f"the query calls {call.name}(), which changes the database "
                               "(the source is only read)",
                               fix=f"leave {call.name}() out of --query" + (
                                   " (row_number() OVER () numbers rows)"
                                   if name == "nextval" else ""))
    while tokens[-1].token_type == sqlglot.TokenType.SEMICOLON:
        tokens.pop()
    return query[:tokens[-1].end + 1].strip()


def _parse_error(error) -> str:
    """Where sqlglot stopped reading a query, and the text there (its own description
    names its classes)."""
    found = error.errors[0] if error.errors else None
    if not found or not found.get("line"):
        return str(error).splitlines()[0]
    near = f"{found.get('highlight') or ''}{found.get('end_context') or ''}".strip()
    return f"line {found['line']}, column {found['col']}" + (f", at {near!r}" if near else "")


def selected(db: Database, ref: TableRef) -> str:
    """The ``SELECT`` of ``ref``'s rows: its query (checked to change nothing), or all of
    its table (which must exist)."""
    if ref.query is not None:
        return check_query(ref.query, db.dialect)
    if not db.exists(ref.table, ref.schema):
        schema, dot, name = ref.table.partition(".")
        if dot and ref.schema is None and db.exists(name, schema):
            raise BlendinError(f"{db.name} has no {ref.rows()}: names are taken as written, "
                               "a dot included", fix=f"give the schema apart: --schema "
                               f"{schema} --table {name} (schema= in Python)")
        raise BlendinError(f"{db.name} has no {ref.rows()}",
                           fix="check the name (and --schema)" + (
                               "; names are case sensitive" if db.dialect == "postgres"
                               else ""))
    return f"SELECT * FROM {db.table(ref.table, ref.schema)}"


class SqlSource:
    """A table or a query's rows in a database, as the pipeline's input."""

    def __init__(self, db: Database, ref: TableRef, temporary: Sequence[str] = ()) -> None:
        self.db, self.ref = db, ref
        #: the temporary tables the rows are in (a query's rows, read once; differential
        #: privacy's sample), dropped with the run's other temporary tables
        self.temporary = list(temporary)
        #: the snapshot every reading of a PostgreSQL table sees (:meth:`read_once`), and
        #: the connection that holds it
        self.snapshot: str | None = None
        self._holder: Database | None = None
        #: why no snapshot could be held (a second connection refused), else None
        self.unpinned: str | None = None
        self.sql = selected(db, ref)
        #: each column's values and their keys (:func:`key_of`), as the frequency table's
        #: ``GROUP BY`` read them: what a release maps column by column
        self.domains: dict[str, pa.Table] = {}
        self.name = ref.describe()
        #: what a progress bar calls it
        self.short_name = ref.rows()
        schema = db.schema(self.sql)
        self._types = dict(zip(schema.names, schema.types))
        #: the columns the database holds as text: a value is its own key (:func:`key_of`)
        self.texts = {f.name for f in schema if f.metadata == TEXT}
        self.columns = list(self._types)

    def __str__(self) -> str:
        return self.name

    def read_once(self) -> SqlSource:
        """The rows as every later reading (the frequency table, the release, the
        checker's) sees them, the same each time:

        - a query's rows go into a temporary table, read from the query once, even where
          the query would give others each time (``LIMIT`` without ``ORDER BY``,
          ``random()``). PostgreSQL runs the query in a read-only transaction (its table
          made empty first: a read-only transaction makes none);
        - a PostgreSQL table is read as of one snapshot, which a second connection holds
          until the release is made (:meth:`let_go`): rows written meanwhile are in
          neither reading. (A DuckDB file has one writer: this process.) Where the server
          refuses that connection, the table is read twice, and ``unpinned`` says why.
        """
        if self.ref.query is not None:
            return self._copied()
        if self.db.dialect == "postgres" and self._holder is None:
            self._hold_snapshot()
        return self

    def _copied(self) -> SqlSource:
        """The query's rows in a temporary table, as a source of their own."""
        db, name = self.db, run_name("rows")
        table = db.quote(name)
        if db.dialect == "postgres":
            db.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM {self.relation} "
                       "WITH NO DATA")
            with db.transaction(read_only=True):
                db.execute(f"INSERT INTO {table} SELECT * FROM {self.relation}")
        else:
            with db.transaction():
                db.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM {self.relation}")
        held = self.in_temporary(name)
        held.name, held.short_name = self.name, self.short_name
        return held

    def _hold_snapshot(self) -> None:
        try:
            self._holder = connect(self.ref.database, password=self.ref.password,
                                   password_env=self.ref.password_env)
            self.snapshot = self._holder.hold_snapshot()
        except BlendinError as error:  # (a role allowed one connection, say)
            self.let_go()
            self.snapshot, self.unpinned = None, error.problem

    def in_temporary(self, name: str) -> SqlSource:
        """The rows of the temporary table ``name`` (made from these), dropped with this
        source's temporary tables."""
        return SqlSource(self.db, TableRef(self.ref.database,
                                           query=f"SELECT * FROM {self.db.quote(name)}",
                                           opened=self.ref.opened), [*self.temporary, name])

    def let_go(self) -> None:
        """Close the connection holding the snapshot (once the last reading began)."""
        if self._holder is not None:
            self._holder.close()
            self._holder = None

    @property
    def relation(self) -> str:
        """The rows as a FROM item, named ``s``."""
        return f"({self.sql}) AS s"

    def types(self) -> dict[str, pa.DataType]:
        return dict(self._types)

    def check_columns(self, columns: Sequence[str]) -> None:
        missing = [c for c in columns if c not in self.columns]
        if missing:
            raise BlendinError(f"{self.name} has no column(s) {preview(missing)}",
                               fix=f"use one of its columns: {preview(self.columns, 10)}")

    def check_flat(self, columns: Sequence[str], role: str) -> None:
        for name in columns:
            if _is_nested(self._types[name]):
                raise BlendinError(
                    f"column {name!r} holds nested values ({self._types[name]}), which "
                    f"cannot be {role}", fix=f"flatten {name!r} in a --query first")

    def batches(self, columns: Sequence[str] | None = None, *, encoded=(), progress=None
                ) -> Iterator[pa.Table]:
        """The rows (of ``columns``), read in batches."""
        names = self.columns if columns is None else list(columns)
        select = ", ".join(self.db.quote(c) for c in names)
        for batch in self.db.batches(f"SELECT {select} FROM {self.relation}"):
            yield pa.Table.from_batches([batch])

    def read_all(self, columns: Sequence[str] | None = None) -> pa.Table:
        names = self.columns if columns is None else list(columns)
        select = ", ".join(self.db.quote(c) for c in names)
        return self.db.arrow(f"SELECT {select} FROM {self.relation}")


class SqlEngine:
    """Rows in a database: the frequency table and the release are made there.

    >>> import duckdb
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE t AS SELECT * FROM (VALUES ('f'), ('m'), ('f')) v(sex)")
    >>> engine = SqlEngine()
    >>> source = engine.source(TableRef(con, table="t"))
    >>> sorted(engine.distinct(source, ["sex"]).to_pylist(), key=str)
    [{'sex': 'f', '__blendin_count__': 2}, {'sex': 'm', '__blendin_count__': 1}]
    """

    name = "sql"
    #: the rows stay in the database, and the process small: memory it frees goes back to
    #: the system (glibc's thresholds fixed where glibc starts them, see :mod:`blendin.heap`)
    small_process = True

    def __init__(self, *, replace: bool = False, dry_run: bool = False) -> None:
        #: an existing output table is replaced (else refused)
        self.replace = replace
        #: search, release and check as usual, then roll everything back: nothing is
        #: written (the statements run are in ``source.db.log``)
        self.dry_run = dry_run

    # -- reading ---------------------------------------------------------------------------

    def source(self, data, spec=None) -> SqlSource:
        if isinstance(data, SqlSource):
            return data
        if not isinstance(data, TableRef):
            if is_database(data):
                raise BlendinError("a database needs a table or a query",
                                   fix="give --table NAME or --query \"SELECT ...\" (table= "
                                   "or query= in Python)")
            raise BlendinError(f"the SQL engine reads tables in databases, not "
                               f"{type(data).__name__}", fix="use --engine embedded")
        return SqlSource(database(data), data)

    def distinct(self, source: SqlSource, columns: Sequence[str], missing: str = "",
                 expected=None, progress=None) -> pa.Table:
        """Distinct text tuples of ``columns`` with their counts: one ``GROUP BY`` in the
        database; its rows read as text here (two values that read as one text, a null and
        an empty text say, are counted together). ``progress`` (a bar's) hears how far the
        statement is (:func:`ticking`)."""
        source.check_columns(columns)
        source.check_flat(columns, "a quasi-identifier or sensitive attribute")
        keyed = [c for c in columns if c not in source.texts]
        # the source is only read
        with source.db.transaction(read_only=True, snapshot=source.snapshot), \
                ticking(source.db, progress):
            grouped = group_by(source.db, source.relation, columns, keyed,
                               [c for c in columns if c not in keyed])
        if progress is not None:
            progress(1.0)
        if grouped.num_rows == 0:
            raise BlendinError(f"{source.name} has no rows",
                               fix="give a table with at least one row")
        for name in columns:  # each column's values and their keys, kept
            key = f"{KEY}{keyed.index(name)}" if name in keyed else name
            source.domains[name] = _domain(grouped, name, key)
        return texts_counted(grouped, columns, missing)

    def sample(self, source: SqlSource, columns: Sequence[str], missing: str,
               model: DifferentialPrivacy) -> tuple[SqlSource, pa.Table]:
        """Differential privacy's sample, drawn by the database (each record kept with
        probability ``model.beta``, by ``random()`` seeded from the model's seed) into a
        temporary table with the 0/1 column ``MARK``: the source the release reads (its
        marked rows), and the distinct tuples of ``columns`` and ``MARK``."""
        db, q = source.db, source.db.quote
        name = run_name("sample")
        db.seed(model.seed if model.seed is not None else secrets.randbits(62))
        with db.transaction(snapshot=source.snapshot):
            db.execute(f"CREATE TEMP TABLE {q(name)} AS SELECT s.*, CASE WHEN random() < "
                       f"{float(model.beta)!r} THEN 1 ELSE 0 END AS {q(dp.MARK)} "
                       f"FROM {source.relation}")
        source.let_go()  # (read for the last time)
        sampled = source.in_temporary(name)
        return sampled, self.distinct(sampled, [*columns, dp.MARK], missing)

    # -- releasing -------------------------------------------------------------------------

    @contextmanager
    def release(self, source: SqlSource, recoder, *, check_columns: Sequence[str],
                missing: str = "", suppressed: str = "drop", row_columns=None,
                output=None, delimiter: str = ",", escape_formulas: bool = False,
                labelled: Sequence[str] = (), progress=None, shuffle: Shuffle | None = None,
                blank: Sequence[str] = (), hidden: Sequence[str] = ()) -> Iterator[Release]:
        """Make the release in the database, regroup it there for the checker, and hand
        it back (``output`` None), write it to a file (a path) or give it its name (a
        :class:`TableRef` in the same database) once the block ends without error. The
        ``hidden`` columns (a person key) are regrouped for the checker, then dropped."""
        if row_columns is not None and row_columns.active:
            raise BlendinError("the SQL engine does not add class or row number columns",
                               fix="leave out --group-column and --original-row, or read "
                               "the rows with --engine embedded")
        db = source.db
        target = output if isinstance(output, TableRef) else None
        if target is not None:
            check_target(source.ref, target, self.replace)
        run = run_name()
        plan = _ReleasePlan(source, recoder, run, missing, suppressed, blank, shuffle,
                            hidden)
        told = progress or (lambda share: None)
        # one transaction: the release gets its name only after the checker passed; any
        # error, or a killed process, rolls back every table made (a dry run, everything)
        with db.transaction(rollback=self.dry_run, snapshot=source.snapshot):
            source.let_go()  # (the snapshot is taken)
            if target is None:
                released = db.quote(plan.temp("release"))
            else:
                released = db.table(f"{run}_release", target.schema)
            plan.make(released, progress)
            with ticking(db, progress, 0.7, 0.9):
                regrouped = plan.regrouped(released, check_columns)
                # held in memory, the rows keep their person to count people by (the
                # release's risk), dropped once read; a table or a file never holds it
                keep = output is None and not self.dry_run
                plan.hide(released, keep_hidden=keep)
            told(0.9)
            db.check_read()  # (before a file is written from it, not only at the commit)
            everything = f"SELECT * FROM {released}"
            if self.dry_run:  # checked, and then rolled back: nothing made, nothing read
                yield Release(regrouped, plan.columns, rows=plan.rows)
            elif output is None:
                table, people = without_people(db.arrow(everything), plan.hidden)
                yield Release(regrouped, plan.columns, data=table, rows=plan.rows,
                              people=people)
            elif target is None:
                path = Path(output)
                with atomic_path(path) as temp:
                    release = Release(regrouped, plan.columns, path=path, rows=plan.rows)
                    yield release  # the checker passed: the file is written, then renamed
                    release.batches = export(db, everything, temp, path, delimiter,
                                             escape_formulas, progress, plan.rows)
            else:
                yield Release(regrouped, plan.columns, rows=plan.rows)
                if self.replace:
                    db.execute(f"DROP TABLE IF EXISTS {db.table(target.table, target.schema)}")
                db.execute(f"ALTER TABLE {released} RENAME TO {db.quote(target.table)}")
            plan.drop_temporary()
        told(1.0)

    def write(self, table: pa.Table, path, **options) -> Path:
        """Write an in-memory release atomically (see :func:`blendin.io.write_table`)."""
        return write_table(table, path, **options)


def database(ref: TableRef) -> Database:
    """The open connection of ``ref`` (opened once, shared by copies of the reference)."""
    if not ref.opened:
        ref.opened.append(connect(ref.database, password_env=ref.password_env,
                                  password=ref.password))
    return ref.opened[0]


def check_target(source, target: TableRef, replace: bool) -> None:
    """Before any work: the output table is in the database of the ``source`` (a
    :class:`TableRef`), is neither the source table nor a table the source reads, and
    replaces an existing table only when asked (:func:`check_replaced`)."""
    if not isinstance(source, TableRef) or not source.same_database(target):
        raise BlendinError("the release table is written into the database it is read from",
                           fix="give the input's database as the output, or -o FILE.parquet")
    db = database(source)
    select = selected(db, source)
    check_replaced(db, lambda: db.reads(select), target.table, target.schema, replace,
                   f"read by {source.rows()}",
                   None if source.query is not None else (source.table, source.schema))


def check_replaced(db: Database, read: Callable[[], frozenset[str]], table: str,
                   schema: str | None, replace: bool, overlap: str,
                   input_table: tuple[str, str | None] | None = None) -> None:
    """Before any work: the output ``table`` is neither the ``input_table`` (a name and
    its schema) nor one the input ``read()``s, which ``overlap`` says. The database
    resolves every name (in DuckDB "PATIENTS" is patients); the input is looked at only
    where the output table exists. An existing one is replaced only when asked, and only
    where nothing depends on it."""
    target = db.resolve(table, schema)
    if target is None:
        return
    same = input_table is not None and db.resolve(*input_table) == target
    if same or db.reads(f"SELECT * FROM {target}") & read():
        what = "the input table" if same else overlap
        raise BlendinError(f"the output table {table!r} is {what}",
                           fix="give another --output-table: the input is never replaced")
    if not replace:
        raise BlendinError(f"{db.name} already has a table {table!r}",
                           fix="give another --output-table, or --force to replace it")
    keeping = db.dependents(table, schema)
    if keeping:
        raise BlendinError(f"the output table {table!r} cannot be replaced while these "
                           f"depend on it: {', '.join(keeping)}",
                           fix="give another --output-table, or drop what depends on it")
    db.guard(target)  # (what a function of the input reads, which no plan shows)


def group_by(db: Database, relation: str, columns: Sequence[str], keyed: Sequence[str] = (),
             texts: Sequence[str] = ()) -> pa.Table:
    """``SELECT columns, count(*) FROM relation GROUP BY columns``, as Arrow (column COUNT),
    with the :func:`key_of` of the ``keyed`` columns too (columns ``KEY`` 0, 1, ...); the
    ``texts`` are grouped and read as their keys (byte by byte)."""
    count = db.quote(COUNT)
    if db.dialect == "postgres":
        # PostgreSQL prices carrying every group through a parallel plan's Gather as if
        # none were merged, and groups many tuples on one process: its workers group in
        # about 0.7x the time (10M rows, 633K groups, 2 cores). For this transaction only;
        # the server's limits on workers still hold
        db.execute("SET LOCAL parallel_setup_cost = 0")
        db.execute("SET LOCAL parallel_tuple_cost = 0")
    if not columns:
        return db.arrow(f"SELECT count(*) AS {count} FROM {relation} HAVING count(*) > 0")
    # a text is grouped by its own key, byte by byte: a collation that holds "A" and "a"
    # equal (DuckDB's NOCASE, PostgreSQL's nondeterministic ones) would count them as one
    # class, which the release shows as two
    grouped = [key_of(db, c) if c in texts else db.quote(c) for c in columns]
    names = ", ".join(f"{e} AS {db.quote(c)}" if c in texts else e
                      for c, e in zip(columns, grouped))
    extra = "".join(f", {key_of(db, c)} AS {db.quote(f'{KEY}{i}')}"
                    for i, c in enumerate(keyed))
    # grouped by each keyed column's text too: values the database holds equal may read
    # as other texts (1.0 and 1.00 of a numeric, -0 and 0, 1 day and 24:00:00), and a
    # release joins each row's own text to its labels (a text it never read would drop
    # the row)
    by = ", ".join([*grouped, *(key_of(db, c) for c in keyed)])
    return db.arrow(f"SELECT {names}{extra}, count(*) AS {count} FROM {relation} "
                    f"GROUP BY {by}", encoded=True)


def _domain(grouped: pa.Table, name: str, key: str) -> pa.Table:
    """The distinct values of column ``name`` of ``grouped`` (column ``value``) with their
    keys (column ``key`` of ``grouped``, which may be ``name``): grouped by their codes,
    then decoded."""
    parts = [_coded(grouped.column(c)) for c in dict.fromkeys([name, key])]
    pairs = pa.table({str(i): codes for i, (codes, _) in enumerate(parts)})
    pairs = pairs.group_by(pairs.column_names, use_threads=False).aggregate([])
    decoded = [dictionary.take(pairs.column(str(i))) for i, (_, dictionary) in enumerate(parts)]
    return pa.table({"value": decoded[0], "key": decoded[-1]})


def _coded(column: pa.ChunkedArray) -> tuple[pa.Array, pa.Array]:
    """A column as codes into one dictionary of its distinct values (a null is a null code
    or an entry of its own)."""
    chunks = dictionary_chunks(column)
    whole = pa.chunked_array(chunks, chunks[0].type if chunks else column.type)
    whole = whole.unify_dictionaries().combine_chunks()
    return whole.indices, whole.dictionary


def key_of(db: Database, column: str, alias: str = "") -> str:
    """A value of ``column`` as the text the database spells it: the key a release joins
    the column's labels on (the same expression on both sides, so any type matches),
    compared byte by byte whatever the column's collation ("A" is not "a").

    >>> from blendin.engines.databases import DuckDB
    >>> key_of(DuckDB(None, "x"), "zip", "s.")
    'CAST(s."zip" AS VARCHAR) COLLATE "binary"'
    """
    collation = '"C"' if db.dialect == "postgres" else '"binary"'
    return f"CAST({alias}{db.quote(column)} AS VARCHAR) COLLATE {collation}"


def column_labels(domain: pa.Table, hierarchy: Hierarchy, level: int, name: str,
                  missing: str) -> pa.Table:
    """The labels of one QI's values at ``level``, for the database: each value's key
    (:func:`key_of`; empty for a null, which ``ID`` flags) and its label, as the recoders
    compute it.

    >>> h = Hierarchy.from_rows([["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3", "*"]])
    >>> domain = pa.table({"value": [3, 1], "key": ["3", "1"]})
    >>> column_labels(domain, h, 1, "n", "").to_pydict()["__blendin_label"]
    ['3', '1-2']
    """
    ground = ground_codes(domain.column("value"), hierarchy, name, missing)
    codes = (hierarchy.codes[level][ground] if len(hierarchy.labels[level]) > 1
             else np.zeros(len(ground), np.int64))
    texts = pa.array([str(v) for v in hierarchy.labels[level]], pa.string())
    keys = domain.column("key").cast(pa.string()).combine_chunks()
    return pa.table({KEY: pc.fill_null(keys, ""), ID: pc.is_null(keys),
                     LABEL: texts.take(pa.array(codes))})


def suppressed_classes(recoding) -> pa.Table:
    """The labels (columns ``LABEL`` 0, 1, ...) of the classes ``recoding`` suppresses,
    decoded from their keys (mixed radix over the QIs' label counts, as
    :class:`~blendin.plan.ClassKeyer` makes them where it needs no ranks)."""
    keys = np.asarray(recoding.suppressed_keys, np.int64)
    radices = recoding.keyer.radices
    columns = {}
    for i, (hierarchy, level) in enumerate(zip(recoding.hierarchies, recoding.levels)):
        stride = math.prod(radices[i + 1:])
        codes = (keys // stride) % radices[i]
        texts = pa.array([str(v) for v in hierarchy.labels[level]], pa.string())
        columns[f"{LABEL}{i}"] = texts.take(pa.array(codes))
    return pa.table(columns) if columns else pa.table({f"{LABEL}": pa.array([], pa.string())})


def texts_counted(grouped: pa.Table, columns: Sequence[str], missing: str) -> pa.Table:
    """Grouped rows (``columns`` and COUNT) with their values as text, each column
    dictionary-encoded (one dictionary of distinct texts), regrouped where two values read
    as one text.

    >>> t = pa.table({"a": ["x", None, ""], "__blendin_count__": [1, 2, 3]})
    >>> sorted(texts_counted(t, ["a"], "?").to_pylist(), key=str)
    [{'a': '?', '__blendin_count__': 5}, {'a': 'x', '__blendin_count__': 1}]
    """
    counts = grouped.column(COUNT).cast(pa.int64()).combine_chunks()
    coded = {c: _text_codes(grouped.column(c), missing) for c in columns}
    indices = {c: codes for c, (codes, _, _) in coded.items()}
    if any(merged for _, _, merged in coded.values()):
        # two tuples may now be one: regrouped by their codes (a regrouping by text would
        # hash every text again: 300 MiB for 633,000 tuples)
        summed = pa.table({**indices, COUNT: counts}).group_by(
            list(columns), use_threads=False).aggregate([(COUNT, "sum")])
        indices = {c: summed.column(c).combine_chunks() for c in columns}
        counts = summed.column(f"{COUNT}_sum").combine_chunks()
    return pa.table({**{c: pa.DictionaryArray.from_arrays(indices[c], coded[c][1])
                        for c in columns}, COUNT: counts})


def _text_codes(column: pa.ChunkedArray, missing: str) -> tuple[pa.Array, pa.Array, bool]:
    """A column's values as codes (int32) into its distinct texts (:func:`as_text`), and
    whether two of its values read as one text (a null and an empty text, say)."""
    codes, dictionary = _coded(column)
    codes, texts = codes.cast(pa.int32()), as_text(dictionary, missing).combine_chunks()
    if codes.null_count:  # a null reads as the missing text too
        texts = pa.concat_arrays([texts, pa.array([missing], pa.string())])
        codes = pc.fill_null(codes, len(dictionary))
    distinct = pc.unique(texts)
    if len(distinct) == len(texts):
        return codes, texts, False
    return pc.take(pc.index_in(texts, distinct), codes), distinct, True


#: the columns a release's mapping adds beside the QIs (a QI of these names is refused)
ID, REMOVED, LABEL = f"{PREFIX}id", f"{PREFIX}removed", f"{PREFIX}label"
#: a value's key (``key_of``) beside the grouped values
KEY = f"{PREFIX}key"


class _ReleasePlan:
    """The statements of one release, in the source's database; ``run`` names its tables."""

    def __init__(self, source: SqlSource, recoder, run: str, missing: str, suppressed: str,
                 blank: Sequence[str], shuffle: Shuffle | None,
                 hidden: Sequence[str] = ()) -> None:
        self.source, self.db, self.run = source, source.db, run
        #: delta-presence's subset column, or differential privacy's sample: only their
        #: rows are released
        self.subset = getattr(recoder, "subset", None)
        self.sample = getattr(recoder, "sample", None) is not None
        self.recoder = getattr(recoder, "recoder", recoder)
        #: with event-level QIs: the people to suppress, whole (a PersonMask), found by
        #: their keys; the recoder then labels the values only
        self.persons = getattr(self.recoder, "persons", None)
        if self.persons is not None:
            self.recoder = FullDomainRecoder(self.recoder.recoding, self.recoder.parts)
        self.missing, self.hidden = missing, list(hidden)
        #: with hidden columns (a person key) the suppressed rows stay, marked, until the
        #: checker has counted their people; then they go (:meth:`hide`)
        self.marked = suppressed == "drop" and bool(self.hidden)
        self.drop = suppressed == "drop" and not self.marked
        self.blank, self.shuffle = set(blank), shuffle
        self.temporary: list[str] = list(source.temporary)
        marked, _ = self.recoder(pa.schema(list(source.types().items())).empty_table())
        #: the released columns, in order; the QIs among them are recoded
        self.columns = [c for c in marked.column_names if c != dp.MARK]
        self.qis = list(getattr(self.recoder, "qi_names", None)
                        or self.recoder.recoding.qi_names)
        clash = [c for c in self.columns if c.startswith(PREFIX)]
        if clash:
            raise BlendinError(f"column {clash[0]!r} has a name the SQL engine uses itself",
                               fix=f"rename it in a --query (no name starting {PREFIX})")
        #: the rows released (the suppressed ones too, when kept)
        self.rows = 0

    def temp(self, suffix: str) -> str:
        name = f"{self.run}_{suffix}"
        self.temporary.append(name)
        return name

    def chosen(self) -> str:
        """The condition on source rows ``s`` to release: differential privacy's sample,
        delta-presence's subset (its values loaded as a table, not written into the
        statement), else none."""
        if self.sample:
            return f"s.{self.db.quote(dp.MARK)} = 1"
        if self.subset is None:
            return ""
        q = self.db.quote
        yes = f"{self.run}_subset"
        if yes not in self.temporary:
            self.temporary.append(yes)
            self.db.load(yes, pa.table({"v": [k for k, v in SUBSET_VALUES.items() if v]}))
        return (f"lower(CAST(s.{q(self.subset)} AS VARCHAR)) IN "
                f"(SELECT {q('v')} FROM {q(yes)})")

    def make(self, released: str, told=None) -> None:
        """The released rows as the table ``released`` (a qualified, quoted name);
        ``told`` (a bar's, or None) the share of the release done.

        A full-domain node maps each QI on its own (:meth:`by_columns`: a small table per
        QI, the suppressed classes by their keys); a release in parts or a Mondrian
        partitioning maps each distinct QI tuple (:meth:`by_tuples`)."""
        db, q = self.db, self.db.quote
        chosen = self.chosen()
        joins, removed, labels = (self.by_columns() if self.per_column()
                                  else self.by_tuples(chosen))
        if self.persons is not None:  # a person's rows go together, by their key
            joins, removed = joins + self.people(), f"(p.{q(ID)} IS NOT NULL)"
            if not self.drop:
                labels = [f"CASE WHEN {removed} THEN '{SUPPRESSED}' ELSE {label} END"
                          for label in labels]
        if told is not None:
            told(0.2)
        shown = []
        for name in self.columns:
            if name in self.qis:
                shown.append(f"{labels[self.qis.index(name)]} AS {q(name)}")
            elif name in self.blank and not self.drop:  # (dropped, none is shown)
                shown.append(f"CASE WHEN {removed} THEN NULL ELSE s.{q(name)} END AS {q(name)}")
            else:
                shown.append(f"s.{q(name)}")
        if self.marked:
            shown.append(f"{removed} AS {q(REMOVED)}")
        conditions = [chosen] * bool(chosen) + [f"NOT {removed}"] * self.drop
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        order = ""
        if self.shuffle is not None:
            db.seed(self.shuffle.seed)
            order = " ORDER BY random()"
        if db.dialect == "postgres":  # the maps are small: hashed, never a sort of the rows
            db.execute("SET LOCAL enable_mergejoin = off")
        with ticking(db, told, 0.2, 0.7):
            db.execute(f"CREATE TABLE {released} AS SELECT {', '.join(shown)} "
                       f"FROM {self.source.relation}{joins}{where}{order}")
        if told is not None:
            told(0.7)

    def people(self) -> str:
        """A join that finds the rows of the people to suppress: their keys (as the
        database spells them, :func:`key_of`) loaded as a small table."""
        db, q, mask = self.db, self.db.quote, self.persons
        gone = mask.keys.filter(pa.array(mask.suppressed))
        domain = self.source.domains[mask.column]
        text = as_text(domain.column("value"), self.missing)
        keys = domain.column("key").cast(pa.string()).filter(pc.is_in(text, value_set=gone))
        table = self.temp("people")
        db.load(table, pa.table({KEY: keys, ID: repeated(pa.scalar(True), len(keys))}))
        db.execute(f"ANALYZE {q(table)}")
        return f" LEFT JOIN {q(table)} AS p ON {key_of(db, mask.column, 's.')} = p.{q(KEY)}"

    def per_column(self) -> bool:
        """Whether the recoder is one full-domain node whose class keys fit in int64, on a
        source whose every QI's values are known (from its frequency table)."""
        recoder = self.recoder
        return (isinstance(recoder, FullDomainRecoder) and not recoder.parts
                and not recoder.recoding.keyer.ranks
                and all(name in self.source.domains for name in self.qis))

    def by_columns(self) -> tuple[str, str, list[str]]:
        """Joins that map each QI's values to their labels, one small table per QI (a QI
        whose every value is its own label needs none), and an anti-join that finds the
        suppressed classes by their labels: the joins, the condition of a suppressed
        record, and each QI's released expression."""
        db, q = self.db, self.db.quote
        recoding = self.recoder.recoding
        joins, labels, varying = [], [], []
        for i, name in enumerate(self.qis):
            domain = self.source.domains[name]
            hierarchy, level = recoding.hierarchies[i], recoding.levels[i]
            mapped = column_labels(domain, hierarchy, level, name, recoding.missing)
            key = key_of(db, name, "s.")
            if len(hierarchy.labels[level]) > 1:
                varying.append(i)
            if not domain.column("key").null_count and mapped.column(KEY).equals(
                    mapped.column(LABEL)):
                labels.append(key)  # its own label: no join
                continue
            table = self.temp(f"column{i}")
            db.load(table, mapped)
            db.execute(f"ANALYZE {q(table)}")
            match = (f"coalesce({key}, '') = m{i}.{q(KEY)} AND (s.{q(name)} IS NULL) = "
                     f"m{i}.{q(ID)}" if domain.column("key").null_count
                     else f"{key} = m{i}.{q(KEY)}")
            joins.append(f" JOIN {q(table)} AS m{i} ON {match}")
            labels.append(f"m{i}.{q(LABEL)}")
        classes = suppressed_classes(recoding)
        if not classes.num_rows:
            return "".join(joins), "FALSE", labels
        suppressed = self.temp("suppressed")
        db.load(suppressed, classes.select([f"{LABEL}{i}" for i in varying]).append_column(
            ID, pa.array([True] * classes.num_rows)))
        db.execute(f"ANALYZE {q(suppressed)}")
        matched = " AND ".join(f"x.{q(f'{LABEL}{i}')} = {labels[i]}" for i in varying)
        if self.drop:
            # an anti-join (``WHERE NOT EXISTS``): PostgreSQL hashes the suppressed classes
            # and streams the rows past them; the LEFT JOIN's estimates, blind to how the
            # labels combine, had it hash the 10M rows instead (31.7 s against 43.5 s)
            removed = f"EXISTS (SELECT 1 FROM {q(suppressed)} AS x WHERE {matched or 'TRUE'})"
            return "".join(joins), removed, labels
        joins.append(f" LEFT JOIN {q(suppressed)} AS x ON {matched or 'TRUE'}")
        removed = f"(x.{q(ID)} IS NOT NULL)"
        star = f"'{SUPPRESSED}'"  # suppressed records show * in every QI
        labels = [f"CASE WHEN {removed} THEN {star} ELSE {label} END" for label in labels]
        return "".join(joins), removed, labels

    def by_tuples(self, chosen: str) -> tuple[str, str, list[str]]:
        """A join that maps each distinct QI tuple of the source (numbered in a temporary
        table, read here and recoded by the recoder) to its labels: the join, the
        condition of a suppressed record, and each QI's released expression."""
        db, q = self.db, self.db.quote
        where = f" WHERE {chosen}" if chosen else ""
        tuples, labels, mapping = self.temp("tuples"), self.temp("labels"), self.temp("map")
        # a text by its key (byte by byte, see key_of); another type by its value and its
        # key: values held equal and spelled apart (1.0 and 1.00) are tuples of their own,
        # as the frequency table counted them
        qis = ", ".join(f"{key_of(db, c, 's.')} AS {q(c)}" if c in self.source.texts
                        else f"s.{q(c)}, {key_of(db, c, 's.')} AS {q(f'{KEY}{i}')}"
                        for i, c in enumerate(self.qis))
        distinct = (f"SELECT DISTINCT {qis} FROM {self.source.relation}{where}" if self.qis
                    else f"SELECT 1 AS {q(LABEL)}")
        db.execute(f"CREATE TEMP TABLE {q(tuples)} AS SELECT row_number() OVER () AS {q(ID)},"
                   f" d.* FROM ({distinct}) AS d")
        read = db.arrow(f"SELECT * FROM {q(tuples)}")
        db.load(labels, self.labels(read))
        # each tuple beside its labels: one table, with statistics, which the database
        # hashes and probes with the source's rows
        db.execute(f"CREATE TEMP TABLE {q(mapping)} AS SELECT t.*, l.* FROM {q(tuples)} AS t "
                   f"JOIN {q(labels)} AS l ON t.{q(ID)} = l.{q(ID + '_')}")
        db.execute(f"ANALYZE {q(mapping)}")
        conditions = [self.match(c, read) for c in self.qis] or ["TRUE"]
        labelled = [f"m.{q(f'{LABEL}{i}')}" for i in range(len(self.qis))]
        return (f" JOIN {q(mapping)} AS m ON {' AND '.join(conditions)}",
                f"m.{q(REMOVED)}", labelled)

    def match(self, name: str, read: pa.Table) -> str:
        """Source row and tuple alike in QI ``name``: by the value's key (:func:`key_of`),
        an equality a hash join takes; where the column has nulls, a null is matched by a
        flag (its key stands in as an empty text, whatever the column's type)."""
        q = self.db.quote
        value = key_of(self.db, name, "s.")
        theirs = (f"m.{q(name)}" if name in self.source.texts
                  else f"m.{q(f'{KEY}{self.qis.index(name)}')}")
        if not read.column(name).null_count:
            return f"{value} = {theirs}"
        return (f"coalesce({value}, '') = coalesce({theirs}, '') AND "
                f"(s.{q(name)} IS NULL) = (m.{q(name)} IS NULL)")

    def labels(self, tuples: pa.Table) -> pa.Table:
        """Each numbered tuple's released labels and whether its records are suppressed,
        by the recoder every engine runs."""
        if self.qis:
            marked, removed = self.recoder(tuples.select(self.qis))
            marked = decoded(marked, self.qis)
        else:
            marked, removed = pa.table({}), [False] * tuples.num_rows
        columns = {ID + "_": tuples.column(ID).cast(pa.int64()),
                   REMOVED: pa.array(removed, pa.bool_())}
        for i, name in enumerate(self.qis):
            columns[f"{LABEL}{i}"] = marked.column(name).cast(pa.string())
        return pa.table(columns)

    def regrouped(self, released: str, columns: Sequence[str]) -> pa.Table:
        """The release regrouped for the checker, in the database; the records it drops
        are counted from the source and shown as suppressed (``*`` in every QI, sensitive
        values missing), as the other engines show them to the checker."""
        db = self.db
        texts = {f.name for f in db.schema(f"SELECT * FROM {released}") if f.metadata == TEXT}
        keyed = [c for c in columns if c not in texts]  # (read as their texts are)
        grouped = texts_counted(group_by(db, released, columns, keyed,
                                         [c for c in columns if c in texts]),
                                columns, self.missing)
        self.rows = int(pc.sum(grouped.column(COUNT)).as_py() or 0)
        if not self.drop:
            return grouped
        chosen = self.chosen()
        where = f" WHERE {chosen}" if chosen else ""
        gone = int(db.scalar(f"SELECT count(*) FROM {self.source.relation}{where}")) - self.rows
        if gone <= 0:
            return grouped
        extra = pa.table({**{c: pa.array([SUPPRESSED if c in self.qis else self.missing])
                             for c in columns}, COUNT: pa.array([gone], pa.int64())})
        return pa.concat_tables([grouped, extra.select(grouped.column_names).cast(
            grouped.schema)]).unify_dictionaries().combine_chunks()

    def hide(self, released: str, keep_hidden: bool = False) -> None:
        """After the check: the marked suppressed rows removed, the hidden columns (unless
        ``keep_hidden``: the caller drops them as it reads the rows) and the mark dropped
        from the release."""
        db, q = self.db, self.db.quote
        if self.marked:
            db.execute(f"DELETE FROM {released} WHERE {q(REMOVED)}")
            self.rows = int(db.scalar(f"SELECT count(*) FROM {released}"))
        hidden = [] if keep_hidden else list(self.hidden)
        for name in [*hidden, *([REMOVED] if self.marked else [])]:
            db.execute(f"ALTER TABLE {released} DROP COLUMN {q(name)}")
        self.columns = [c for c in self.columns if c not in self.hidden]

    def drop_temporary(self) -> None:
        for name in self.temporary:
            self.db.execute(f"DROP TABLE IF EXISTS {self.db.quote(name)}")


#: rows an export reads at once (from PostgreSQL, blocks of 256 KiB of CSV: they come
#: through Python's bytes, and larger ones leave more of the heap in pieces; a 10M-row
#: export took 305-327 MiB with 1 MiB blocks, 281-290 MiB with 256 KiB, in the same time)
#: and writes at once (a Parquet row group each); texts come once a block, as dictionaries
EXPORT_READ_ROWS = 1 << 12
EXPORT_WRITE_ROWS = 1 << 17


def export(db: Database, sql: str, temp: str, path: Path, delimiter: str,
           escape_formulas: bool, told=None, rows: int = 0) -> int:
    """Write the rows of ``sql`` to ``temp`` (CSV or Parquet, as ``path`` is named),
    batch by batch; the number of batches. ``told`` (a bar's, or None) hears the release's
    share done (from 0.9, by the batches written of ``rows``)."""
    with BatchWriter(temp, path, delimiter=delimiter, escape_formulas=escape_formulas,
                     shown=plain_schema) as writer:
        for table in in_tables(db.batches(sql, EXPORT_READ_ROWS, encoded=True),
                               EXPORT_WRITE_ROWS):
            writer.write(table)
            if told is not None and rows:
                told(0.9 + 0.1 * min(1.0, writer.rows / rows))
        if not writer.opened:  # no row: the columns alone
            writer.write(db.schema(sql).empty_table())
    return writer.batches


