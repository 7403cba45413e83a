"""Where a run writes: the output paths checked before any work, and the files of one run
committed together.

- :func:`check_paths`: no output is an input (the data, the spec, every file the spec reads)
  or another output, every folder exists and takes files, and nothing is replaced without
  ``force``;
- :func:`together`: the files written inside the block (each to a temporary file, see
  :func:`blendin.io.atomic_path`) take their names only when the whole block succeeds, so a
  run that fails on its last output (a full disk, a file-size limit) leaves none of them.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from blendin.errors import BlendinError, preview

#: the file types each kind of output may have
SUFFIXES = {
    "table": (".csv", ".parquet", ".xlsx"),
    "report": (".html", ".htm"),
    "json": (".json",),
    "spec": (".toml",),
    "folder": (),  # of files written one by one into it (plots): any name
}

def check_paths(inputs: Mapping[str, str | None], outputs: Mapping[str, tuple[str | None, str]],
                *, force: bool = False, folders: bool = False) -> None:
    """Refuse, before any work, outputs that would destroy a file or fail after the run.

    ``inputs`` maps the option (or argument) to the path read, ``outputs`` the option to
    ``(path, kind)`` with kind ``table``, ``report``, ``json``, ``spec`` or ``folder`` (one
    files are written into, an existing one too). With ``folders`` a table may be a folder
    (Spark writes one, of part files).

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
        if str(path).endswith(("/", os.sep)) and kind != "folder" and not folders:
            raise BlendinError(f"{flag} {path!r} names a folder (it ends with /)",
                               fix=f"give {flag} a file name")
        if kind != "folder":
            _check_suffix(flag, out, kind)
        for other, source in {**read, **written}.items():
            what = _input_name(other) if other in read else f"the output of {other}"
            if _same_file(out, source):
                raise BlendinError(
                    f"{flag} {path!r} is {what}",
                    fix="write to another file; the input is never changed" if other in read
                    else f"give {flag} and {other} different files")
            if kind == "folder":  # (its files are added to it: nothing else there changes)
                continue
            # a folder written (Spark's part files) replaces the folder and all it holds;
            # one written into a folder read (a dataset's) changes what the folder holds
            if _within(source, out):
                raise BlendinError(f"{flag} {path!r} holds {what}",
                                   fix="write to a folder that holds no input and no other "
                                   "output")
            if _within(out, source):
                raise BlendinError(f"{flag} {path!r} is inside {what}, a folder",
                                   fix="write outside it" + (
                                       ": the input is never changed" if other in read
                                       else ""))
        _check_folder(flag, out, folders and kind == "table" or kind == "folder")
        if kind != "folder":
            _check_existing(flag, out, force)
        if kind == "table" and out.is_dir():
            _check_parts(flag, out)
        written[flag] = out


def _input_name(label: str) -> str:
    """An option or argument as "the input --spec"; a described file as it is described."""
    return label if " " in label else f"the input {label}"


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


def _within(inner: Path, folder: Path) -> bool:
    """Whether ``inner`` lies inside the existing folder ``folder`` (links followed)."""
    if not folder.is_dir():
        return False
    inside, outside = inner.resolve(), folder.resolve()
    return inside != outside and inside.is_relative_to(outside)


def _check_folder(flag: str, out: Path, folder_ok: bool = False) -> None:
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise BlendinError(f"{flag} {str(out)!r}: folder {str(folder)!r} does not exist",
                           fix="create the folder first, or write somewhere else")
    if out.is_dir() and not folder_ok:
        raise BlendinError(f"{flag} {str(out)!r} is a folder",
                           fix=f"give {flag} a file name")
    check_creatable(f"{flag} {str(out)!r}", folder)


