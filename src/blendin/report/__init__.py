"""The release report: a self-contained HTML file with figures, verdicts, risk and plots.

``write_report(result, "report.html", original=df)`` writes it; ``render_report`` returns
the HTML text; ``report_context`` the figures it shows. ``notebook`` holds the short
representations of the reports (``repr`` and notebook cells).

The HTML report needs matplotlib and jinja2: they are imported when it is first used, so the
short representations stay light.
"""

from __future__ import annotations

from typing import Any

__all__ = ["render_report", "report_context", "write_report"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from blendin.report import html

        return getattr(html, name)
    raise AttributeError(f"module 'blendin.report' has no attribute {name!r}")
