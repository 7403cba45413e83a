"""Connections to the databases the SQL engine works in: PostgreSQL and DuckDB.

A :class:`Database` runs statements, reads results as Arrow (whole or in batches), loads a
small Arrow table into a temporary table, and quotes names in its dialect (through
sqlglot). Values never enter a statement's text: they are bound as parameters or loaded
as tables. The password (from the URL, ``PGPASSWORD``, ``~/.pgpass`` or ``password_env``)
is handed to the driver only: :attr:`Database.name` and every error leave it out.

- DuckDB: a ``.duckdb`` file, ``duckdb:///path``, ``duckdb:///:memory:``, or a connection;
  results come as Arrow natively, temporary tables from registered Arrow tables.
- PostgreSQL: ``postgresql://USER@HOST:PORT/DB`` (or a SQLAlchemy engine's URL) through
  psycopg; results come by ``COPY ... TO STDOUT`` as CSV parsed by pyarrow, with the
  columns' types taken from the statement's description, and tables are loaded by
  ``COPY ... FROM STDIN``.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import pyarrow as pa
import pyarrow.csv as pcsv

from blendin.errors import BlendinError
from blendin.parallel import workers

#: the metadata of a column held as text
TEXT = {b"sql": b"text"}
URL_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2",
               "duckdb")
DUCKDB_SUFFIXES = (".duckdb", ".ddb")


def is_database(data) -> bool:
    """True for a database URL, a ``.duckdb`` file, a DuckDB connection, or a SQLAlchemy
    engine (told by name: none of them need be installed). A DuckDB relation is rows, read
    once as Arrow (:func:`blendin.io.to_arrow`), as a polars LazyFrame is.

    >>> is_database("postgresql://me@db/hospital"), is_database("data.csv")
    (True, False)
    """
    if isinstance(data, str | os.PathLike):
        text = str(data)
        scheme = text.partition("://")[0].lower() if "://" in text else ""
        return scheme in URL_SCHEMES or text.lower().endswith(DUCKDB_SUFFIXES)
    kind = type(data)
    return (kind.__module__.startswith(("duckdb", "_duckdb"))
            and kind.__name__ == "DuckDBPyConnection"
            or kind.__name__ == "Engine" and kind.__module__.startswith("sqlalchemy"))


def connect(target, *, password_env: str | None = None,
            password: str | None = None) -> Database:
    """The database ``target`` names (see :func:`is_database`); the password, where the
    URL has none, from ``password``, the variable ``password_env``, PGPASSWORD or
    ~/.pgpass."""
    kind = type(target)
    if kind.__module__.startswith(("duckdb", "_duckdb")):
        if kind.__name__ == "DuckDBPyRelation":
            raise BlendinError("a DuckDB relation is rows, not a database to read a table of",
                               fix="pass the relation alone, or its connection with "
                               "query=relation.sql_query()")
        return DuckDB(target, "the DuckDB connection")
    if kind.__name__ == "Engine" and kind.__module__.startswith("sqlalchemy"):
        target = target.url.render_as_string(hide_password=False)
    text = str(target)
    scheme = text.partition("://")[0].lower() if "://" in text else ""
    if scheme == "duckdb" or (not scheme and text.lower().endswith(DUCKDB_SUFFIXES)):
        path = text.partition("://")[2] if scheme else text
        path = path[1:] if path.startswith("/") and scheme else path
        return DuckDB.open(path or ":memory:")
    if scheme.startswith("postgres"):
        return Postgres.open(text, password_env, password)
    raise BlendinError(f"{hidden(text)!r} is not a database blendin can read",
                       fix="give postgresql://USER@HOST:PORT/DB, duckdb:///FILE or a "
                       "FILE.duckdb")


#: a URL's scheme, its user and password (up to its last "@": a password that holds "@",
#: "/", "?" or "#" unescaped is hidden whole, wherever a driver would end it)
_USERINFO = re.compile(r"^(?P<scheme>[^:/?#]+://)(?P<user>[^:@/?#]*)(?::.*)?@", re.DOTALL)


def hidden(url: str) -> str:
    """``url`` without its password (the user's part, or a ``password=`` parameter), also
    where the rest does not parse.

    >>> hidden("postgresql://me:secret@db:5432/x")
    'postgresql://me@db:5432/x'
    >>> hidden("postgresql://me:a@b@db:99999/x?sslmode=require&password=c")
    'postgresql://me@db:99999/x?sslmode=require'
    """
    url = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}@" if m["user"]
                        else m["scheme"], url, count=1)
    head, mark, query = url.partition("?")
    kept = [part for part, name, _ in _parameters(query) if "password" not in name.lower()]
    return head + (mark + "&".join(kept) if mark and any(kept) else "")


def _parameters(query: str) -> list[tuple[str, str, str]]:
    """A URL's parameters (the text after ``?``), each as written, its name and its value
    decoded (libpq decodes the name too; a "#" in a value is the value's)."""
    return [(part, unquote(name), unquote(value)) for part in query.split("&")
            for name, _, value in [part.partition("=")]]


def url_password(url: str) -> str | None:
    """The password a URL gives: its user's part (decoded), or a ``password=`` parameter.

    >>> url_password("postgresql://me:s%40cret@db/x"), url_password("postgresql://db/x")
    ('s@cret', None)
    """
    found = re.match(r"^[^:/?#]+://[^:@/?#]*:([^/?#]*)@", url)
    if found:
        return unquote(found[1])
    given = [value for _, name, value in _parameters(url.partition("?")[2])
             if name == "password"]
    return given[-1] if given else None


def check_url(url: str) -> None:
    """A database URL that names one host and, where it gives one, a port: refused before
    connecting, where a driver would read it otherwise (or quote it in an error).

    >>> check_url("postgresql://me:a@b@db/x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    blendin.errors.BlendinError: 'postgresql://me@db/x' has '@', '/', '?' or '#' in its ...
    """
    rest = url.partition("://")[2]
    user = rest[:rest.rfind("@")] if "@" in rest else ""
    if any(c in user for c in "@/?#"):  # (a driver would end the password at the first)
        raise BlendinError(f"{hidden(url)!r} has '@', '/', '?' or '#' in its user or "
                           "password", fix="write them as %40, %2F, %3F and %23")
    try:
        urlsplit(url).port  # noqa: B018 (raises for a port that is not one)
    except ValueError as error:
        raise BlendinError(f"{hidden(url)!r} is not a valid URL: {error}",
                           fix="write it as postgresql://USER@HOST:PORT/DB") from None


#: seconds between two looks at a running statement (:func:`ticking`)
TICK = 0.25


@contextmanager
def ticking(db: Database, told, start: float = 0.0, end: float = 1.0) -> Iterator[None]:
    """While the block's statements run, ``told`` (a bar's, or None) hears every ``TICK``
    seconds how far they are, as a share between ``start`` and ``end`` where the database
    measures it (DuckDB), else None, which moves the bar's clock on (PostgreSQL).

    >>> heard = []
    >>> class Halfway(Database):
    ...     def progress(self): return 0.5
    >>> import time
    >>> with ticking(Halfway(), heard.append, 0.2, 0.6):
    ...     time.sleep(3 * TICK)
    >>> heard[0]
    0.4
    """
    if told is None:
        yield
        return
    done = threading.Event()

    def tick() -> None:
        furthest = start
        while not done.wait(TICK):
            share = db.progress()
            share = None if share is None else start + (end - start) * share
            if share is not None and share > furthest:  # (never back: a bar only grows)
                furthest = share
                told(share)
            else:
                told(None)

    thread = threading.Thread(target=tick, name="blendin-ticking", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


class Database:
    """What the SQL engine asks of a database (one connection, used by one thread)."""

    dialect = ""
    #: the driver's mark of a bound parameter
    mark = "?"
    #: what the database is called in messages (never with its password)
    name = ""
    #: every statement run, in order (a dry run prints them)
    log: list[str]

    def quote(self, name: str) -> str:
        """``name`` as a quoted identifier of this dialect."""
        from sqlglot import exp

        return exp.to_identifier(name, quoted=True).sql(self.dialect)

    def table(self, name: str, schema: str | None = None) -> str:
        """The quoted, qualified name of a table."""
        return (f"{self.quote(schema)}." if schema else "") + self.quote(name)

    def execute(self, sql: str, params: Sequence = ()) -> None:
        raise NotImplementedError

    def scalar(self, sql: str, params: Sequence = ()):
        raise NotImplementedError

    def progress(self) -> float | None:
        """How far the statement running now is (0 to 1), asked from another thread; None
        where the database does not tell (PostgreSQL measures no SELECT)."""
        return None

    def arrow(self, sql: str, encoded: bool = False) -> pa.Table:
        """The rows of ``sql`` (with ``encoded``, text columns may come dictionary-encoded:
        less memory for many rows of few texts)."""
        batches = list(self.batches(sql, encoded=encoded))
        return pa.Table.from_batches(batches) if batches else self.schema(sql).empty_table()

    def batches(self, sql: str, rows: int = 1 << 16, encoded: bool = False
                ) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def schema(self, sql: str) -> pa.Schema:
        """The Arrow schema of the rows ``sql`` returns (no row is read); a column the
        database holds as text (its text is the value itself) has the metadata
        :data:`TEXT`."""
        raise NotImplementedError

    def load(self, name: str, table: pa.Table) -> None:
        """``table`` as a new temporary table ``name``."""
        raise NotImplementedError

    def exists(self, name: str, schema: str | None = None) -> bool:
        """Whether table (or view) ``name`` is in ``schema`` (by default the database's
        search path)."""
        return self.resolve(name, schema) is not None

    def resolve(self, name: str, schema: str | None = None) -> str | None:
        """The table (or view) that ``name`` in ``schema`` names, as the database resolves
        it (quoted and qualified alike whatever the spelling), or None where none is."""
        raise NotImplementedError

    def dependents(self, name: str, schema: str | None = None) -> list[str]:
        """What would keep table ``name`` from being dropped (a view on it, a foreign key
        to it), each as the database describes it."""
        return []

    def reads(self, sql: str) -> frozenset[str]:
        """The tables the ``SELECT`` ``sql`` reads (a view's: the tables under it), each
        as the database resolves its name, quoted and qualified alike whatever the
        spelling: two names of one table give one entry."""
        raise NotImplementedError

    #: each sequence's last value as the open transaction began (:meth:`_sequences`)
    _steps: list | None = None

    def guard(self, table: str) -> None:
        """From now on, refuse a transaction that reads ``table`` (the output table a
        release replaces), where the database counts what a transaction reads."""

    @contextmanager
    def transaction(self, read_only: bool = False, rollback: bool = False,
                    snapshot: str | None = None) -> Iterator[None]:
        """One transaction: committed when the block ends (rolled back instead with
        ``rollback``), rolled back on any error (a killed process leaves it uncommitted:
        the server rolls it back). PostgreSQL runs a ``read_only`` one as such, and one
        given a ``snapshot`` (:meth:`Postgres.hold_snapshot`) sees the rows as of it.
        Inside another, it is part of that one."""
        if getattr(self, "_open", False):
            yield
            return
        self._open = True
        try:
            with self._transaction(read_only, rollback, snapshot):
                yield
        finally:
            self._open = False

    @contextmanager
    def _transaction(self, read_only: bool, rollback: bool,
                     snapshot: str | None = None) -> Iterator[None]:
        postgres = self.dialect == "postgres"
        self.execute("BEGIN TRANSACTION"
                     + (" ISOLATION LEVEL REPEATABLE READ" if snapshot and postgres else "")
                     + (" READ ONLY" if read_only and postgres else ""))
        try:
            if snapshot and postgres:
                # (a name the server gave, checked: SET takes no bound parameter)
                if not re.fullmatch(r"[0-9A-Fa-f-]+", snapshot):
                    raise ValueError(f"not a snapshot's name: {snapshot!r}")
                self.execute(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
            self._steps = self._sequences()
            yield
            self.check_read()
        except BaseException:
            with suppress(Exception):  # a lost connection: the server rolls back itself
                self.execute("ROLLBACK")
            raise
        self.execute("ROLLBACK" if rollback else "COMMIT")

    def check_read(self) -> None:
        """In a transaction, before what it made is used: it read the input only (no
        sequence advanced, see :meth:`_sequences`) and not the output table a release
        replaces (:meth:`guard`)."""
        self._unread()
        steps = self._steps
        if steps is not None and self._sequences() != steps:
            raise BlendinError(  # (DuckDB keeps a sequence's steps, rolled back or not)
                f"{self.name}: reading the input advanced a sequence (a nextval() in a "
                "view or macro it reads), which blendin does not set back",
                fix="read a query or table that calls no nextval(): the source is only read")

    def _sequences(self) -> list | None:
        """Each sequence's last value, where a read-only transaction does not keep them
        (DuckDB's); else None."""
        return None

    def _unread(self) -> None:
        """Refuse a transaction that read the table :meth:`guard` names."""

    def seed(self, seed: int) -> None:
        """Seed ``random()`` for this connection (the release's row order)."""
        self.execute(f"SELECT setseed({self.mark})", [(seed % 1_000_003) / 1_000_003])

    def close(self) -> None:
        raise NotImplementedError


class DuckDB(Database):
    dialect = "duckdb"

    def __init__(self, connection, name: str, owned: bool = False) -> None:
        self.connection, self.name, self.owned = connection, name, owned
        self.log: list[str] = []

    @classmethod
    def open(cls, path: str) -> DuckDB:
        """The DuckDB file at ``path``, which must exist (a table is read from it; a
        release is written only into the database read)."""
        import duckdb

        if path != ":memory:" and not Path(path).is_file():
            raise BlendinError(f"there is no DuckDB file {path!r}",
                               fix="check the path (in a URL, duckdb:///FILE is relative to "
                               "the working folder, duckdb:////FILE absolute)")
        try:
            connection = duckdb.connect(path)
            # progress measured (for blendin's bars), DuckDB's own bar not printed: it
            # would go to standard output (--json's)
            connection.sql("SET enable_progress_bar = true")
            connection.sql("SET enable_progress_bar_print = false")
            # DuckDB counts the machine's cores; --threads and the cores this process may
            # run on (taskset, a container's CPU set) limit it as they limit blendin
            connection.sql(f"SET threads = {workers()}")
        except duckdb.Error as error:
            raise BlendinError(f"cannot open the DuckDB file {path!r}: {error}",
                               fix="check the path, and that no other process holds the "
                               "file open for writing") from None
        return cls(connection, f"DuckDB {path}", owned=True)

    def execute(self, sql: str, params: Sequence = ()) -> None:
        self.log.append(sql)
        with self._errors():
            self.connection.sql(sql, params=list(params) or None)

    def progress(self) -> float | None:
        """DuckDB's measure of the running statement (none where a connection passed in
        keeps its progress bar off, or before DuckDB has one)."""
        share = self.connection.query_progress()
        return share / 100 if 0 <= share <= 100 else None

    def scalar(self, sql: str, params: Sequence = ()):
        self.log.append(sql)
        with self._errors():
            rows = self.connection.sql(sql, params=list(params) or None).fetchall()
        row = rows[0] if rows else None
        return None if row is None else row[0]

    def arrow(self, sql: str, encoded: bool = False) -> pa.Table:
        self.log.append(sql)
        with self._errors():
            return self.connection.sql(sql).to_arrow_table()

    def batches(self, sql: str, rows: int = 1 << 16, encoded: bool = False
                ) -> Iterator[pa.RecordBatch]:
        self.log.append(sql)
        with self._errors():
            yield from self.connection.sql(sql).to_arrow_reader(rows)

    def schema(self, sql: str) -> pa.Schema:
        with self._errors():
            schema = self.connection.sql(f"SELECT * FROM ({sql}) AS q LIMIT 0"
                                         ).to_arrow_table().schema
        return pa.schema([f.with_metadata(TEXT) if f.type == pa.string() else f
                          for f in schema])

    @contextmanager
    def _errors(self) -> Iterator[None]:
        import duckdb

        try:
            yield
        except duckdb.Error as error:
            raise BlendinError(f"{self.name}: {str(error).strip()}",
                               fix="check the table, query and columns named") from None

    def _sequences(self) -> list:
        with self._errors():
            return self.connection.sql("SELECT database_name, schema_name, sequence_name, "
                                       "last_value FROM duckdb_sequences() ORDER BY ALL"
                                       ).fetchall()

    def resolve(self, name: str, schema: str | None = None) -> str | None:
        # DuckDB matches names without regard to ASCII case, quoted or not ("PATIENTS"
        # is patients; "ÄÖ" is not "äö"); an unqualified name is looked up in its
        # temporary catalog first, then along the search path
        def fold(text: str) -> str:
            return f"translate({text}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', " \
                   "'abcdefghijklmnopqrstuvwxyz')"

        path = (f"CASE WHEN ? IS NOT NULL THEN [{fold('?')}] WHEN len(current_schemas(false))"
                f" = 0 THEN [{fold('current_schema()')}] ELSE list_transform("
                f"current_schemas(false), lambda s: {fold('s')}) END")
        place = f"list_position(path, {fold('table_schema')})"
        sql = (f"SELECT table_catalog, table_schema, table_name FROM "
               f"information_schema.tables, (SELECT {path} AS path, ? IS NULL AS bare) WHERE "
               f"{fold('table_name')} = {fold('?')} AND (table_catalog = current_database() "
               f"AND {place} IS NOT NULL OR table_catalog = 'temp' AND bare) "
               f"ORDER BY table_catalog = 'temp' DESC, {place}")
        self.log.append(sql)
        with self._errors():
            rows = self.connection.sql(sql, params=[schema, schema, schema, name]).fetchall()
        return ".".join(self.quote(part) for part in rows[0]) if rows else None

    def reads(self, sql: str) -> frozenset[str]:
        # every plan DuckDB explains, the unoptimized one too: an optimizer may drop the
        # scan of a table it proves empty (WHERE false)
        setting = str(self.scalar("SELECT current_setting('explain_output')")).lower()
        if setting not in ("all", "optimized_only", "physical_only"):
            raise ValueError(f"explain_output: {setting!r}")  # (set back by its text)
        self.execute("SET explain_output = 'all'")
        try:
            self.log.append(f"EXPLAIN (FORMAT json) {sql}")
            with self._errors():
                plans = self.connection.sql(self.log[-1]).fetchall()
        finally:
            self.execute(f"SET explain_output = '{setting}'")
        return frozenset(node["extra_info"]["Table"] for _, plan in plans
                         for node in _nodes(json.loads(plan), "children")
                         if "Table" in node.get("extra_info", {}))

    def load(self, name: str, table: pa.Table) -> None:
        view = f"{name}_arrow"
        self.connection.register(view, table)
        try:
            self.execute(f"CREATE TEMP TABLE {self.quote(name)} AS SELECT * FROM "
                         f"{self.quote(view)}")
        finally:
            self.connection.unregister(view)

    def close(self) -> None:
        if self.owned:
            self.connection.close()


#: PostgreSQL's type OIDs and the Arrow types their CSV text is read as (others: text)
PG_TYPES = {16: pa.bool_(), 20: pa.int64(), 21: pa.int16(), 23: pa.int32(),
            700: pa.float32(), 701: pa.float64(), 1082: pa.date32(),
            1114: pa.timestamp("us"), 1184: pa.timestamp("us", "UTC")}
#: the OIDs of text and varchar, whose text is the value itself (not bpchar's: padded)
PG_TEXTS = (25, 1043)
#: and the SQL type each Arrow type is loaded as
PG_NAMES = {pa.bool_(): "boolean", pa.int64(): "bigint", pa.int32(): "integer",
            pa.int16(): "smallint", pa.float64(): "double precision",
            pa.float32(): "real", pa.date32(): "date", pa.string(): "text"}


#: the session's settings that decide how the server spells a value (see Postgres.open)
SESSION = {"DateStyle": "ISO", "IntervalStyle": "postgres", "extra_float_digits": "1",
           "bytea_output": "hex"}


class Postgres(Database):
    dialect = "postgres"
    mark = "%s"

    def __init__(self, connection, name: str, secret: str | None = None) -> None:
        self.connection, self.name, self.secret = connection, name, secret
        self.log: list[str] = []
        #: the output table a release replaces, and its oid (:meth:`guard`)
        self.guarded: tuple[str, int] | None = None
        self._zone: str | None = None

    @classmethod
    def open(cls, url: str, password_env: str | None = None,
             password: str | None = None) -> Postgres:
        try:
            import psycopg
        except ImportError:
            raise BlendinError("PostgreSQL needs psycopg",
                               fix='pip install "blendin[sql]"') from None
        url = re.sub(r"^postgres(ql)?(\+\w+)?://", "postgresql://", url,
                     flags=re.IGNORECASE)
        check_url(url)
        options = {"password": password} if password else {}
        password = password or url_password(url)
        if password_env is not None:
            if password_env not in os.environ:
                raise BlendinError(f"the environment has no variable {password_env!r} for "
                                   "the password", fix=f"export {password_env}=... first, "
                                   "or leave --password-env out (PGPASSWORD, ~/.pgpass)")
            options["password"] = password = os.environ[password_env]
        name = f"PostgreSQL {hidden(url)}"
        try:
            connection = psycopg.connect(url, autocommit=True, **options)
        except psycopg.Error as error:
            text = _without(str(error).strip(), password)
            fix = ("check the user and the password (the URL's, PGPASSWORD, ~/.pgpass or "
                   "--password-env NAME)" if "authentication failed" in text else
                   "give the password in PGPASSWORD, ~/.pgpass or --password-env NAME"
                   if "password" in text else
                   "check the host, port and database in the URL, and that the server runs")
            raise BlendinError(f"cannot connect to {name}: {text}", fix=fix) from None
        # values are read as the text the server writes, which these settings of the
        # server, the database or the role would change: spelled the one way they are read
        # in (ISO dates, which the CSV reader parses; floats to their last digit). Each
        # sets how a value is written only, not what a query means (TimeZone would)
        for setting, value in SESSION.items():
            connection.execute(f"SET {setting} = '{value}'")
        return cls(connection, name, password)

    def hold_snapshot(self) -> str:
        """Begin a read-only transaction that stays open, and give the name of its
        snapshot: another connection's transaction given it (:meth:`transaction`) sees
        the rows as this one does, for as long as this connection is open."""
        self.execute("SET idle_in_transaction_session_timeout = 0")  # (held while idle)
        self.execute("BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        return str(self.scalar("SELECT pg_export_snapshot()"))

    @contextmanager
    def _errors(self) -> Iterator[None]:
        import psycopg

        try:
            yield
        except psycopg.Error as error:
            text = _without(str(error).strip(), self.secret)
            raise BlendinError(f"{self.name}: {text}",
                               fix="check the table, query and columns named") from None

    def execute(self, sql: str, params: Sequence = ()) -> None:
        self.log.append(sql)
        with self._errors():
            self.connection.execute(sql, list(params) or None, prepare=False)

    def scalar(self, sql: str, params: Sequence = ()):
        self.log.append(sql)
        with self._errors():
            row = self.connection.execute(sql, list(params) or None).fetchone()
        return None if row is None else row[0]

    def schema(self, sql: str) -> pa.Schema:
        with self._errors():
            cursor = self.connection.execute(f"SELECT * FROM ({sql}) AS q LIMIT 0")
        types = {**PG_TYPES, 1184: pa.timestamp("us", self.zone())}
        return pa.schema([pa.field(c.name, types.get(c.type_code, pa.string()),
                                   metadata=TEXT if c.type_code in PG_TEXTS else None)
                          for c in cursor.description])

    def zone(self) -> str:
        """The session's time zone (its ``TimeZone``), in which a ``timestamptz`` is read,
        shown and generalized, as DuckDB hands its zoned times over and as the embedded
        engine generalizes a zoned time: in its own zone (a month of New York's ends at
        05:00 UTC). UTC where Arrow knows no zone of that name (a POSIX rule)."""
        if self._zone is None:
            import pyarrow.compute as pc

            zone = str(self.scalar("SELECT current_setting('TimeZone')"))
            try:  # (Arrow looks a zone up where it is used)
                pc.hour(pa.array([0], pa.timestamp("us", zone)))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                zone = "UTC"
            self._zone = zone
        return self._zone

    def batches(self, sql: str, rows: int = 1 << 16, encoded: bool = False
                ) -> Iterator[pa.RecordBatch]:
        schema = self.schema(sql)
        if encoded:  # each block's texts once, and an index a row
            schema = pa.schema([f.with_type(pa.dictionary(pa.int32(), pa.string()))
                                if f.type == pa.string() else f for f in schema])
        self.log.append(sql)
        with self._errors(), _unreadable(schema), self.connection.cursor() as cursor, \
                cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT csv)") as copy:
            names = [f"c{i}" for i in range(len(schema))]
            parse = pcsv.ParseOptions(newlines_in_values=True)
            convert = pcsv.ConvertOptions(
                column_types={f"c{i}": f.type for i, f in enumerate(schema)},
                strings_can_be_null=True, quoted_strings_can_be_null=False,
                null_values=[""], true_values=["t"], false_values=["f"])
            # whole rows at a time (PostgreSQL sends a row a message), each block parsed
            # as one: a CSV reader of a stream refuses a row longer than its block (a long
            # text), which no size fits all; joined in C, not a Python step a row
            messages = iter(copy)
            while block := b"".join(map(bytes, itertools.islice(messages, rows))):
                table = pcsv.read_csv(io.BytesIO(block), read_options=pcsv.ReadOptions(
                    column_names=names, block_size=len(block) + 1, use_threads=False),
                    parse_options=parse, convert_options=convert)
                for batch in table.to_batches():
                    yield pa.RecordBatch.from_arrays(batch.columns, schema=schema)

    def reads(self, sql: str) -> frozenset[str]:
        # the tables the plan scans (a view's among them), and the tables and views the
        # statement names: the planner leaves out a scan it proves empty (WHERE false)
        plan = self.scalar(f"EXPLAIN (FORMAT JSON, VERBOSE) {sql}")
        scanned = {self.table(node["Relation Name"], node["Schema"])
                   for node in _nodes(plan, "Plans") if "Relation Name" in node}
        named = (self.resolve(name, schema) for name, schema in named_tables(sql, self.dialect))
        return frozenset(scanned.union(n for n in named if n is not None))

    def guard(self, table: str) -> None:
        # (by its oid: the release renames another table to its name at the end)
        self.guarded = (table, int(self.scalar("SELECT to_regclass(%s)::oid", [table])))

    def _unread(self) -> None:
        # a function the input calls may read the table where no plan or name shows it:
        # the server counts the scans of each table in the transaction
        if self.guarded is None:
            return
        table, oid = self.guarded
        scans = self.scalar("SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM "
                            "pg_stat_xact_user_tables WHERE relid = %s", [oid])
        if scans:
            raise BlendinError(f"the output table {table} is read by the input (through a "
                               "function it calls): it is not replaced",
                               fix="give another --output-table: the input is never replaced")

    def dependents(self, name: str, schema: str | None = None) -> list[str]:
        # a normal dependency on the table itself (a view's rule, another table's foreign
        # key) makes DROP TABLE refuse; its own indexes and sequences depend automatically
        described = self.scalar(
            "SELECT json_agg(DISTINCT pg_describe_object(classid, objid, objsubid)) FROM "
            "pg_depend WHERE refclassid = 'pg_class'::regclass AND refobjid = "
            "to_regclass(%s) AND deptype = 'n'", [self.table(name, schema)])
        return sorted(described or [])

    def resolve(self, name: str, schema: str | None = None) -> str | None:
        found = self.scalar("SELECT json_build_array(c.relname, n.nspname) FROM pg_class c "
                            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = "
                            "to_regclass(%s)", [self.table(name, schema)])
        return None if found is None else self.table(*found)

    def load(self, name: str, table: pa.Table) -> None:
        columns = ", ".join(f"{self.quote(f.name)} {PG_NAMES.get(f.type, 'text')}"
                            for f in table.schema)
        self.execute(f"CREATE TEMP TABLE {self.quote(name)} ({columns})")
        text = pa.table({f.name: table.column(i) if f.type in PG_NAMES
                         else table.column(i).cast(pa.string())
                         for i, f in enumerate(table.schema)})
        buffer = io.BytesIO()
        pcsv.write_csv(text, buffer, pcsv.WriteOptions(include_header=False,
                                                       quoting_style="all_valid"))
        self.log.append(f"COPY {self.quote(name)} FROM STDIN (FORMAT csv)  -- {len(table)} rows")
        with self._errors(), self.connection.cursor() as cursor, cursor.copy(
                f"COPY {self.quote(name)} FROM STDIN (FORMAT csv)") as copy:
            copy.write(buffer.getvalue())

    def close(self) -> None:
        self.connection.close()


@contextmanager
def _unreadable(schema: pa.Schema) -> Iterator[None]:
    """A value PostgreSQL holds and Arrow cannot (a date or timestamp of ``infinity``,
    before year 1 or after 9999) named with its column, where the CSV reader names a
    column's number only."""
    try:
        yield
    except pa.ArrowInvalid as error:
        found = re.search(r"CSV column #(\d+): (?:Row #\d+: )?CSV conversion error to "
                          r"([^:]+): invalid value '(.*)'", str(error), re.DOTALL)
        if found is None or int(found[1]) >= len(schema):
            raise
        name = schema.names[int(found[1])]
        raise BlendinError(
            f"column {name!r} holds {found[3]!r}, which a {found[2]} cannot hold outside "
            "the database (Arrow's dates and times run from year 1 to 9999, with no "
            "infinity)", fix=f"release into a table of the database (-o URL "
            f"--output-table NAME) where {name!r} is neither a quasi-identifier nor "
            f"sensitive, or read it as text in a --query (\"{name}\"::text), or leave "
            "such values out") from None


def _nodes(plan, children: str) -> Iterator[dict]:
    """Every node of an explained plan (JSON: lists and dicts, each node's children under
    the key ``children``; PostgreSQL's plan under ``Plan``)."""
    stack = [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            yield node
            stack.extend(node.get(key) for key in (children, "Plan") if key in node)


def named_tables(sql: str, dialect: str) -> set[tuple[str, str | None]]:
    """The tables (or views) a statement names, as ``(name, schema)``: not the names of
    its own ``WITH`` parts, nor names qualified by a database.

    >>> sorted(named_tables('WITH x AS (SELECT * FROM a) SELECT * FROM x, "S"."b"',
    ...                     "postgres"), key=str)
    [('a', None), ('b', 'S')]
    """
    import sqlglot
    from sqlglot import exp

    statement = sqlglot.parse_one(sql, read=dialect)
    parts = {cte.alias_or_name for cte in statement.find_all(exp.CTE)}
    return {(t.name, t.db or None) for t in statement.find_all(exp.Table)
            if isinstance(t.this, exp.Identifier) and not t.catalog
            and not (t.db == "" and t.name in parts)}


def _without(text: str, secret: str | None) -> str:
    """A driver's message on one line, without the password (as given, or as a URL
    spells it: percent-encoded)."""
    text = " ".join(line.strip() for line in text.splitlines() if line.strip())
    text = re.sub(r"[a-z][a-z0-9+.-]*://[^\s\"']+", lambda url: hidden(url[0]), text,
                  flags=re.IGNORECASE)  # (a URL it quotes, spelled any way)
    for spelling in (secret, quote(secret or "", safe=""), quote(secret or "")):
        if spelling:
            text = text.replace(spelling, "***")
    return text