def check_creatable(what: str, folder: Path) -> None:
    """Refuse, before any work, a ``folder`` where no file can be created for ``what`` (a
    read-only mount, /proc): trying is the only sure test."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise BlendinError(f"{what}: cannot create files in {str(folder)!r} "
                           f"({error.strerror or error})",
                           fix="write somewhere you may create files") from None


#: what a folder of part files that Spark wrote holds (replaced whole by the next release)
SPARK_PARTS = re.compile(r"part-.*|_SUCCESS|_committed_.*|_started_.*|\..*\.crc")


def _check_parts(flag: str, out: Path) -> None:
    """A folder replaced by a release (Spark's, of part files) holds only an earlier
    release's part files: anything else in it would go too."""
    others = sorted(p.name for p in out.iterdir() if not SPARK_PARTS.fullmatch(p.name))
    if others:
        raise BlendinError(f"{flag} {str(out)!r} is a folder that holds other files than a "
                           f"release's parts: {preview(others)}",
                           fix=f"give {flag} a new name: a release replaces its folder "
                           "whole")


def _check_existing(flag: str, out: Path, force: bool) -> None:
    if not out.exists() and not out.is_symlink():  # (a link to nothing is replaced too)
        return
    if not force:
        raise BlendinError(f"{flag} {str(out)!r} already exists",
                           fix="pass --force to replace it, or write to another file")
    if out.exists() and not out.stat().st_mode & 0o222:  # (os.access says yes to root)
        raise BlendinError(f"{flag} {str(out)!r} is read-only",
                           fix="make it writable first, or write to another file")


# -- committed together ---------------------------------------------------------------------


@dataclass
class _Pending:
    """A finished temporary file waiting for its group: where it lies, what it will be."""

    temp: Path
    target: Path
    commit: Callable[[], None]
    discard: Callable[[], None]


#: the open group's files, in the order written (None: no group is open)
_GROUP: ContextVar[list[_Pending] | None] = ContextVar("blendin_outputs_group", default=None)


@contextmanager
def together() -> Iterator[None]:
    """Files written in the block (through :func:`blendin.io.atomic_path`) take their names
    when the block ends without error, all of them; on any error (SIGINT and SIGTERM
    included) every one is removed and the files they would replace are untouched.

    >>> import pathlib, tempfile
    >>> from blendin.io import write_text
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> try:
    ...     with together():
    ...         _ = write_text(folder / "release.csv", "a\\n1\\n")
    ...         raise OSError("File too large")  # the report fails
    ... except OSError:
    ...     pass
    >>> sorted(p.name for p in folder.iterdir())
    []
    """
    if _GROUP.get() is not None:  # within an open group: the block's files join it
        yield
        return
    group: list[_Pending] = []
    token = _GROUP.set(group)
    try:
        yield
    except BaseException:
        for pending in group:
            pending.discard()
        raise
    finally:
        _GROUP.reset(token)
    committed = 0
    try:
        refuse_when_stopped()
        for pending in group:
            pending.commit()
            committed += 1
    finally:  # a rename that fails (rare) removes the files not yet renamed
        for pending in group[committed:]:
            pending.discard()


@contextmanager
def together_in(*folders: Path) -> Iterator[None]:
    """:func:`together`, into ``folders`` (made where missing): on an error the folders
    it made go too, empty again as no file took its name."""
    made = [folder for folder in dict.fromkeys(folders) if not folder.exists()]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    try:
        with together():
            yield
    except BaseException:
        for folder in made:
            with suppress(OSError):
                folder.rmdir()
        raise


#: set when the process was asked to stop (SIGTERM): no file takes its name after that,
#: though the signal's exception may be lost (raised within a finalizer, say)
_STOPPING = threading.Event()


def request_stop(stop: bool = True) -> None:
    """Say that the process is to stop: outputs not yet named stay unnamed (``False``: a
    new command begins, in a process that goes on, a test's)."""
    if stop:
        _STOPPING.set()
    else:
        _STOPPING.clear()


def stopping() -> bool:
    """Whether the process was asked to stop (:func:`request_stop`)."""
    return _STOPPING.is_set()


def refuse_when_stopped() -> None:
    """Before an output takes its name: raise (as the signal would) when a stop was asked.

    >>> refuse_when_stopped()  # nothing asked: goes on
    """
    if stopping():
        raise SystemExit(143)


def deferred(temp: str | os.PathLike, target: str | os.PathLike,
             commit: Callable[[], None], discard: Callable[[], None]) -> bool:
    """Hand the finished ``temp`` (to become ``target``) to the open :func:`together` group
    (True), or say there is none (False: the caller commits it now)."""
    group = _GROUP.get()
    if group is None:
        return False
    group.append(_Pending(Path(temp), Path(target), commit, discard))
    return True


def pending_location(path: str | os.PathLike) -> Path:
    """Where the file that will be ``path`` lies until its group commits: its temporary
    file, or ``path`` itself (committed, or written outside a group)."""
    wanted = Path(path).resolve()
    for pending in _GROUP.get() or ():
        if pending.target.resolve() == wanted:
            return pending.temp
    return Path(path)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` may still run (this one, another user's, or not a process id
    at all: never a reason to remove what it left).

    >>> process_alive(os.getpid()), process_alive(0)
    (True, True)
    """
    if pid <= 0 or pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
