"""``blendin attack``: the linking attack of an identified table on a release."""

from __future__ import annotations

import json

import click

from blendin.cli import main, refuse_without
from blendin.errors import BlendinError
from blendin.outputs import check_paths


@main.command("attack")
@click.argument("release", type=click.Path(dir_okay=False, path_type=str))
@click.option("--external", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The identified table (e.g. a voter list) to link to the release.")
@click.option("--on", "on", default=None,
              help="Join columns, comma-separated (default: the spec's quasi-identifiers, "
              "else the columns both tables have that the release does not blank out).")
@click.option("--sensitive", default=None,
              help="Release columns the attacker wants to learn (default: the spec's "
              "sensitive attributes, else the release columns the external table does not "
              "have, less blanked (*) columns and class numbers).")
@click.option("--truth", default=None,
              help="A column in both tables naming the person, to count correct matches.")
@click.option("--k", "k", default=5, show_default=True, type=int,
              help="Report matches of 2..k-1 records and of k or more apart.")
@click.option("--kind", "kinds", multiple=True,
              help="How an external column is read: COLUMN=date|numeric|categorical.")
@click.option("--spec", "spec_path", default=None, type=click.Path(),
              help="The release's spec: join on its QIs, read values as it does (dates "
              "format), let its trees' group labels cover their values.")
@click.option("--normalize", default="",
              help="Fix values before the join, comma-separated: case (f reads as F), space "
              "(' F ' reads as F), unicode (composed and decomposed accents, José, read alike, "
              "in both tables), zip-width (2138 reads as 02138).")
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="Also write the external table with, per person, the number of matching "
              "records and the values learned (.csv, .parquet or .xlsx).")
@click.option("--escape-formulas", is_flag=True,
              help="CSV output: prefix ' to values starting with = + - @, tab or CR (.xlsx "
              "always stores text).")
@click.option("--force", is_flag=True, help="Replace an -o file that already exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--delimiter", default=None, help="CSV delimiter of both files (default: sniffed).")
@click.option("--encoding", default="utf-8", show_default=True, help="CSV text encoding.")
@click.option("--person", default=None, metavar="COLUMN",
              help="The release's column telling whose each record is (a person key, or "
              "the person number of related tables): count people, not records.")
def attack_command(release: str, external: str, on: str | None, sensitive: str | None,
                   truth: str | None, k: int, kinds: tuple[str, ...], spec_path: str | None,
                   normalize: str, output: str | None, escape_formulas: bool, force: bool,
                   as_json: bool, delimiter: str | None, encoding: str,
                   person: str | None) -> None:
    """Link the identified EXTERNAL table to RELEASE on quasi-identifiers and report how
    many people match exactly one record (re-identified), 2..k-1 records, k or more, and
    which sensitive values are learned with certainty.

    Exact values are matched to generalized labels: age 34 matches 30-39, ZIP 02138
    matches 021**, a birth date (YYYY-MM-DD or YYYYMMDD) matches its month, year or decade;
    * matches anything. A join column that can match nothing is an error. A warning names
    each join column whose values are written unlike the release's, even in a part of the
    rows (case, spaces, Unicode forms, lost leading zeros; format when most people match
    nothing), and the --normalize that fixes it.

    With --person the release's records are counted by person: a patient with five
    visits is one match.

    Example: blendin attack release.csv --external voters.csv --on dob,sex,zip
    """
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.attack import attack
    from blendin.io import Source

    csv = output is not None and output.lower().endswith((".csv", ".csv.gz"))
    refuse_without(("escape_formulas", "--escape-formulas", csv, "a CSV -o (FILE.csv)"),
                   ("force", "--force", output is not None, "-o"))
    spec = None
    if spec_path:
        from blendin.spec import Spec

        spec = Spec.from_toml(spec_path)
    check_paths({"RELEASE": release, "--external": external, "--spec": spec_path,
                 **(spec.files_read() if spec else {})}, {"-o": (output, "table")}, force=force)
    rel = Source(release, delimiter=delimiter, encoding=encoding).read_all()
    ext = Source(external, delimiter=delimiter, encoding=encoding).read_all()
    report = attack(rel, ext, on, k=k, sensitive=sensitive, truth=truth,
                    kinds=_kinds(kinds), spec=spec, normalize=normalize, person=person)
    if output is not None:
        from blendin.io import write_table

        extra = report.table()
        table = ext
        for name in extra.column_names:
            if name in table.column_names:
                table = table.drop_columns([name])
            table = table.append_column(name, extra.column(name))
        write_table(table, output, escape_formulas=escape_formulas)
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
