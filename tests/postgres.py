"""A real, throwaway PostgreSQL server for the tests (never a mock).

``postgres_url`` (session scope) runs ``initdb`` into a temporary folder, starts the server on a
free port of 127.0.0.1 with password authentication (scram-sha-256), creates the database
``blendin`` and yields its URL; at the end of the session it stops the server and removes the
folder, also when tests fail. ``pg_conn`` (function scope) yields an autocommit psycopg
connection to that database and drops every table the test left in schema ``public``.

It needs PostgreSQL 14+ (``initdb``, ``pg_ctl``, ``postgres``: on PATH, else the highest version
under /usr/lib/postgresql/*/bin, where Debian puts them) and psycopg; without them the tests that
use these fixtures are skipped, with the fix in the message. PostgreSQL refuses to run as root:
as root the server runs as the user ``postgres`` (Debian's package makes it), else ``nobody``.
"""

import contextlib
import glob
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

MIN_MAJOR = 14
USER = DATABASE = "blendin"
NOT_INSTALLED = ("PostgreSQL 14+ is not installed: apt-get install postgresql "
                 "(or run .ci/run, which installs it)")
NO_PSYCOPG = "psycopg is not installed: pip install -e '.[test]' (or pip install 'psycopg[binary]')"
TIMEOUT = 60  # seconds for initdb, and for the server to start or stop


def _major(bindir: Path) -> int | None:
    """The major version of the server in ``bindir``: ``postgres (PostgreSQL) 15.8 ...`` -> 15."""
    try:
        out = subprocess.run([str(bindir / "postgres"), "--version"], capture_output=True,
                             text=True, timeout=TIMEOUT, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"\(PostgreSQL\)\s+(\d+)", out)
    return int(match.group(1)) if match else None


def find_bindir() -> Path | None:
    """The folder of PostgreSQL's server programs, version 14 or later, or None.

    ``initdb`` on PATH first (its real folder: Debian's are symbolic links into
    /usr/lib/postgresql/N/bin, and pg_ctl runs the ``postgres`` next to it), then
    /usr/lib/postgresql/*/bin from the highest version down."""
    candidates = []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    debian = glob.glob("/usr/lib/postgresql/*/bin")
    debian.sort(key=lambda d: [int(p) for p in re.findall(r"\d+", Path(d).parent.name)],
                reverse=True)
    candidates += [Path(d) for d in debian]
    for bindir in candidates:
        if all(os.access(bindir / name, os.X_OK) for name in ("initdb", "pg_ctl", "postgres")):
            major = _major(bindir)
            if major is not None and major >= MIN_MAJOR:
                return bindir
    return None


def _server_user() -> str | None:
    """Whom to run the server as: None (ourselves) unless we are root, which PostgreSQL refuses."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            pass
    raise RuntimeError("running as root, and neither the user postgres nor nobody exists "
                       "to run PostgreSQL as")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(args: list[str], user: str | None, cwd: Path) -> subprocess.CompletedProcess:
    """Run a PostgreSQL program, as ``user`` when given (we are root), without PG* variables
    from the caller's environment (PGDATA, PGPORT, PGHOST... would redirect it)."""
    if user is not None:
        args = ["runuser", "-u", user, "--", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    # cwd: the folder the server's user can reach (it may not enter the caller's)
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=TIMEOUT + 30, check=False)  # pg_ctl -t TIMEOUT ends first


def _fail(what: str, proc: subprocess.CompletedProcess, log: Path | None = None) -> None:
    message = f"{what} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    if log is not None and log.exists():
        message += "\nserver log:\n" + log.read_text(errors="replace")[-4000:]
    raise RuntimeError(message)


@contextlib.contextmanager
def throwaway_server(settings: Mapping[str, str] | None = None) -> Iterator[str]:
    """Yield the URL of a database ``blendin`` on a PostgreSQL server of our own, started
    with these ``settings`` (``-c name=value``): ``postgresql://blendin:PASSWORD@127.0.0.1:
    PORT/blendin``, a superuser. Stopped and removed at the end, also after an error. The
    benchmarks start theirs with this too (benchmarks/bench_sql.py)."""
    import psycopg

    bindir = find_bindir()
    if bindir is None:
        raise RuntimeError(NOT_INSTALLED)
    user = _server_user()
    # as root, under /tmp (the server's user may not reach $TMPDIR or root's home); the socket
    # goes here too, and a Unix socket's path must stay under about 100 bytes
    base = Path(tempfile.mkdtemp(prefix="blendin-pg-", dir="/tmp" if user else None))
    data, log, pwfile = base / "data", base / "log", base / "pwfile"
    password = secrets.token_urlsafe(18)  # URL-safe: it goes into the URL as it is
    started = False
    try:
        pwfile.write_text(password + "\n")
        if user is not None:
            entry = pwd.getpwnam(user)
            os.chown(base, entry.pw_uid, entry.pw_gid)
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        # --no-sync and fsync=off: a throwaway server need not survive a crash of the machine
        proc = _run([str(bindir / "initdb"), "-D", str(data), "-U", USER, f"--pwfile={pwfile}",
                     "--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"], user, base)
        if proc.returncode != 0:
            _fail("initdb", proc)
        pwfile.unlink()
        extra = "".join(f" -c {name}={value}"
                        for name, value in {"fsync": "off", **(settings or {})}.items())
        for _attempt in range(3):  # the free port may be taken before the server binds it
            port = _free_port()
            log.unlink(missing_ok=True)  # pg_ctl appends: read only this attempt's messages
            options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1{extra}"
            proc = _run([str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-w",
                         "-t", str(TIMEOUT), "-l", str(log), "start"], user, base)
            started = proc.returncode == 0
            said = log.read_text(errors="replace") if log.exists() else ""
            if started or "already in use" not in said:
                break
        if not started:
            _fail("pg_ctl start", proc, log)
        admin = f"postgresql://{USER}:{password}@127.0.0.1:{port}/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        yield f"postgresql://{USER}:{password}@127.0.0.1:{port}/{DATABASE}"
    finally:
        # stop it also after a failed or timed-out start: pg_ctl finds it by postmaster.pid
        if started or (data / "postmaster.pid").exists():
            _run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                  "-t", str(TIMEOUT), "stop"], user, base)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url():
    """The URL of a database ``blendin`` on a PostgreSQL server of this session's own:
    ``postgresql://blendin:PASSWORD@127.0.0.1:PORT/blendin``; its user is a superuser."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip(NO_PSYCOPG)
    if find_bindir() is None:
        pytest.skip(NOT_INSTALLED)
    with throwaway_server() as url:
        yield url


def _drop_public_tables(url: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
        for (name,) in tables:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(
                sql.Identifier("public", name)))


@pytest.fixture
def pg_conn(postgres_url):
    """An autocommit psycopg connection to the session's database; at the end every table in
    schema ``public`` is dropped (with what depends on it), so each test starts from none."""
    import psycopg

    conn = psycopg.connect(postgres_url, autocommit=True)
    try:
        yield conn
    finally:
        # closed first, so that a transaction the test left open holds no locks; the tables
        # are dropped on a fresh connection, whatever state the test left this one in
        conn.close()
        _drop_public_tables(postgres_url)

