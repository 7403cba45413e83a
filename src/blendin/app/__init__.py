"""The local web interface: a thin shell over the library for people who do not script.

``blendin app [FILE]`` serves it on 127.0.0.1. Each step is a call to the public API (see
:mod:`blendin.app.workflow`); :func:`create_app` makes the ASGI app for tests and embedding.
"""

from __future__ import annotations


def create_app(*args, **kwargs):
    """The ASGI app (see :func:`blendin.app.server.create_app`)."""
    # starlette and uvicorn are the app extra (blendin[app]): loaded when an app is made
    from blendin.app.server import create_app as make

    return make(*args, **kwargs)


__all__ = ["create_app"]
