"""The options that name a table in a database, shared by anonymize, check and risk."""

from __future__ import annotations

import click

from blendin.cli import with_options
from blendin.errors import BlendinError


def _options(tables: str) -> list:
    return [
        click.option("--table", default=None, metavar="NAME",
                     help="DATA is a database (postgresql://USER@HOST:PORT/DB, duckdb:///FILE "
                     "or FILE.duckdb): read this table there. The rows stay in the database."),
        click.option("--query", default=None, metavar="SQL",
                     help="DATA is a database: read the rows of this SELECT instead of a "
                     "table."),
        click.option("--schema", default=None, metavar="NAME",
                     help=f"The schema of {tables} (default: the database's search path)."),
        click.option("--password-env", default=None, metavar="NAME",
                     help="The environment variable holding the database password (default: "
                     "the URL's, PGPASSWORD or ~/.pgpass). It is never printed."),
    ]


#: adds --table, --query, --schema and --password-env to a command that reads a table
database_options = with_options(_options("--table"))
#: the same for anonymize, whose --schema holds its --output-table too
release_database_options = with_options(_options("--table and --output-table"))


def table_options(data: str, table: str | None, query: str | None, schema: str | None,
                  password_env: str | None, related: bool = False) -> dict:
    """The keyword arguments that name DATA's rows in a database (empty for a file); with
    ``related`` tables the spec's ``[tables]`` name them."""
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.engines.databases import hidden, is_database

    given = {"table": table, "query": query, "schema": schema, "password_env": password_env}
    if not is_database(data):
        named = [f"--{k.replace('_', '-')}" for k, v in given.items() if v is not None]
        if named and "://" in data:
            raise BlendinError(f"{hidden(data)!r} is not a database blendin reads",
                               fix="give postgresql://USER@HOST:PORT/DB, duckdb:///FILE or "
                               "FILE.duckdb")
        if named:
            verb = "names" if len(named) == 1 else "name"
            raise BlendinError(f"{', '.join(named)} {verb} a table in a database, and DATA "
                               f"{data!r} is a file", fix="give DATA as a database URL "
                               "(postgresql://USER@HOST:PORT/DB, duckdb:///FILE) or leave "
                               f"{', '.join(named)} out")
        return {}
    if related and table is None and query is None:
        return {"schema": schema, "password_env": password_env}
    if table is None and query is None:
        raise BlendinError(f"DATA {hidden(data)!r} is a database: name its rows",
                           fix="add --table NAME or --query \"SELECT ...\"")
    return given
