"""The release report: a self-contained HTML file with figures, verdicts, risk and plots.

``write_report(result, "report.html", original=df)`` writes it; ``render_report`` returns
the HTML text; ``report_context`` the figures it shows.
"""

from blendin.report.html import render_report, report_context, write_report

__all__ = ["render_report", "report_context", "write_report"]
