"""``blendin risk``: re-identification risk of a table (raw or released)."""

from __future__ import annotations

import json

import click

from blendin.cli import (
    INPUT_HELP,
    main,
    refuse_text_options,
    refuse_without,
    related_inputs,
)
from blendin.cli.database import database_options, table_options


@main.command("risk")
@click.argument("data", type=click.Path(dir_okay=False, path_type=str), required=False)
@click.option("--input", "inputs", multiple=True, metavar="NAME=FILE",
              help=INPUT_HELP + " Measured together, in people (needs --spec).")
@database_options
@click.option("--qi", default=None, help="Quasi-identifier columns, comma-separated.")
@click.option("--spec", "spec_path", default=None, type=click.Path(),
              help="Take the quasi-identifiers and sensitive attributes from a spec (TOML).")
@click.option("--sensitive", default=None,
              help="Sensitive columns to test for homogeneous classes, comma-separated.")
@click.option("--threshold", default=0.2, show_default=True, type=float,
              help="A record is at risk when its risk is above this (0.2 = 1 in 5).")
@click.option("--population", default=None, type=float,
              help="Size of the population the table was drawn from.")
@click.option("--sampling-fraction", default=None, type=float,
              help="Share of the population in the table (instead of --population).")
@click.option("--person", default=None, metavar="COLUMN",
              help="The column naming each record's person: every figure counts people, "
              "not rows.")
@click.option("--weights", default=None, metavar="COLUMN",
              help="Sampling weights: adds each record's individual risk as sdcMicro "
              "estimates it, their sum (expected re-identifications) and average.")
@click.option("--household", default=None, metavar="COLUMN",
              help="Household ids: adds the household risk (a household is re-identified "
              "when any member is).")
@click.option("--suda", is_flag=True,
              help="Find the special uniques (SUDA2): records singled out by few key values, "
              "with SUDA and DIS-SUDA scores as sdcMicro computes them.")
@click.option("--dis-fraction", default=None, type=float,
              help="--suda: the sampling fraction of the DIS-SUDA score (default: the one "
              "--population or --sampling-fraction gives, else 0.01).")
@click.option("--suda-out", default=None, type=click.Path(dir_okay=False),
              help="--suda: write each combination of key values with its records and "
              "scores (CSV, Parquet or Excel).")
@click.option("--cells", is_flag=True, default=None,
              help="A * in a quasi-identifier is a blank cell that matches any value (a "
              "release made with suppression = \"cells\"; the default with such a --spec): "
              "a record's class is every record compatible with it.")
@click.option("--force", is_flag=True, help="Replace a --suda-out file that already exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--delimiter", default=None, help="CSV delimiter (default: sniffed).")
@click.option("--encoding", default=None,
              help="CSV text encoding, e.g. latin-1 (default: the spec's, else utf-8).")
def risk_command(data: str, qi: str | None, spec_path: str | None, sensitive: str | None,
                 threshold: float, population: float | None,
                 sampling_fraction: float | None, as_json: bool, delimiter: str | None,
                 encoding: str | None, table: str | None, query: str | None, schema: str | None,
                 password_env: str | None, person: str | None, weights: str | None,
                 household: str | None, suda: bool, dis_fraction: float,
                 suda_out: str | None, cells: bool | None, force: bool,
                 inputs: tuple[str, ...]) -> None:
    """Re-identification risk of DATA (CSV, Parquet or a database table) under the
    prosecutor, journalist and marketer models, sample uniques, homogeneous classes, and
    (with --population) the estimated population uniques; with --weights and --household,
    sdcMicro's individual and household risk; with --suda, the special uniques (SUDA2).

    Released labels (30-39, 021**, *) are compared as they are; rows whose
    quasi-identifiers are all * are suppressed and not at risk. With --cells a * matches
    any value, as in a release with blank cells.

    A table in a database (DATA a URL, with --table or --query) is grouped there.
    Related tables (--input NAME=FILE each, with the spec's [tables]) are measured
    together: a class holds the people with equal values in every table.

    Example: blendin risk hospital.csv --qi zip,dob,sex --population 24000

    Example: blendin risk survey.csv --qi region,sex,age --weights w --household hid --suda
    """
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.io import Source
    from blendin.progress import Progress
    from blendin.risk import risk

    refuse_without(("dis_fraction", "--dis-fraction", suda, "--suda"),
                   ("force", "--force", suda_out is not None, "--suda-out"))
    if data is not None and not inputs:
        refuse_text_options(delimiter, encoding, [data])
    spec = None
    if spec_path is not None:
        from blendin.spec import Spec

        spec = Spec.from_toml(spec_path)
        delimiter = delimiter or spec.delimiter
        encoding = encoding or spec.encoding
    related = related_inputs(data, inputs) if inputs or data is None else None
    if related and spec is not None:  # (the tables are read as the spec says)
        spec.delimiter, spec.encoding = delimiter, encoding
    if suda_out is not None:
        from blendin.errors import BlendinError
        from blendin.outputs import check_paths

        if not suda:
            raise BlendinError("--suda-out writes the scores of --suda",
                               fix="add --suda, or leave out --suda-out")
        check_paths({"DATA": data, "--spec": spec_path,
                     **{f"--input {n}": p for n, p in (related or {}).items()},
                     **(spec.files_read() if spec else {})},
                    {"--suda-out": (suda_out, "table")}, force=force)
    rows = (table_options(data, table, query, schema, password_env) if not related else
            # (refused with related tables, by name)
            {"table": table, "query": query, "schema": schema,
             "password_env": password_env})
    source = related or (data if rows else Source(data, delimiter=delimiter,
                                                  encoding=encoding))
    with Progress() as bars:  # in a terminal, while a large file is read
        report = risk(source, qi, spec=spec, sensitive=sensitive or (), threshold=threshold,
                      population=population, sampling_fraction=sampling_fraction,
                      missing=spec.missing if spec is not None else "", progress=bars,
                      person=person, weights=weights, household=household, suda=suda,
                      dis_fraction=dis_fraction, cells=cells, **rows)
    if suda_out is not None:
        from blendin.io import write_table

        write_table(report.suda_scores, suda_out)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, default=float))
    else:
        click.echo("\n".join(report.lines()))
