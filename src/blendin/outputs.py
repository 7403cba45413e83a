"""Output paths checked before any work: no output is an input or another output, every
folder exists and takes files, and nothing is replaced without ``--force``.

Used by every command that writes; it lives here (a module without commands) so each
command checks its paths the same way, in one call, first.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import click

from blendin.errors import BlendinError

#: the file types each kind of output may have
SUFFIXES = {
    "table": (".csv", ".parquet", ".xlsx"),
    "report": (".html", ".htm"),
    "json": (".json",),
    "spec": (".toml",),
}

FORCE_OPTION = click.option(
    "--force", is_flag=True,
    help="Replace output files that already exist (never an input file).")


def check_paths(inputs: Mapping[str, str | None], outputs: Mapping[str, tuple[str | None, str]],
                *, force: bool = False, folders: bool = False) -> None:
    """Refuse, before any work, outputs that would destroy a file or fail after the run.

    ``inputs`` maps the option (or argument) to the path read, ``outputs`` the option to
    ``(path, kind)`` with kind ``table``, ``report`` or ``json``. With ``folders`` a table
    may be a folder (Spark writes one, of part files).

    >>> try:
    ...     check_paths({"DATA": "in.csv"}, {"--report": ("in.csv", "report")})
    ... except BlendinError as error:
    ...     print(error.problem)
    cannot write 'in.csv' (--report): unknown file type '.csv'
    """
    read = {flag: Path(p) for flag, p in inputs.items() if p}
    written: dict[str, Path] = {}
    for flag, (path, kind) in outputs.items():
        if not path:
            continue
        out = Path(path)
        _check_suffix(flag, out, kind)
        for other, source in {**read, **written}.items():
            if _same_file(out, source):
                what = f"the input {other}" if other in read else f"the output of {other}"
                raise BlendinError(
                    f"{flag} {path!r} is {what}",
                    fix="write to another file; the input is never changed" if other in read
                    else f"give {flag} and {other} different files")
        _check_folder(flag, out, folders and kind == "table")
        _check_existing(flag, out, force)
        written[flag] = out


def _check_suffix(flag: str, out: Path, kind: str) -> None:
    allowed = SUFFIXES[kind]
    if out.suffix.lower() not in allowed:
        raise BlendinError(f"cannot write {str(out)!r} ({flag}): unknown file type "
                           f"{out.suffix or '(none)'!r}",
                           fix=f"end the {flag} name with {' or '.join(allowed)}")


def _same_file(a: Path, b: Path) -> bool:
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return a.resolve() == b.resolve()


def _check_folder(flag: str, out: Path, folder_ok: bool = False) -> None:
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise BlendinError(f"{flag} {str(out)!r}: folder {str(folder)!r} does not exist",
                           fix="create the folder first, or write somewhere else")
    if out.is_dir() and not folder_ok:
        raise BlendinError(f"{flag} {str(out)!r} is a folder",
                           fix=f"give {flag} a file name")
    try:  # the only sure test that a file can be created there (read-only mounts, /proc)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise BlendinError(f"{flag} {str(out)!r}: cannot create files in {str(folder)!r} "
                           f"({error.strerror or error})",
                           fix="write somewhere you may create files") from None


def _check_existing(flag: str, out: Path, force: bool) -> None:
    if not out.exists():
        return
    if not force:
        raise BlendinError(f"{flag} {str(out)!r} already exists",
                           fix="pass --force to replace it, or write to another file")
    if not out.stat().st_mode & 0o222:  # (os.access says yes to root)
        raise BlendinError(f"{flag} {str(out)!r} is read-only",
                           fix="make it writable first, or write to another file")
