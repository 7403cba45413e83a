"""The release report: a self-contained HTML file with figures, verdicts, risk and plots.

``write_report(result, "report.html", original=df)`` writes it; ``render_report`` returns
the HTML text; ``report_context`` the figures it shows (the short representations of the
reports, ``repr`` and notebook cells, are :mod:`blendin.summaries`).

The HTML report needs matplotlib and jinja2: ``blendin.report.html`` is imported when one
of these names is first used, so that ``import blendin.report`` stays light.
"""

from __future__ import annotations

from typing import Any

__all__ = ["render_report", "report_context", "write_report"]


def __getattr__(name: str) -> Any:
    if name in __all__:  # loaded on first use: matplotlib and jinja2 take a second
        from blendin.report import html  # keep

        return getattr(html, name)
    raise AttributeError(f"module 'blendin.report' has no attribute {name!r}")
