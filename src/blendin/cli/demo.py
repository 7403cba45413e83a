"""``blendin demo``: the linking attack, and the release that defeats it, in a minute."""

from __future__ import annotations

import click

from blendin.cli import main, refuse_without
from blendin.errors import BlendinError
from blendin.outputs import check_creatable, check_paths


@main.command("demo")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0),
              help="Seed of the generated tables (same seed, same tables).")
@click.option("--patients", default=2000, show_default=True, type=click.IntRange(min=1),
              help="Patients in the hospital table.")
@click.option("--voters", default=6000, show_default=True, type=click.IntRange(min=1),
              help="People on the voter list (every patient is one).")
@click.option("-o", "--out", default=None, type=click.Path(file_okay=False),
              help="Write the tables, the spec and the release to this folder.")
@click.option("--force", is_flag=True, help="Replace the files of an earlier demo in --out.")
def demo_command(seed: int, patients: int, voters: int, out: str | None, force: bool) -> None:
    """Show Sweeney's linking attack on a generated hospital table, anonymize the table,
    and show the attack fail: a before/after table of risk and utility.

    With --out DIR the generated tables (hospital.csv, deidentified.csv, voters.csv), the
    spec (spec.toml) and the release (release.csv) are written so every step can be
    repeated with the other commands (see docs/demo.md).

    Example: blendin demo --out demo/
    """
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.demo import DEMO_FILES, run_demo

    refuse_without(("force", "--force", out is not None, "--out"))
    if out is not None:
        _check_out(out, DEMO_FILES, force)
    demo = run_demo(seed, patients, voters, out=out, echo=lambda s: click.echo(f"- {s}"))
    click.echo("")
    click.echo("\n".join(demo.table()))
    click.echo(f"\n({demo.seconds:.1f} s)")


def _check_out(out: str, names, force: bool) -> None:
    """The demo's files in --out: not replaced without --force, checked before any work."""
    from pathlib import Path

    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise BlendinError(f"--out {out!r} is a file", fix="give a folder for --out")
    if folder.is_dir():
        kinds = {".csv": "table", ".html": "report", ".toml": "spec"}
        check_paths({}, {f"--out {name}": (str(folder / name), kinds[Path(name).suffix])
                         for name in names}, force=force)
        return
    # a new folder is made by the demo itself, in the nearest folder that exists
    where = next(p for p in folder.absolute().parents if p.exists())
    if not where.is_dir():
        raise BlendinError(f"--out {out!r}: {str(where)!r} is a file",
                           fix="give --out a folder (a new one is made)")
    check_creatable(f"--out {out!r}", where)
