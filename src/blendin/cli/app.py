"""``blendin app``: serve the local web interface."""

from __future__ import annotations

from pathlib import Path

import click

from blendin.cli import main
from blendin.errors import BlendinError

LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: seconds a stopped server waits for requests still running (a stalled upload, say)
SHUTDOWN_SECONDS = 5


@main.command("app")
@click.argument("data", required=False, type=click.Path(dir_okay=False, path_type=str))
@click.option("--port", default=0, type=click.IntRange(0, 65535), show_default="a free port",
              help="Port to listen on.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback lets others on the network "
              "see the data.")
@click.option("--no-browser", is_flag=True, help="Do not open the page in a browser.")
@click.option("--max-upload", default="1GB", show_default=True,
              help="Largest file the page accepts, e.g. 500MB or 4GB.")
@click.pass_context
def app_command(ctx: click.Context, data: str | None, port: int, host: str, no_browser: bool,
                max_upload: str) -> None:
    """Open the local web interface: load a table, classify its columns, choose hierarchies
    and models, run, and download the verified release with the spec that makes it.

    DATA (CSV, Parquet or Excel) is loaded into every new page; sample tables and uploads
    work too. Data stays on this machine: uploads live in a private temporary folder that
    is removed when the app stops (Ctrl-C), or by the next start after a crash. The page
    answers only to 127.0.0.1, localhost and [::1] (and the --host given).

    Example: blendin app patients.csv
    """
    import errno
    import secrets
    import socket


    try:
        import uvicorn

        # loaded when the command runs, so that blendin --help stays instant
        from blendin.app.server import create_app, parse_size
    except ImportError as error:
        raise BlendinError(f"the app needs {error.name!r}, which is not installed",
                           fix='pip install "blendin[app]"') from None
    if data is not None and not Path(data).is_file():
        raise BlendinError(f"file {data!r} does not exist", fix="check the path given to "
                           "blendin app")
    if host not in LOOPBACK:
        click.echo(f"warning: listening on {host}: anyone who can reach this machine can "
                   "open the page and the data in it; use --host 127.0.0.1 to keep it local",
                   err=True)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:  # (a port taken, or an address that is not this machine's)
        taken = error.errno in (errno.EADDRINUSE, errno.EACCES)
        raise BlendinError(f"cannot listen on {host}:{port}: {error.strerror or error}",
                           fix="choose another --port (or leave it out for a free one)" if taken
                           else "give --host an address of this machine, e.g. 127.0.0.1"
                           ) from None
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    key = secrets.token_urlsafe(24)  # (other users of the machine reach the port too)
    url = f"http://{shown}:{bound}/?key={key}"
    debug = bool(ctx.obj and ctx.obj.get("debug"))
    # the page answers to loopback names, and to the address asked for with --host
    hosts = () if host in LOOPBACK else (host,)
    app = create_app(data, upload_limit=parse_size(max_upload), debug=debug, hosts=hosts,
                     key=key)
    # no access log, and errors only with --debug: log lines could carry values
    config = uvicorn.Config(app, log_level="warning" if debug else "critical",
                            access_log=False, lifespan="on",
                            # a stalled upload keeps neither the server nor its files
                            timeout_graceful_shutdown=SHUTDOWN_SECONDS)
    server = uvicorn.Server(config)
    click.echo(f"blendin app at {url} (Ctrl-C to stop)")
    if not no_browser:
        _open_when_ready(server, url)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # Ctrl-C: the server has shut down; remove the files and say so
    finally:
        app.state.store.close()
    click.echo("stopped; uploaded files removed")


def _open_when_ready(server, url: str) -> None:
    import threading
    import time
    import webbrowser

    def wait_and_open() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.05)
        if server.started:
            webbrowser.open(url)

    threading.Thread(target=wait_and_open, daemon=True).start()
