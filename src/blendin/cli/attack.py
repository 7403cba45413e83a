"""``blendin attack``: the linking attack of an identified table on a release."""

from __future__ import annotations

import json

import click

from blendin.cli import main
from blendin.errors import BlendinError


@main.command("attack")
@click.argument("release", type=click.Path(dir_okay=False, path_type=str))
@click.option("--external", required=True, type=click.Path(dir_okay=False),
              help="The identified table (e.g. a voter list) to link to the release.")
@click.option("--on", "on", default=None,
              help="Join columns, comma-separated (default: the columns both tables have).")
@click.option("--sensitive", default=None,
              help="Release columns the attacker wants to learn (default: those the external "
              "table does not have).")
@click.option("--truth", default=None,
              help="A column in both tables naming the person, to count correct matches.")
@click.option("--k", "k", default=5, show_default=True, type=int,
              help="Report matches of 2..k-1 records and of k or more apart.")
@click.option("--kind", "kinds", multiple=True,
              help="How an external column is read: COLUMN=date|numeric|categorical.")
@click.option("--spec", "spec_path", default=None, type=click.Path(dir_okay=False),
              help="A spec whose hierarchies let released group labels cover their values.")
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="Also write the external table with, per person, the number of matching "
              "records and the values learned (.csv, .parquet or .xlsx).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--delimiter", default=None, help="CSV delimiter of both files (default: sniffed).")
@click.option("--encoding", default="utf-8", show_default=True, help="CSV text encoding.")
def attack_command(release: str, external: str, on: str | None, sensitive: str | None,
                   truth: str | None, k: int, kinds: tuple[str, ...], spec_path: str | None,
                   output: str | None, as_json: bool, delimiter: str | None,
                   encoding: str) -> None:
    """Link the identified EXTERNAL table to RELEASE on quasi-identifiers and report how
    many people match exactly one record (re-identified), 2..k-1 records, k or more, and
    which sensitive values are learned with certainty.

    Exact values are matched to generalized labels: age 34 matches 30-39, ZIP 02138
    matches 021**, a birth date matches its month, year or decade; * matches anything.

    Example: blendin attack release.csv --external voters.csv --on dob,sex,zip
    """
    from blendin.attack import attack
    from blendin.io import Source

    rel = Source(release, delimiter=delimiter, encoding=encoding).read_all()
    ext = Source(external, delimiter=delimiter, encoding=encoding).read_all()
    hierarchies = _hierarchies(spec_path, ext, on) if spec_path else None
    report = attack(rel, ext, on, k=k, sensitive=sensitive, truth=truth,
                    kinds=_kinds(kinds), hierarchies=hierarchies)
    if output is not None:
        from blendin.io import write_table

        extra = report.table()
        table = ext
        for name in extra.column_names:
            if name in table.column_names:
                table = table.drop_columns([name])
            table = table.append_column(name, extra.column(name))
        write_table(table, output)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo("\n".join(report.lines()))


def _kinds(options: tuple[str, ...]) -> dict[str, str]:
    kinds = {}
    for option in options:
        column, sep, kind = option.partition("=")
        if not sep or not column or not kind:
            raise BlendinError(f"--kind {option!r} is not COLUMN=KIND",
                               fix="write e.g. --kind dob=date")
        kinds[column.strip()] = kind.strip()
    return kinds


def _hierarchies(spec_path: str, ext, on: str | None) -> dict:
    """The spec's hierarchies of the join columns, built on the external values."""
    import pyarrow.compute as pc

    from blendin.frequency import as_text
    from blendin.hierarchy.registry import as_builder
    from blendin.spec import Spec

    spec = Spec.from_toml(spec_path)
    wanted = [c.strip() for c in on.split(",")] if on else list(spec.quasi_identifiers)
    out = {}
    for column in wanted:
        if column in spec.quasi_identifiers and column in ext.column_names:
            values = pc.unique(as_text(ext.column(column), spec.missing)).to_numpy(
                zero_copy_only=False)
            out[column] = as_builder(spec.quasi_identifiers[column]).build(values, column)
    return out
