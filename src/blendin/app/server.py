"""The ASGI application: routes, the upload limit, and the page rendered on the server.

Every step is a plain HTML form (works without scripts); the vendored htmx script adds the
live hierarchy preview, the progress bar and Cancel without reloading the page. Handlers that
read or compute run in a worker thread, so one session's work never blocks another's page.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from pathlib import Path
from typing import Any

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

from blendin.app import workflow
from blendin.app.state import Session, Store
from blendin.errors import BlendinError

HERE = Path(__file__).parent
#: default upload limit: 1 GiB (``blendin app --max-upload``)
DEFAULT_UPLOAD_LIMIT = 1 << 30
SECTIONS = ("load", "classify", "hierarchies", "models", "run", "results")
NO_STORE = {"Cache-Control": "no-store"}
UPLOAD_PATHS = re.compile(r"^/s/[^/]+/(load/upload|hierarchy/[^/]+/file)$")


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


class UploadLimit:
    """Refuse uploads above ``limit`` bytes before reading them (by Content-Length), and
    stop any that exceeds it while streaming. Unexpected errors become a page naming only
    the error's type: a traceback may quote values, and nothing with values is logged
    (``blendin --debug app`` shows them)."""

    def __init__(self, app, limit: int, debug: bool = False) -> None:
        self.app, self.limit, self.debug = app, limit, debug
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
        except TooLarge as error:
            await self._refuse(scope, receive, send, error.args[0])

    async def _refuse(self, scope, receive, send, size: int) -> None:
        text = (f"error: the upload is {human_bytes(size)}, above the limit of "
                f"{human_bytes(self.limit)}. Fix: give the file's path on the command line "
                "(blendin app FILE), or raise the limit with blendin app --max-upload 4GB")
        response = HTMLResponse(_error_page(text), status_code=413,
                                headers={"Connection": "close"})
        await response(scope, receive, send)


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
    env.filters["pct"] = lambda x: "–" if x is None else f"{100 * x:.1f}%"
    env.filters["num"] = _num
    return env


def _num(x: Any) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def create_app(path: str | Path | None = None, *,
               upload_limit: int = DEFAULT_UPLOAD_LIMIT, debug: bool = False) -> UploadLimit:
    """The app; ``path`` (a CSV, Parquet or Excel file) is loaded into every new session.

    >>> app = create_app()
    >>> sorted(r.path for r in app.app.routes)[:2]
    ['/', '/s/{sid}/']
    """
    store = Store()
    env = _templates()
    initial = Path(path) if path is not None else None

    def page(session: Session, **extra) -> HTMLResponse:
        from blendin.app.views import context

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
        response = page(session)
        session.error = session.message = None
        return response

    async def load_sample(request: Request) -> Response:
        session = session_of(request)
        form = await request.form()
        await _guarded(session, workflow.load_sample, session, str(form.get("sample", "")))
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
            name = Path(upload.filename).name
            folder = session.file("uploads")
            folder.mkdir(exist_ok=True, mode=0o700)
            dest = folder / name
            with dest.open("wb") as out:
                await run_in_threadpool(shutil.copyfileobj, upload.file, out, 1 << 20)
        await _guarded(session, _load_upload, session, dest, name, target, options)
        return back(session, "load" if session.error else "classify")

    async def roles(request: Request) -> Response:
        session = session_of(request)
        form = await request.form()
        for column in list(session.roles):
            role = form.get(f"role:{column}")
            if role in ("identifier", "quasi-identifier", "sensitive", "insensitive"):
                session.roles[column] = str(role)
        session.message = "roles saved"
        _drop_stale_models(session)
        return back(session, "hierarchies")

    async def hierarchy(request: Request) -> Response:
        session = session_of(request)
        column = request.path_params["column"]
        form = await request.form()
        kind = str(form.get("kind", "flat"))
        fields = {k: str(v) for k, v in form.items() if k not in ("kind", "weight")}
        if kind == "csv":
            fields["csv"] = session.hierarchies.get(column, {}).get("csv", "")
        weight = str(form.get("weight", "1")).strip() or "1"
        try:
            table = workflow.builder_table(kind, fields)
            preview = await run_in_threadpool(workflow.hierarchy_preview, session, column,
                                              table)
            session.hierarchies[column] = table
            session.weights[column] = float(weight)
            error = None
        except (BlendinError, ValueError) as problem:
            preview, error = None, f"error: {problem}"
        html = env.get_template("preview.html").render(column=column, preview=preview,
                                                       error=error)
        if request.headers.get("hx-request"):
            return HTMLResponse(html)
        if error:
            session.error = error
        return back(session, "hierarchies")

    async def hierarchy_file(request: Request) -> Response:
        session = session_of(request)
        column = request.path_params["column"]
        async with request.form(max_files=1, max_fields=5) as form:
            upload = form.get("file")
            if upload is None or not getattr(upload, "filename", ""):
                session.error = "error: no hierarchy file was chosen"
                return back(session, "hierarchies")
            folder = session.file("hierarchies")
            folder.mkdir(exist_ok=True, mode=0o700)
            dest = folder / f"{_safe(column)}.csv"
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
            index = int(action.split(":", 1)[1])
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
            session.start("trade-off", lambda job: workflow.tradeoff(session, record, job))
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
        response = page(session, compare=(request.query_params.get("a"),
                                          request.query_params.get("b")))
        return response

    routes = [
        Route("/", home),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        Route("/s/{sid}/", show),
        Route("/s/{sid}/compare", compare),
        Route("/s/{sid}/load/sample", load_sample, methods=["POST"]),
        Route("/s/{sid}/load/upload", load_upload, methods=["POST"]),
        Route("/s/{sid}/roles", roles, methods=["POST"]),
        # a column name may hold "/": the file route is matched first
        Route("/s/{sid}/hierarchy/{column:path}/file", hierarchy_file, methods=["POST"]),
        Route("/s/{sid}/hierarchy/{column:path}", hierarchy, methods=["POST"]),
        Route("/s/{sid}/models", models, methods=["POST"]),
        Route("/s/{sid}/run", run_now, methods=["POST"]),
        Route("/s/{sid}/job", job),
        Route("/s/{sid}/cancel", cancel, methods=["POST"]),
        Route("/s/{sid}/run/{number:int}/tradeoff", tradeoff, methods=["POST"]),
        Route("/s/{sid}/run/{number:int}/download/{what}", download),
        Route("/s/{sid}/input/{which}", input_file),
    ]

    async def no_session(request: Request, exc: Exception) -> Response:
        return RedirectResponse("/", status_code=303)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        store.close()

    handlers = {_NoSession: no_session}
    if not debug:
        handlers[Exception] = failure_page
    app = Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan,
                    debug=debug)
    app.state.store = store
    return UploadLimit(app, upload_limit, debug)


class _NoSession(Exception):
    """The address names a session this app does not hold (e.g. after a restart)."""


async def _guarded(session: Session, work, *args) -> None:
    try:
        await run_in_threadpool(work, *args)
    except BlendinError as error:
        session.error = f"error: {error}"


def _load_path(session: Session, path: Path) -> None:
    workflow.set_data(session, workflow.read_file(path, path.name))


def _load_upload(session: Session, dest: Path, name: str, target: str,
                 options: dict | None = None) -> None:
    try:
        loaded = workflow.read_file(dest, name, **(options or {}))
    except BlendinError as error:
        # the CLI's message, naming the file as the user knows it, not its private copy
        raise BlendinError(error.problem.replace(str(dest), name), fix=error.fix) from None
    if target == "external":
        if session.data is None:
            raise BlendinError("load the table to release first",
                               fix="then add the external identified table")
        session.external = loaded
    else:
        workflow.set_data(session, loaded)
    session.message = f"loaded {name}"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "column"


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
