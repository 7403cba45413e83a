"""What every HTML page of blendin shares: its Jinja2 templates (autoescaped, strict) and
the version it names.

>>> template("report.html.j2").name
'report.html.j2'
"""

from __future__ import annotations

from functools import cache


@cache
def _environment():
    from jinja2 import Environment, PackageLoader, StrictUndefined

    return Environment(loader=PackageLoader("blendin.report", "templates"), autoescape=True,
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def template(name: str):
    """The template ``name`` of ``blendin/report/templates``."""
    return _environment().get_template(name)


def version() -> str:
    """blendin's installed version ("unknown" in a source tree never installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("blendin")
    except PackageNotFoundError:
        return "unknown"
