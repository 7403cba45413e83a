"""``blendin utility``: what the release still answers, column by column."""

from __future__ import annotations

import json

import click

from blendin.cli import main
from blendin.outputs import check_paths


@main.command("utility")
@click.argument("data", type=click.Path(dir_okay=False, exists=True, path_type=str))
@click.argument("release", type=click.Path(dir_okay=False, exists=True, path_type=str))
@click.option("--spec", "spec_path", required=True, type=click.Path(dir_okay=False),
              help="The spec the release was made with (its quasi-identifiers and "
              "hierarchies).")
@click.option("--target", default=None, metavar="COLUMN",
              help="Train models to predict this column on the input and on the release "
              "(needs pip install \"blendin[utility]\").")
@click.option("--pair", "pairs", multiple=True, metavar="A,B",
              help="Cross two columns: their contingency tables in the input and the "
              "release, and the distance between them (repeatable).")
@click.option("--folds", default=5, show_default=True, type=click.IntRange(min=2),
              help="--target: folds of the cross-validation.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0),
              help="--target: seed of the folds, the sample and the random forest.")
@click.option("--sample", default=50_000, show_default=True, type=click.IntRange(min=10),
              help="--target: records the models train on at most (a random sample).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--csv", "csv_path", default=None, type=click.Path(dir_okay=False),
              help="Also write the per-column view as CSV.")
@click.option("--force", is_flag=True, help="Replace a --csv file that already exists.")
@click.option("--delimiter", default=None,
              help="CSV delimiter of both files (default: the spec's, else sniffed).")
def utility_command(data: str, release: str, spec_path: str, target: str | None,
                    pairs: tuple[str, ...], folds: int,
                    seed: int, sample: int, as_json: bool, csv_path: str | None, force: bool,
                    delimiter: str | None) -> None:
    """How much of DATA the RELEASE (made from it with the spec) keeps: per column, what
    the release shows, the share suppressed and ARX's quality measures (granularity,
    non-uniform entropy, generalization intensity, squared error); per table ambiguity,
    average class size, discernibility, record-level squared error and SSE/SST; summary
    statistics of numeric columns before and after; with --target, classification
    accuracy, Brier score and AUC on the input, on the release and for the zero-rule
    baseline. Every quality is 1 for the input itself and 0 when nothing is left.

    Example: blendin utility adult.csv release.csv --spec s.toml --target salary-class
    """
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.io import write_table
    from blendin.spec import Spec
    from blendin.utility import utility

    check_paths({"DATA": data, "RELEASE": release, "--spec": spec_path},
                {"--csv": (csv_path, "table")}, force=force)
    spec = Spec.from_toml(spec_path)
    report = utility(data, release, spec, target=target, pairs=pairs, folds=folds,
                     seed=seed, sample=sample, delimiter=delimiter)
    if csv_path is not None:
        write_table(report.columns_table(), csv_path)
    click.echo(json.dumps(report.to_dict(), indent=2, default=float) if as_json
               else str(report))
