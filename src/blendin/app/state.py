"""Sessions, loaded tables and background jobs of the app.

Each browser tab gets its own session (its id is in the page's address, not in a cookie, so
two tabs never share one). Every file a session keeps (uploads, sample tables, downloads) is
in a private folder (mode 0700) under the app's own temporary folder, which is removed when
the app stops; the folder names its server's process, so that the next start removes what a
killed server left behind. Nothing here logs values.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from blendin.app.profile import ColumnProfile
from blendin.errors import BlendinError
from blendin.outputs import process_alive

if TYPE_CHECKING:
    from blendin.engines.sql import TableRef


class Cancelled(Exception):
    """Raised from the progress callback to stop a search the user cancelled."""


@dataclass(eq=False)
class Job:
    """Work running in a background thread, with progress and a cancel flag."""

    what: str
    checked: int = 0
    total: int | None = None
    step: str = "preparing"
    started: float = field(default_factory=time.monotonic)
    done: bool = False
    finished: float | None = None
    error: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    def progress(self, checked: int, total: int | None = None) -> None:
        """The ``progress(nodes_checked, total)`` callback of :func:`blendin.anonymize`."""
        if self.cancel.is_set():
            raise Cancelled
        self.checked, self.total, self.step = checked, total, "searching"

    def stop_if_cancelled(self, *_) -> None:
        """A progress callback that only listens for Cancel (keeps the job's own step)."""
        if self.cancel.is_set():
            raise Cancelled

    @property
    def share(self) -> float | None:
        if self.done:
            return 1.0
        return min(self.checked / self.total, 1.0) if self.total else None

    @property
    def seconds(self) -> float:
        return (self.finished or time.monotonic()) - self.started


@dataclass(eq=False)
class Run:
    """One finished anonymization: its spec, result and the figures around it."""

    number: int
    spec: Any
    result: Any
    risk_before: Any = None
    risk_after: Any = None
    attack_before: Any = None
    attack_after: Any = None
    #: the external table the linking attack joined (another may be loaded since)
    external: str | None = None
    tradeoff: list[dict] = field(default_factory=list)
    #: distinct values of each QI in the input, counted where it is (a table in a database:
    #: there, not in the page's sample); None: counted on the loaded table
    distinct_before: dict[str, int] | None = None
    #: what the release keeps of each column (:func:`blendin.report.utility_html.keeps`),
    #: None where it is not measured (a table in a database, Mondrian)
    keeps: dict | None = None
    #: the input's records matched with the release, for the side-by-side table ({}: they
    #: cannot be matched)
    beside: dict | None = None
    #: what the page shows of this run, made once (the plots are costly)
    view: dict | None = None


@dataclass(eq=False)
class Loaded:
    """A table in the session: the file (or the table in a database) the library reads and
    what the page shows of it."""

    label: str
    #: the file the library reads (None for a table in a database)
    path: Path | None
    #: what the page shows and checks: the whole file, or the first rows of a table in a
    #: database (see ``records``)
    table: pa.Table
    columns: list[ColumnProfile]
    #: whether the page offers the input itself for download (sample tables only)
    downloadable: bool = False
    #: how the file is read: the spec's [input] encoding and delimiter, when not the default
    options: dict = field(default_factory=dict)
    #: the table (or query) in a database the library reads, where the rows stay; it holds
    #: the form's password, which nothing shows
    ref: TableRef | None = None
    #: the number of records of a table in a database (``table`` holds its first rows)
    records: int | None = None
    #: each column's distinct values with their records, counted once (the tree editor)
    counted: dict[str, dict[str, int]] = field(default_factory=dict)
    #: the file's size and modification time when it was read (None: a table in a database)
    signature: tuple[int, int] | None = None

    @property
    def rows(self) -> int:
        """The number of records the library reads (not only those the page holds)."""
        return self.table.num_rows if self.records is None else self.records

    @property
    def sampled(self) -> bool:
        """The page holds only the first rows of the table (a table in a database)."""
        return self.rows > self.table.num_rows

    @property
    def stem(self) -> str:
        """The name downloads start with: the file's, the database table's, or "query"."""
        if self.ref is None:
            return Path(self.label).name.split(".")[0]
        return re.sub(r"[^A-Za-z0-9_-]+", "_", self.ref.table or "query").strip("_") or "table"


@dataclass(eq=False)
class Session:
    """What one browser tab has loaded, chosen and run."""

    id: str
    folder: Path
    #: the secret every form of this session's page sends back (see ``server.TOKEN_FIELD``)
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    data: Loaded | None = None
    external: Loaded | None = None
    roles: dict[str, str] = field(default_factory=dict)
    hierarchies: dict[str, dict] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    #: column -> builder -> the hierarchy table of a tree or a file chosen before another
    #: builder was (found again when the builder is chosen back)
    set_aside: dict[str, dict[str, dict]] = field(default_factory=dict)
    models: list[dict] = field(default_factory=list)
    limits: dict[str, Any] = field(default_factory=dict)
    #: what a loaded project holds that the page has no fields for (its [transform]
    #: section, quasi-identifiers protected by a transform, sampling weights and
    #: households): kept as written in every spec the page builds, and named on the page
    carried: dict[str, dict] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)
    #: the runs numbered so far, those of tables loaded before included
    numbered: int = 0
    job: Job | None = None
    message: str | None = None
    error: str | None = None
    #: the section the message or error belongs to (shown there)
    where: str = "load"
    #: what the database form last sent, shown again (the URL without a password, never
    #: the password field)
    database_form: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def file(self, name: str) -> Path:
        """A path in the session's private folder."""
        return self.folder / name

    def hierarchy_file(self, column: str, chosen: dict) -> Path:
        """Where the column's hierarchy file lies (its folder made): named as the column,
        and never as another column's of ``chosen`` (column: its hierarchy's table), so
        that ``age group`` and ``age_group`` keep a file each.

        >>> session = Session("s", Path(tempfile.mkdtemp()))
        >>> first = session.hierarchy_file("age group", {})
        >>> taken = {"age group": {"csv": f"hierarchies/{first.name}"}}
        >>> first.name, session.hierarchy_file("age_group", taken).name
        ('age_group.csv', 'age_group-2.csv')
        """
        folder = self.file("hierarchies")
        folder.mkdir(exist_ok=True, mode=0o700)
        readable = re.sub(r"[^A-Za-z0-9_-]+", "_", column)[:60] or "column"
        taken = {table.get("csv") for other, table in chosen.items()
                 if other != column and isinstance(table, dict)}
        name, n = f"{readable}.csv", 2
        while f"hierarchies/{name}" in taken:
            name, n = f"{readable}-{n}.csv", n + 1
        return folder / name

    def start(self, what: str, work: Callable[[Job], None]) -> Job:
        """Run ``work(job)`` in a daemon thread; errors land in ``job.error`` as one line."""
        job = Job(what)
        self.job = job

        def target() -> None:
            try:
                work(job)
            except Cancelled:
                job.error = "cancelled: nothing was released"
            except BlendinError as error:
                job.error = f"error: {error}"
            except Exception as error:  # noqa: BLE001 (shown in the page, never logged)
                job.error = f"error: {type(error).__name__}: {error}"
            finally:
                job.finished = time.monotonic()
                job.done = True

        threading.Thread(target=target, daemon=True, name=f"blendin-{what}").start()
        return job


