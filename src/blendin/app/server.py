"""The ASGI application: routes, the upload limit, and the page rendered on the server.

Every step is a plain HTML form (works without scripts); the vendored htmx script adds the
live hierarchy preview, the progress bar and Cancel without reloading the page. Handlers that
read or compute run in a worker thread, so one session's work never blocks another's page.

The app answers only to loopback host names (and to the address it was explicitly bound to),
so that a page elsewhere cannot reach it through DNS rebinding; every form that changes a
session carries the session's token, which only its page knows.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import re
import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterable
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from blendin.app import projects, trees, workflow
from blendin.app.profile import ROLES
from blendin.app.state import Session, Store, remove_stale_folders
from blendin.app.views import beside, context, tree_anchor
from blendin.errors import BlendinError
from blendin.summaries import percent

HERE = Path(__file__).parent
#: files a project upload may hold (a spec and its hierarchy files)
PROJECT_FILES = 64
#: default upload limit: 1 GiB (``blendin app --max-upload``)
DEFAULT_UPLOAD_LIMIT = 1 << 30
SECTIONS = ("load", "classify", "hierarchies", "models", "run", "results")
NO_STORE = {"Cache-Control": "no-store"}
UPLOAD_PATHS = re.compile(r"^/s/[^/]+/(load/upload|load/project|hierarchy/.+/file)$")
#: host names that always mean this machine (a DNS-rebinding page cannot use them)
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
#: addresses that bind every interface: then any IP address of the machine names the app
WILDCARDS = frozenset({"", "0.0.0.0", "::"})
#: the form field and the header that carry the session's token
TOKEN_FIELD, TOKEN_HEADER = "token", "x-blendin-token"
HOST_HEADER = re.compile(r"\[([0-9a-f:.]+)\](?::\d+)?|([^:\[\]/@\s]+)(?::\d+)?")


def human_bytes(n: float) -> str:
    """A size for people.

    >>> human_bytes(2 * 1024 ** 3), human_bytes(100 * 1024 ** 2)
    ('2.0 GB', '100.0 MB')
    """
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "bytes" else f"{int(n)} bytes"
        n /= 1024
    return f"{n:.1f} GB"


def parse_size(text: str) -> int:
    """``"100MB"`` -> bytes (KB, MB, GB are powers of 1024).

    >>> parse_size("2GB"), parse_size("512"), parse_size("1.5 mb")
    (2147483648, 512, 1572864)
    """
    match = re.fullmatch(r"\s*([\d.]+)\s*([kmg]?b?)\s*", str(text).lower())
    if not match:
        raise BlendinError(f"upload limit {text!r} is not a size",
                           fix="pass e.g. --max-upload 500MB or --max-upload 2GB")
    scale = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
             "g": 1 << 30, "gb": 1 << 30}[match.group(2)]
    return int(float(match.group(1)) * scale)


def host_allowed(header: str, hosts: frozenset[str] = frozenset()) -> bool:
    """Whether a ``Host`` header names this app: a loopback name or address, one of
    ``hosts`` (those the server was bound to), or, bound to every address, any IP address
    (an address, unlike a name, cannot be rebound to this machine by someone else's DNS).

    >>> host_allowed("127.0.0.1:8000"), host_allowed("[::1]"), host_allowed("evil.example")
    (True, True, False)
    >>> host_allowed("192.0.2.7:80", frozenset({"0.0.0.0"})), host_allowed("192.0.2.7:80")
    (True, False)
    """
    match = HOST_HEADER.fullmatch(header.strip().lower())
    if not match:
        return False
    name = (match.group(1) or match.group(2)).rstrip(".")
    if name in LOOPBACK or name in hosts:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    return address.is_loopback or bool(hosts & WILDCARDS)


def _host_names(hosts: Iterable[str]) -> frozenset[str]:
    """The names the app answers to beside loopback: those it was bound to, and the
    machine's own name when bound to every address."""
    names = {h.strip().strip("[]").lower().rstrip(".") for h in hosts}
    if names & WILDCARDS:
        names.add(socket.gethostname().lower())
    return frozenset(names)


class Gate:
    """In front of the app: answer only requests for this machine's host names (400 for
    others), refuse uploads above ``limit`` bytes before reading them (by Content-Length),
    and stop any that exceeds it while streaming. Unexpected errors become a page naming
    only the error's type: a traceback may quote values, and nothing with values is logged
    (``blendin --debug app`` shows them)."""

    def __init__(self, app, limit: int, debug: bool = False,
                 hosts: frozenset[str] = frozenset(), key: str | None = None) -> None:
        self.app, self.limit, self.debug, self.hosts = app, limit, debug, hosts
        self.key = key
        self.state = app.state

    async def __call__(self, scope, receive, send) -> None:
        started = False

        async def watched_send(message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._limited(scope, receive, watched_send)
        except Exception as error:
            if self.debug or scope["type"] != "http":
                raise
            if not started:  # else the page below was sent already; nothing to log
                await failure_page(None, error)(scope, receive, send)

    async def _limited(self, scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket"):
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if not host_allowed(host, self.hosts):
                if scope["type"] == "websocket":  # none is served; refused all the same
                    await send({"type": "websocket.close", "code": 1008})
                else:
                    await wrong_host(host)(scope, receive, send)
                return
        if scope["type"] == "http" and self.key is not None and not await self._keyed(
                scope, receive, send):
            return
        if scope["type"] != "http" or not UPLOAD_PATHS.match(scope["path"]):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        length = int(headers.get(b"content-length", b"0") or 0)
        if length > self.limit:
            await self._refuse(scope, receive, send, length)
            return
        seen = 0

        async def counted():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise TooLarge(seen)
            return message

        try:
            await self.app(scope, counted, send)
        except TooLarge:  # with --debug; else the app's own handler has answered
            await self._refuse(scope, receive, send, None)

    async def _keyed(self, scope, receive, send) -> bool:
        """Whether the request comes from a browser that holds the key (its cookie). The
        address with the key (``?key=``) gets the cookie and is sent on without it;
        any other request is refused (403), before it reaches the app."""
        name = f"blendin-key-{(scope.get('server') or ('', 0))[1]}"  # (a port's own)
        key = self.key.encode()
        cookies = SimpleCookie(dict(scope["headers"]).get(b"cookie", b"").decode("latin-1"))
        if name in cookies and secrets.compare_digest(cookies[name].value.encode(), key):
            return True
        given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("key", [""])
        if secrets.compare_digest(given[0].encode(), key):
            await RedirectResponse(scope["path"], status_code=303, headers={
                "Set-Cookie": f"{name}={self.key}; HttpOnly; SameSite=Strict; Path=/",
                **NO_STORE})(scope, receive, send)
        else:
            await keyless()(scope, receive, send)
        return False

    async def _refuse(self, scope, receive, send, size: int | None) -> None:
        await too_large(self.limit, size)(scope, receive, send)


def too_large(limit: int, size: int | None = None) -> HTMLResponse:
    """The refusal of an upload above ``limit`` bytes; ``size`` is unknown for a chunked
    upload, refused as soon as what arrived passes the limit."""
    what = "the upload is " + (f"{human_bytes(size)}, above" if size is not None else "above")
    text = (f"error: {what} the limit of {human_bytes(limit)}. Fix: give the file's path on "
            "the command line (blendin app FILE), or raise the limit with blendin app "
            "--max-upload 4GB")
    # the rest of the body is not read: the connection cannot serve another request
    return HTMLResponse(_error_page(text), status_code=413, headers={"Connection": "close"})


def keyless() -> PlainTextResponse:
    """The answer to a request without the app's key: short and without data."""
    text = ("error: this page opens with the address blendin app printed, which holds a key "
            "(http://127.0.0.1:PORT/?key=...). Fix: open that address; the key keeps other "
            "users of this machine out")
    return PlainTextResponse(text, status_code=403, headers=NO_STORE)


def wrong_host(host: str) -> PlainTextResponse:
    """The answer to a request for another host name: short and without data."""
    text = (f"error: blendin app does not answer to the host name {host[:80]!r}. Fix: open "
            "the address blendin app printed (http://127.0.0.1:PORT/), or start it with "
            "--host NAME to serve it under NAME\n")
    return PlainTextResponse(text, status_code=400, headers={"Connection": "close"})


def forbidden() -> HTMLResponse:
    """The answer to a form without its session's token (sent from another page)."""
    text = ("error: this form does not carry the token of its page, so it was not sent by "
            "this app's page. Fix: reload the page and send the form again")
    return HTMLResponse(_error_page(text), status_code=403)


def upload_name(filename: str) -> str | None:
    """The name an upload is kept under: the last part of the name the browser sent, or
    None when that cannot name a file.

    >>> upload_name("C:\\\\data\\\\visits.csv"), upload_name("../t.csv"), upload_name("a/..")
    ('visits.csv', 't.csv', None)
    """
    name = re.split(r"[/\\]", filename)[-1]
    if name in ("", ".", "..") or re.search(r"[\x00-\x1f\x7f]", name) \
            or len(name.encode("utf-8", "replace")) > 255:
        return None
    return name


def failure_page(request, error: Exception) -> HTMLResponse:
    """The page of an unexpected error: its type only (its message may quote values)."""
    text = (f"error: the app failed ({type(error).__name__}); the details are not logged as "
            "they may contain data. Fix: run blendin --debug app to see them")
    return HTMLResponse(_error_page(text), status_code=500)


class TooLarge(Exception):
    pass


def _error_page(text: str) -> str:
    from markupsafe import escape

    return (f"<!doctype html><meta charset=utf-8><title>blendin</title>"
            f"<link rel=stylesheet href=/static/app.css><main><p class=error role=alert>"
            f"{escape(text)}</p><p><a href=javascript:history.back()>back</a></p></main>")


def _templates():
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["pct"] = lambda x: "–" if x is None else percent(x)
    env.filters["num"] = _num
    return env


def _num(x: Any) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def create_app(path: str | Path | None = None, *,
               upload_limit: int = DEFAULT_UPLOAD_LIMIT, debug: bool = False,
               hosts: Iterable[str] = (), key: str | None = None) -> Gate:
    """The app; ``path`` (a CSV, Parquet or Excel file) is loaded into every new session.

    ``hosts`` are the host names or addresses it answers to beside loopback: those the
    server is bound to (``blendin app --host``). With a ``key`` it serves only a browser
    that opened its address with the key (``/?key=...``, as ``blendin app`` prints it):
    other users of the machine reach the port too. Starting it removes the folders that
    killed servers left behind.

    >>> app = create_app()
    >>> sorted(r.path for r in app.app.routes)[:2]
    ['/', '/s/{sid}/']
    """
    remove_stale_folders()
    store = Store()
    env = _templates()
    initial = Path(path) if path is not None else None

    def page(session: Session, **extra) -> HTMLResponse:
        html = env.get_template("page.html").render(
            **context(session), upload_limit=upload_limit,
            upload_limit_text=human_bytes(upload_limit), **extra)
        # pages show data: never kept in the browser's cache, always rendered afresh
        return HTMLResponse(html, headers=NO_STORE)

    def session_of(request: Request) -> Session:
        session = store.get(request.path_params["sid"])
        if session is None:
            raise _NoSession
        return session

    def posted(handler, max_files: int = 0, max_fields: int = 1000, table: bool = False):
        """``handler`` behind the token check: a form without the session's token (in the
        form or the header) changes nothing and gets 403. With ``table`` a session with no
        table loaded is sent back to the first step."""

        async def checked(request: Request) -> Response:
            session = session_of(request)
            form = await request.form(max_files=max_files, max_fields=max_fields)
            sent = request.headers.get(TOKEN_HEADER) or form.get(TOKEN_FIELD)
            if not isinstance(sent, str) or not secrets.compare_digest(
                    sent.encode(), session.token.encode()):
                await form.close()
                return forbidden()
            if table and session.data is None:
                await form.close()
                session.error = "error: no table is loaded yet. Fix: load one first"
                return back(session, "load")
            return await handler(request)

        return checked

    def back(session: Session, anchor: str = "") -> RedirectResponse:
        if session.error or session.message:
            session.where = anchor if anchor in SECTIONS else "load"
        return RedirectResponse(f"/s/{session.id}/{'#' + anchor if anchor else ''}",
                                status_code=303)

    async def home(request: Request) -> Response:
        session = store.new()
        if initial is not None:
            try:
                await run_in_threadpool(_load_path, session, initial)
            except BlendinError as error:
                session.error = f"error: {error}"
        return back(session)

    async def show(request: Request) -> Response:
        session = session_of(request)
        shown = None
        if session.runs and session.data is not None:
            number = request.query_params.get("page", "1")
            shown = await run_in_threadpool(
                beside, session.runs[-1], session,
                int(number) if number.isdigit() else 1,
                request.query_params.get("show", "all"))
        response = page(session, beside=shown)
        session.error = session.message = None
        return response

    async def load_sample(request: Request) -> Response:
        session = session_of(request)
        form = await request.form()
        await _guarded(session, workflow.load_sample, session, str(form.get("sample", "")))
        return back(session, "load" if session.error or not session.data else "classify")

    async def load_database(request: Request) -> Response:
        session = session_of(request)
        form = await request.form()
        fields = {k: str(form.get(k, "")) for k in ("url", "table", "query", "schema",
                                                        "password")}
        await _guarded(session, workflow.load_database, session, *fields.values())
        return back(session, "load" if session.error or not session.data else "classify")

    async def load_upload(request: Request) -> Response:
        session = session_of(request)
        async with request.form(max_files=2, max_fields=20) as form:
            upload = form.get("file")
            target = str(form.get("target", "data"))
            options = {k: str(form.get(k, "")).strip() or None
                       for k in ("encoding", "delimiter")}
            if options["delimiter"] == "\\t":
                options["delimiter"] = "\t"
            if upload is None or not getattr(upload, "filename", ""):
                session.error = "error: no file was chosen. Fix: choose a CSV, Parquet or " \
                                "Excel file"
                return back(session, "load")
            name = upload_name(upload.filename)
            if name is None:
                text = (f"error: {upload.filename[:80]!r} cannot be used as a file name. "
                        "Fix: rename the file (e.g. data.csv) and upload it again")
                return HTMLResponse(_error_page(text), status_code=400)
            uploads = session.file("uploads")
            uploads.mkdir(exist_ok=True, mode=0o700)
            # a folder per upload (mode 0700): a data file and an external table of the same
            # name, or a file loaded again, never overwrite what a page or a run reads
            role = "external" if target == "external" else "data"
            dest = Path(tempfile.mkdtemp(prefix=f"{role}-", dir=uploads)) / name
            with dest.open("wb") as out:
                await run_in_threadpool(shutil.copyfileobj, upload.file, out, 1 << 20)
        await _guarded(session, _load_upload, session, dest, name, target, options)
        return back(session, "load" if session.error else "classify")

    async def load_project(request: Request) -> Response:
        session = session_of(request)
        async with request.form(max_files=PROJECT_FILES, max_fields=10) as form:
            chosen = [u for u in form.getlist("files") if getattr(u, "filename", "")]
            if not chosen:
                session.error = ("error: no project was chosen. Fix: choose the project .zip "
                                 "the app downloaded, or a spec (.toml) with its hierarchy "
                                 "files")
                return back(session, "load")
            folder = Path(tempfile.mkdtemp(prefix="project-", dir=session.folder))
            uploads = []
            for upload in chosen:
                name = upload_name(upload.filename)
                if name is None:
                    session.error = f"error: {upload.filename[:80]!r} cannot name a file"
                    return back(session, "load")
                dest = folder / name
                with dest.open("wb") as out:
                    await run_in_threadpool(shutil.copyfileobj, upload.file, out, 1 << 20)
                uploads.append((name, dest))
        try:
            session.message = await run_in_threadpool(projects.load_project, session, uploads)
        except BlendinError as error:
            session.error = f"error: {error}"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return back(session, "load" if session.error else "classify")

    async def roles(request: Request) -> Response:
        session = session_of(request)
        form = await request.form()
        for column in list(session.roles):
            role = form.get(f"role:{column}")
            if role in ROLES:
                session.roles[column] = str(role)
        session.message = "roles saved"
        _drop_stale_models(session)
        if request.headers.get("hx-request"):  # chosen in the page: drawn again there
            session.where = "classify"  # (a new address each time: a same one only scrolls)
            return Response(status_code=200, headers={
                "HX-Redirect": f"/s/{session.id}/?roles={secrets.token_hex(4)}#classify"})
        return back(session, "hierarchies")

    async def hierarchy(request: Request) -> Response:
        session = session_of(request)
        column = request.path_params["column"]
        form = await request.form()
        kind = str(form.get("kind", "flat"))
        fields = {k: str(v) for k, v in form.items() if k not in ("kind", "weight")}
        before = session.hierarchies.get(column) or {}
        # a tree built by hand and a file chosen are kept aside: choosing another builder
        # and coming back finds them again
        aside = session.set_aside.setdefault(column, {})
        aside |= {key: before for key in ("tree", "csv") if key in before}
        if kind == "csv":
            fields["csv"] = before.get("csv") or aside.get("csv", {}).get("csv", "")
            if not fields["csv"]:  # nothing to read yet: say what to do, not an error
                html = env.get_template("preview.html").render(
                    column=column, preview=None, error=None,
                    note="choose an ARX hierarchy file: one row per value, its "
                         "generalizations to the right, separated by ; or ,")
                return HTMLResponse(html) if request.headers.get("hx-request") else \
                    back(session, "hierarchies")
        if kind == "tree" and "tree" not in before:
            # the editor starts from the tree built before, else from the column's own
            # values, each a leaf
            start = aside.get("tree", {}).get("tree") or trees.current_tree(session, column)
            if start is None:
                html = env.get_template("preview.html").render(
                    column=column, preview=None, error=None,
                    note=f"{column} has more than {trees.TREE_VALUES} distinct values: "
                         "group them with intervals, masking or an ARX hierarchy file")
                return HTMLResponse(html) if request.headers.get("hx-request") else \
                    back(session, "hierarchies")
            fields["tree"] = json.dumps(start)
        weight = str(form.get("weight", "1")).strip() or "1"
        try:
            table = workflow.builder_table(kind, fields)
            preview = await run_in_threadpool(workflow.hierarchy_preview, session, column,
                                              table)
            session.weights[column] = _weight(column, weight)
            session.hierarchies[column] = table
            error = None
        except (BlendinError, ValueError) as problem:
            preview, error = None, f"error: {problem}"
        html = env.get_template("preview.html").render(column=column, preview=preview,
                                                       error=error, note=None)
        if request.headers.get("hx-request"):
            response = HTMLResponse(html)
            if kind == "tree" and "tree" not in before and error is None:
                # the group editor is drawn with the page: show it
                response.headers["HX-Redirect"] = (f"/s/{session.id}/?edit=tree"
                                                   f"#{tree_anchor(column)}")
            return response
        if error:
            session.error = error
        return back(session, "hierarchies")

    async def tree_edit(request: Request) -> Response:
        session = session_of(request)
        column = request.path_params["column"]
        form = await request.form()
        try:
            if form.get("ungroup"):
                trees.ungroup(session, column, str(form["ungroup"]))
                session.message = f"{column}: {form['ungroup']} ungrouped"
            else:
                names = [str(v) for v in form.getlist("items")]
                group = str(form.get("group", ""))
                await run_in_threadpool(trees.group_values, session, column, names, group)
                session.message = f"{column}: {len(names)} grouped as {group.strip()}"
        except BlendinError as error:
            session.error = f"error: {error}"
        session.where = "hierarchies"
        return RedirectResponse(f"/s/{session.id}/#{tree_anchor(column)}", status_code=303)

    async def hierarchy_file(request: Request) -> Response:
        session = session_of(request)
        column = request.path_params["column"]
        async with request.form(max_files=1, max_fields=5) as form:
            upload = form.get("file")
            if upload is None or not getattr(upload, "filename", ""):
                session.error = "error: no hierarchy file was chosen"
                return back(session, "hierarchies")
            dest = session.hierarchy_file(column, session.hierarchies)
            with dest.open("wb") as out:
                await run_in_threadpool(shutil.copyfileobj, upload.file, out, 1 << 20)
        table = {"csv": f"hierarchies/{dest.name}"}
        try:
            await run_in_threadpool(workflow.hierarchy_preview, session, column, table)
            session.hierarchies[column] = table
            session.message = f"hierarchy of {column} read from {upload.filename}"
        except BlendinError as error:
            session.error = f"error: {error}"
        return back(session, "hierarchies")

    async def models(request: Request) -> Response:
        session = session_of(request)
        form = await request.form()
        _read_models(session, form)
        action = str(form.get("action", "save"))
        if action == "add":
            key = str(form.get("new_model", "k-anonymity"))
            session.models.append({"model": key})
        elif action.startswith("remove:"):
            index = action.split(":", 1)[1]
            index = int(index) if index.isdigit() else -1  # (a model the page never showed)
            if 0 <= index < len(session.models):
                del session.models[index]
        elif action == "run":
            return await start_run(session)
        return back(session, "models")

    async def start_run(session: Session) -> Response:
        if session.job is not None and not session.job.done:
            session.error = "error: a run is already going on. Fix: wait, or cancel it"
            return back(session, "run")
        try:
            spec = await run_in_threadpool(workflow.build_spec, session)
        except BlendinError as error:
            session.error = f"error: {error}"
            return back(session, "models")
        session.start("anonymize", lambda job: workflow.run(session, spec, job))
        return back(session, "run")

    async def run_now(request: Request) -> Response:
        return await start_run(session_of(request))

    async def job(request: Request) -> Response:
        session = session_of(request)
        job = session.job
        done = job is not None and job.done
        html = env.get_template("job.html").render(session=session, job=job, job_done=done,
                                                   runs=session.runs)
        return HTMLResponse(html, headers=NO_STORE)

    async def cancel(request: Request) -> Response:
        session = session_of(request)
        if session.job is not None:
            session.job.cancel.set()
        return back(session, "run")

    async def tradeoff(request: Request) -> Response:
        session = session_of(request)
        record = _run_of(session, request)
        if session.job is not None and not session.job.done:
            session.error = "error: a run is already going on. Fix: wait, or cancel it"
        else:
            target = (await request.form()).get("target") or None
            session.start("trade-off", lambda job: workflow.tradeoff(session, record, job,
                                                                     target=target))
        return back(session, "run")

    async def download(request: Request) -> Response:
        session = session_of(request)
        record = _run_of(session, request)
        what = request.path_params["what"]
        try:
            path = await run_in_threadpool(workflow.download, session, record, what)
        except BlendinError as error:
            return PlainTextResponse(f"error: {error}", status_code=400)
        return FileResponse(path, filename=Path(path).name, headers=NO_STORE)

    async def input_file(request: Request) -> Response:
        session = session_of(request)
        loaded = session.external if request.path_params["which"] == "external" \
            else session.data
        if loaded is None or not loaded.downloadable:
            return PlainTextResponse("error: nothing to download", status_code=404)
        return FileResponse(loaded.path, filename=loaded.path.name, headers=NO_STORE)

    async def compare(request: Request) -> Response:
        session = session_of(request)
        # runs of this table only: an address kept from before (the Back button after
        # another table was loaded, a bookmark) names runs that are gone
        numbers = {str(r.number) for r in session.runs}
        response = page(session, compare=tuple(
            v if v in numbers else None
            for v in (request.query_params.get("a"), request.query_params.get("b"))))
        return response

    routes = [
        Route("/", home),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        Route("/s/{sid}/", show),
        Route("/s/{sid}/compare", compare),
        Route("/s/{sid}/load/sample", posted(load_sample), methods=["POST"]),
        Route("/s/{sid}/load/upload", posted(load_upload, max_files=2, max_fields=20),
              methods=["POST"]),
        Route("/s/{sid}/load/database", posted(load_database, max_fields=20),
              methods=["POST"]),
        Route("/s/{sid}/load/project", posted(load_project, max_files=PROJECT_FILES,
                                              max_fields=10), methods=["POST"]),
        Route("/s/{sid}/roles", posted(roles, table=True), methods=["POST"]),
        # a column name may hold "/": the file route is matched first
        Route("/s/{sid}/hierarchy/{column:path}/file",
              posted(hierarchy_file, max_files=1, max_fields=5, table=True),
              methods=["POST"]),
        Route("/s/{sid}/hierarchy/{column:path}/tree", posted(tree_edit, table=True),
              methods=["POST"]),
        Route("/s/{sid}/hierarchy/{column:path}", posted(hierarchy, table=True),
              methods=["POST"]),
        Route("/s/{sid}/models", posted(models, table=True), methods=["POST"]),
        Route("/s/{sid}/run", posted(run_now, table=True), methods=["POST"]),
        Route("/s/{sid}/job", job),
        Route("/s/{sid}/cancel", posted(cancel), methods=["POST"]),
        Route("/s/{sid}/run/{number:int}/tradeoff", posted(tradeoff), methods=["POST"]),
        Route("/s/{sid}/run/{number:int}/download/{what}", download),
        Route("/s/{sid}/input/{which}", input_file),
    ]

    async def no_session(request: Request, exc: Exception) -> Response:
        return RedirectResponse("/", status_code=303)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        store.close()

    async def refuse_upload(request: Request, exc: Exception) -> Response:
        # a chunked upload passed the limit while being read (no Content-Length to refuse)
        return too_large(upload_limit)

    handlers = {_NoSession: no_session, TooLarge: refuse_upload}
    if not debug:
        handlers[Exception] = failure_page
    app = Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan,
                    debug=debug)
    app.state.store = store
    return Gate(app, upload_limit, debug, _host_names(hosts), key)


class _NoSession(Exception):
    """The address names a session this app does not hold (e.g. after a restart)."""


async def _guarded(session: Session, work, *args) -> None:
    try:
        await run_in_threadpool(work, *args)
    except BlendinError as error:
        session.error = f"error: {error}"


def _load_path(session: Session, path: Path) -> None:
    # (an Excel file's CSV copy goes into the session's private folder, not beside it)
    workflow.set_data(session, workflow.read_file(path, path.name, scratch=session.folder))


def _load_upload(session: Session, dest: Path, name: str, target: str,
                 options: dict | None = None) -> None:
    if target == "external" and session.data is None:
        shutil.rmtree(dest.parent, ignore_errors=True)
        raise BlendinError("load the table to release first",
                           fix="then add the external identified table")
    if target == "external" and session.data.ref is not None:
        shutil.rmtree(dest.parent, ignore_errors=True)
        raise BlendinError("the linking attack reads the input in memory, and this table "
                           "stays in its database",
                           fix="run blendin attack on the release and the external table, or "
                           "load the table as a file (CSV or Parquet) for the attack here")
    try:
        loaded = workflow.read_file(dest, name, **(options or {}))
    except BlendinError as error:
        shutil.rmtree(dest.parent, ignore_errors=True)  # nothing refers to this upload
        # the CLI's message, naming the file as the user knows it, not its private copy
        raise BlendinError(error.problem.replace(str(dest), name),
                           fix=error.fix and in_fields(error.fix)) from None
    if target == "external":
        session.external = loaded
    else:
        workflow.set_data(session, loaded)
    session.message = f"loaded {name}"


#: the CLI's words for how a file is read, and the load form's fields that say it instead
_FIELDS = [
    (r"pass --delimiter ('[^']*'|\S+) \(or set \[input\] delimiter\)",
     r"put \1 in the delimiter field"),
    (r"pass --delimiter(, or set \[input\] delimiter)?", "set the delimiter field"),
    (r"--encoding ([\w-]+)( \(or set \[input\] encoding\))?", r"\1 in the encoding field"),
]


def in_fields(fix: str) -> str:
    """A fix that names the CLI's flags, said with the load form's fields.

    >>> in_fields("pass its encoding, e.g. --encoding latin-1 (or set [input] encoding)")
    'pass its encoding, e.g. latin-1 in the encoding field'
    >>> in_fields("check the delimiter (',' was used; pass --delimiter) and ...")
    "check the delimiter (',' was used; set the delimiter field) and ..."
    """
    for pattern, said in _FIELDS:
        fix = re.sub(pattern, said, fix)
    return fix


def _weight(column: str, text: str) -> float:
    """A column's weight from its field: a finite number >= 0 (the spec's rule, said in
    place rather than at the run).

    >>> _weight("age", " 2 "), _weight("age", "0")
    (2.0, 0.0)
    """
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise BlendinError(f"the weight of {column!r} must be a number >= 0, got {text!r}",
                           fix="give e.g. 1, or 2 to keep more of this column than of the "
                               "others")
    return value


def _run_of(session: Session, request: Request):
    number = request.path_params["number"]
    for record in session.runs:
        if record.number == number:
            return record
    raise _NoSession


def _read_models(session: Session, form) -> None:
    """Models and limits from the form: values stay as typed (numbers become numbers) so
    the spec's own validation explains what is wrong."""
    catalog = workflow.model_catalog()
    models = []
    for i, model in enumerate(session.models):
        key = model.get("model")
        entry = {"model": key}
        info = catalog.get(key, {"required": (), "optional": ()})
        for param in (*info["required"], *info["optional"]):
            value = str(form.get(f"m{i}:{param}", model.get(param, ""))).strip()
            if value != "":
                entry[param] = value if param in ("attribute", "distance") \
                    else workflow.number(value)
        if entry.get("distance") == "hierarchical" and "hierarchy" in model:
            entry["hierarchy"] = model["hierarchy"]  # (a project's: the page has no field)
        models.append(entry)
    session.models = models
    limits = {}
    extra = workflow.choices()
    for key in ("max_suppression", "algorithm", "metric", "policy", *extra["extra_limits"]):
        value = str(form.get(key, session.limits.get(key, ""))).strip()
        if value:
            limits[key] = value if key in ("algorithm", "metric", "policy") \
                else workflow.number(value)
    for key in extra["switches"]:
        if form.get(key):
            limits[key] = True
    session.limits = limits


def _drop_stale_models(session: Session) -> None:
    """A model about a column that is no longer sensitive keeps its row (the page explains),
    but an l-diversity default follows the first sensitive column."""
    sensitive = [c for c, r in session.roles.items() if r == "sensitive"]
    for model in session.models:
        if "attribute" in model and model["attribute"] not in sensitive and sensitive:
            model["attribute"] = sensitive[0]
