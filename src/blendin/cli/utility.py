"""``blendin utility``: what the release still answers, column by column."""

from __future__ import annotations

import json
from pathlib import Path

import click

from blendin.cli import main, refuse_without
from blendin.errors import BlendinError, preview
from blendin.outputs import check_paths


@main.command("utility")
@click.argument("data", type=click.Path(dir_okay=False, exists=True, path_type=str))
@click.argument("release", type=click.Path(dir_okay=False, exists=True, path_type=str))
@click.option("--spec", "spec_path", required=True, type=click.Path(),
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
@click.option("--report", "report_path", default=None, type=click.Path(dir_okay=False),
              help="Also write the report as one HTML file, plots included.")
@click.option("--plots", "plots_dir", default=None, type=click.Path(file_okay=False),
              help="Also write every plot as PNG into this folder (made if absent): one "
              "distribution per quasi-identifier and sensitive column, the accuracy with "
              "--target.")
@click.option("--model", "models", multiple=True, metavar="NAME",
              type=click.Choice(["logistic-regression", "naive-bayes", "random-forest"]),
              help="--target: train only this model (repeatable; default: all three).")
@click.option("--force", is_flag=True,
              help="Replace --csv, --report and --plots files that already exist.")
@click.option("--delimiter", default=None,
              help="CSV delimiter of both files (default: the spec's, else sniffed).")
def utility_command(data: str, release: str, spec_path: str, target: str | None,
                    pairs: tuple[str, ...], folds: int,
                    seed: int, sample: int, as_json: bool, csv_path: str | None,
                    report_path: str | None, plots_dir: str | None, models: tuple[str, ...],
                    force: bool, delimiter: str | None) -> None:
    """How much of DATA the RELEASE (made from it with the spec) keeps: per column, what
    the release shows, the share suppressed and ARX's quality measures (granularity,
    non-uniform entropy, generalization intensity, squared error); per table ambiguity,
    average class size, discernibility, record-level squared error and SSE/SST; summary
    statistics of numeric columns before and after; with --target, classification
    accuracy, Brier score and AUC on the input, on the release and for the zero-rule
    baseline. Every quality is 1 for the input itself and 0 when nothing is left.
    --report writes all of it as HTML with the distribution of every quasi-identifier
    and sensitive column before and after; --plots the plots as PNG.

    Example: blendin utility adult.csv release.csv --spec s.toml --target salary-class
    --report utility.html
    """
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.io import write_table
    from blendin.outputs import together
    from blendin.spec import Spec
    from blendin.utility import MODELS, utility

    refuse_without(*((name, flag, target is not None, "--target") for name, flag in (
        ("models", "--model"), ("folds", "--folds"), ("seed", "--seed"),
        ("sample", "--sample"))), ("force", "--force", any(
            p is not None for p in (csv_path, report_path, plots_dir)),
            "--csv, --report or --plots"))
    spec = Spec.from_toml(spec_path)
    check_paths({"DATA": data, "RELEASE": release, "--spec": spec_path, **spec.files_read()},
                {"--csv": (csv_path, "table"), "--report": (report_path, "report"),
                 "--plots": (plots_dir, "folder")}, force=force)
    if plots_dir is not None:
        _check_plots(plots_dir, force)
    chosen = [m.replace("-", " ") for m in models] or list(MODELS)
    report = utility(data, release, spec, target=target, pairs=pairs, folds=folds,
                     seed=seed, sample=sample, models=chosen, delimiter=delimiter)
    with together():  # the files take their names together, or none does
        if csv_path is not None:
            write_table(report.columns_table(), csv_path)
        if report_path is not None or plots_dir is not None:
            from blendin.report.utility_html import write_plots, write_utility_report

            if report_path is not None:
                write_utility_report(report, report_path, data=data, release=release)
            if plots_dir is not None:
                Path(plots_dir).mkdir(exist_ok=True)
                write_plots(report, plots_dir)
    click.echo(json.dumps(report.to_dict(), indent=2, default=float) if as_json
               else str(report))


def _check_plots(folder: str, force: bool) -> None:
    """Refuse, before any work, a --plots folder whose PNG files exist (without --force)."""
    where = Path(folder)
    if where.exists() and not where.is_dir():
        raise BlendinError(f"--plots {folder!r} is a file", fix="give --plots a folder")
    if not where.parent.is_dir():
        raise BlendinError(f"--plots {folder!r}: folder {str(where.parent)!r} does not exist",
                           fix="create it first, or write the plots somewhere else")
    if where.is_dir() and not force:
        taken = sorted(p.name for p in where.glob("*.png")
                       if p.name.startswith("distribution-") or p.name == "classification.png")
        if taken:
            raise BlendinError(f"--plots {folder!r} already holds plots ({preview(taken)})",
                               fix="pass --force to replace them, or give another folder")