class Store:
    """All sessions of one app, and the private temporary folder that holds their files."""

    def __init__(self) -> None:
        self._root: Path | None = None
        self.sessions: dict[str, Session] = {}

    @property
    def root(self) -> Path:
        """The app's private folder, made with the first session (an app that serves no
        page leaves nothing behind), holding the server's process id in ``pid``."""
        if self._root is None:
            root = Path(tempfile.mkdtemp(prefix=PREFIX))
            root.chmod(0o700)
            # written whole or not at all: a half-written id would look like a dead owner
            mark = root / "pid.tmp"
            mark.write_text(f"{os.getpid()} {socket.gethostname()}\n")
            mark.replace(root / "pid")
            self._root = root
        return self._root

    def new(self) -> Session:
        sid = secrets.token_urlsafe(12)
        folder = self.root / sid
        folder.mkdir(mode=0o700)
        session = Session(sid, folder)
        self.sessions[sid] = session
        return session

    def get(self, sid: str) -> Session | None:
        return self.sessions.get(sid)

    def close(self) -> None:
        """Cancel running jobs and remove every file the app kept."""
        for session in self.sessions.values():
            if session.job is not None:
                session.job.cancel.set()
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)


#: the name of every app folder in the temporary folder
PREFIX = "blendin-app-"


def remove_stale_folders(where: str | Path | None = None) -> list[Path]:
    """Remove the app folders in ``where`` (the temporary folder) of servers that are gone,
    e.g. killed with SIGKILL, and return them.

    A folder goes only when it is this user's, its ``pid`` file names a process of this
    machine, and that process no longer exists: a live server's folder, another user's, or
    one without an owner on record is left alone.
    """
    if os.name != "posix":  # os.kill(pid, 0) would end the process elsewhere
        return []
    removed = []
    for folder in Path(where or tempfile.gettempdir()).glob(PREFIX + "*"):
        try:
            info = folder.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                continue
            pid, *host = (folder / "pid").read_text().split()
            if (host and host[0] != socket.gethostname()) or process_alive(int(pid)):
                continue
        except (OSError, ValueError):  # no pid file, or one being written: not provably dead
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed
