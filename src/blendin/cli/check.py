"""``blendin check``: is this table, as it stands, safe under a spec?"""

from __future__ import annotations

import sys

import click

from blendin.cli import INPUT_HELP, main, refuse_text_options, related_inputs
from blendin.cli.database import database_options, table_options


@main.command("check")
@click.argument("data", type=click.Path(dir_okay=False, path_type=str), required=False)
@click.option("--input", "inputs", multiple=True, metavar="NAME=FILE",
              help=INPUT_HELP + " Checked together, counted in people.")
@database_options
@click.option("--spec", "spec_path", required=True, type=click.Path(),
              help="The release spec (TOML) whose privacy models must hold.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--person", default=None, metavar="COLUMN",
              help="The column naming each record's person (overrides the spec's [attributes] "
              "person): classes count people, not rows.")
@click.option("--show-values", is_flag=True,
              help="Also show the sensitive values of the problem classes.")
@click.option("--delimiter", default=None,
              help="CSV delimiter, e.g. ';' or '\\t' (default: the spec's, else sniffed; "
              "sniffed too where the spec's does not find the spec's columns).")
@click.option("--encoding", default=None,
              help="Text encoding of a CSV file, e.g. latin-1 (default: the spec's, else utf-8).")
@click.option("--population", default=None, type=click.Path(exists=True, dir_okay=False),
              help="The table the release was drawn from: delta-presence counts its people; "
              "t-closeness, beta-likeness and delta-disclosure compare each class with its "
              "distribution, as anonymize does (without it: this table's own).")
@click.option("--strict", is_flag=True,
              help="Fail when a column looks like a direct identifier (ssn, name, email...) "
              "and the spec names it nowhere (by default: a warning).")
@click.option("--normalize", default=None, metavar="STEPS",
              help="Count sensitive values spelled differently as one: case, space, unicode, "
              "comma-separated (default: the spec's [input] normalize).")
def check_command(data: str, spec_path: str, as_json: bool, show_values: bool,
                  delimiter: str | None, encoding: str | None,
                  population: str | None, strict: bool, normalize: str | None,
                  table: str | None, query: str | None, schema: str | None,
                  password_env: str | None, person: str | None,
                  inputs: tuple[str, ...]) -> None:
    """Check DATA (CSV, Parquet or a database table; raw or released) against the privacy
    models of a spec.

    Values are grouped as they stand: generalized labels such as 20-29 or 021** are
    compared as text, and rows whose quasi-identifiers are all * count as suppressed.
    Exit code 0 when every model holds, 1 when one is violated, 2 for bad input.
    With a person key (--person or the spec's) the classes count people, not rows.

    A table in a database (DATA a URL, with --table or --query) is checked there: only
    its grouped rows are read.

    Related tables (the spec's [tables]; released ones carry a person number in their
    key column) are given with --input NAME=FILE each and checked together: a class holds
    the people with equal values in every table.

    Example: blendin check release.csv --spec release.toml --json

    Example: blendin check --input patients=out/patients.csv --input visits=out/visits.csv
    --spec release.toml
    """
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.check import check
    from blendin.normalize import text_steps
    from blendin.progress import Progress
    from blendin.spec import Spec

    related = related_inputs(data, inputs) if inputs or data is None else None
    if not related:
        refuse_text_options(delimiter, encoding, [data, population])
    rows = (table_options(data, table, query, schema, password_env) if not related else
            # (refused with related tables, by name)
            {"table": table, "query": query, "schema": schema,
             "password_env": password_env})
    spec = Spec.from_toml(spec_path)
    if related and person is not None:  # (their people are the tables' keys)
        from blendin.errors import BlendinError

        raise BlendinError("--person does not work with related tables: the spec's "
                           "[tables] name each table's key", fix="leave out --person")
    if person is not None:
        spec.person = person
        spec.validate()
    if normalize is not None:
        spec.normalize = text_steps(normalize, option="--normalize")
    with Progress() as bars:  # in a terminal, while a large file is read
        report = check(related or data, spec, show_values=show_values, delimiter=delimiter,
                       encoding=encoding, population=population, progress=bars,
                       strict=strict, **rows)
    click.echo(report.to_json() if as_json else str(report))
    sys.exit(0 if report.passed else 1)
