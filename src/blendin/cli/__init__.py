"""The ``blendin`` command: a thin shell over the library, one module per command."""

from __future__ import annotations

import signal
import sys

import click

from blendin.errors import BlendinError
from blendin.outputs import refuse_when_stopped, request_stop, stopping


class _Group(click.Group):
    """Turns BlendinError into a one-line message and exit code 2 (traceback with --debug)."""

    def invoke(self, ctx: click.Context):
        previous = signal.signal(signal.SIGTERM, _stop)
        request_stop(False)  # (a stop asked of an earlier command in this process)
        try:
            done = super().invoke(ctx)
            refuse_when_stopped()  # (stopped, and the signal's exception was lost)
            return done
        except KeyboardInterrupt:
            # Ctrl-C: 130 as a shell reports it (click's own "Aborted!" exits 1, which
            # blendin check means "a model is violated"); temporary files are gone by now
            click.echo("interrupted", err=True)
            sys.exit(130)
        except Exception as error:
            # SIGTERM, and what it broke on the way out (an import half done, a driver's
            # statement cut short): stopped, as asked, not an error to show
            if stopping():
                sys.exit(143)
            if not isinstance(error, BlendinError | OSError) or (
                    ctx.obj and ctx.obj.get("debug")):
                raise
            if isinstance(error, OSError):  # a full disk, a file gone: not a bug, one line
                where = f" ({error.filename})" if error.filename else ""
                error = f"{error.strerror or error}{where}; fix: check the files and the disk"
            click.echo(f"error: {error}", err=True)
            sys.exit(2)
        finally:
            signal.signal(signal.SIGTERM, previous)
            request_stop(False)  # (the process may go on: a test's, a notebook's)


def with_options(options: list):
    """A decorator that adds the click ``options`` to a command, in their order."""

    def add(command):
        for option in reversed(options):
            command = option(command)
        return command

    return add


def read_options(delimiter: str | None, encoding: str | None
                 ) -> tuple[str | None, str | None]:
    """``--delimiter`` (tab as ``\\t`` or ``tab`` too) and ``--encoding``, checked as typed."""
    import codecs

    from blendin.io import delimiter_option

    if encoding is not None:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise BlendinError(f"--encoding {encoding!r} is not a known encoding",
                               fix="pass e.g. --encoding utf-8 or --encoding latin-1") from None
    return delimiter_option(delimiter), encoding


#: the option that names related tables, one a time (anonymize, check)
INPUT_HELP = ("Related tables instead of DATA, one a time (--input patients=p.csv --input "
              "visits=v.csv), as the spec's [tables] name them.")


def related_inputs(data: str | None, inputs: tuple[str, ...]) -> dict[str, str]:
    """``--input NAME=FILE`` options as {name: path}; refused beside DATA, or malformed."""
    from pathlib import Path

    if data is not None:
        raise BlendinError("give DATA or --input NAME=FILE (related tables), not both",
                           fix="leave out DATA, or the --input options")
    if not inputs:
        raise BlendinError("no data given",
                           fix="give DATA (a file), or --input NAME=FILE for each related "
                               "table")
    tables: dict[str, str] = {}
    for item in inputs:
        name, sep, path = item.partition("=")
        name = name.strip()
        if not sep or not name or not path:
            raise BlendinError(f"--input {item!r} is not NAME=FILE",
                               fix="pass e.g. --input patients=patients.csv")
        if name in tables:
            raise BlendinError(f"--input names table {name!r} twice",
                               fix="give each table once")
        if not Path(path).is_file():
            raise BlendinError(f"--input {item!r}: no file {path!r}", fix="check the path")
        tables[name] = path
    return tables


def refuse_without(*rules: tuple[str, str, bool, str]) -> None:
    """Each rule ``(parameter, flag, works, needed)``: ``flag``, typed on the command line,
    changes nothing unless ``works`` (``needed`` is given): refused, naming both."""
    ctx = click.get_current_context()
    for name, flag, works, needed in rules:
        if not works and ctx.get_parameter_source(name) not in (
                None, click.core.ParameterSource.DEFAULT):
            raise BlendinError(f"{flag} has no effect without {needed}",
                               fix=f"add {needed}, or leave out {flag}")


def refuse_text_options(delimiter: str | None, encoding: str | None, files, *,
                        writes_csv: bool = False) -> None:
    """--delimiter and --encoding read CSV files: refused where every file given (None: not
    given) is Parquet or a database, which they do not change (--delimiter is also a CSV
    release's delimiter: ``writes_csv``)."""
    from blendin.engines.databases import hidden, is_database
    from blendin.io import file_kind

    given = [f for f in files if f is not None]
    if not given or any(not is_database(f) and file_kind(f) == "csv" for f in given):
        return
    for flag, value, kept in (("--delimiter", delimiter, writes_csv),
                              ("--encoding", encoding, False)):
        if value is not None and not kept:
            database = is_database(given[0])
            raise BlendinError(f"{flag} reads a CSV file, and "
                               f"{hidden(given[0]) if database else given[0]!r} is "
                               + ("a database" if database else "Parquet"),
                               fix=f"leave out {flag}")


def _stop(signum: int, frame) -> None:
    """SIGTERM ends a run as SIGINT does, by an exception: temporary files are removed;
    and no output takes its name after it, should the exception be lost (raised within
    a finalizer, Python only prints it)."""
    request_stop()
    raise SystemExit(128 + signum)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show the full traceback of errors.")
@click.option("--threads", type=click.IntRange(min=1), default=None, metavar="N",
              help="Use at most N threads (default: every core; or BLENDIN_THREADS).")
@click.version_option(package_name="blendin")
@click.pass_context
def main(ctx: click.Context, debug: bool, threads: int | None) -> None:
    """blendin: release tabular data safely (k-anonymity, l-diversity, t-closeness).

    Example: blendin demo

    Example: blendin --threads 4 anonymize data.csv --spec release.toml -o release.csv
    """
    ctx.obj = {"debug": debug}
    from blendin.parallel import set_threads, workers

    if threads is not None:
        set_threads(threads)
    else:
        workers()  # BLENDIN_THREADS, when set, is checked and applied before any work


def _register() -> None:
    """Import the command modules: each adds its commands to ``main``."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


_register()
