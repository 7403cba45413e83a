"""What the release keeps, for the analyst who receives it: the utility report as one
self-contained HTML file (``blendin utility --report``), its plots as PNG files
(``--plots``), and the section "What the release keeps" of the release report.

The figures come from :func:`blendin.utility.utility`; this module only lays them out.

>>> import blendin as bl
>>> df = bl.datasets.hospital(300, seed=1)
>>> spec = bl.Spec(identifiers=["name", "ssn"], quasi_identifiers={
...     "zip": bl.masking(), "sex": bl.flat()}, models=[bl.KAnonymity(5)],
...     max_suppression=0.1, sensitive=["diagnosis"])
>>> report = bl.utility(df, bl.anonymize(df, spec).data, spec)
>>> sorted(plot_files(report))
['distribution-diagnosis.png', 'distribution-sex.png', 'distribution-zip.png']
>>> render_utility(report).startswith("<!DOCTYPE html>")
True
"""

from __future__ import annotations

import math
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from matplotlib.figure import Figure

from blendin.errors import BlendinError
from blendin.io import atomic_path, write_text
from blendin.outputs import together
from blendin.report import plots
from blendin.report.page import template, version
from blendin.report.words import number, pct
from blendin.utility import MEANINGS, UtilityReport, utility

TEMPLATE = "utility.html.j2"


def keeps(report: UtilityReport, *, input_values: bool = True) -> dict[str, Any]:
    """The figures of "What the release keeps", formatted (the template ``keeps.html.j2``).
    Without ``input_values`` a numeric column's median and quartiles are the release's
    only: the input's are values of records (an age, a date) that the release hides."""
    columns = [{"line": c.line(), "name": c.name, "granularity": number(c.granularity),
                "entropy": number(c.non_uniform_entropy),
                "intensity": number(c.generalization_intensity),
                "error": "–" if c.squared_error is None else number(c.squared_error)}
               for c in report.columns]
    table = [{"name": f"{name} (columns)".replace("_", " "), "value": number(value),
              "meaning": MEANINGS[name]} for name, value in report.overall.items()]
    table += [{"name": name.replace("_", " "), "value": number(value),
               "meaning": MEANINGS[name]} for name, value in report.table.items()]
    statistics = [f"{name}: mean {number(a.mean)} → {number(b.mean)}, median "
                  f"{number(a.median)} → {number(b.median)}, quartiles {number(a.q1)}–"
                  f"{number(a.q3)} → {number(b.q1)}–{number(b.q3)}" if input_values else
                  f"{name}: mean {number(a.mean)} → {number(b.mean)}; in the release "
                  f"median {number(b.median)}, quartiles {number(b.q1)}–{number(b.q3)}"
                  for name, (a, b) in report.statistics.items()]
    figures = plot_files(report)
    distributions = [{"key": key, "name": d.name, "png": plots.png_base64(figures[key]),
                      "caption": _caption(d, report.records - report.released)}
                     for key, d in zip(_distribution_keys(report), report.distributions)]
    return {"columns": columns, "table": table, "statistics": statistics,
            "distributions": distributions, "records": f"{report.records:,}",
            "released": f"{report.released:,}",
            "share": pct(report.released / max(report.records, 1)),
            "classification": _classification(report, figures.get("classification.png")),
            "contingencies": [{"columns": " × ".join(c.columns), "distance": number(c.distance),
                               "before": f"{c.original.num_rows:,}",
                               "after": f"{c.released.num_rows:,}"}
                              for c in report.contingencies],
            "error": None}


def release_keeps(result, original: pa.Table | None, *, input_values: bool = False
                  ) -> dict[str, Any] | None:
    """:func:`keeps` for the release of ``result`` (from :func:`blendin.anonymize`) made
    from ``original``; None where the records cannot be matched one by one (no input, a
    Mondrian release, a release recoded in parts); the error where the matching fails.
    The release report shows no value the release hides (``input_values`` False: each
    QI's input counted at the released labels, no sensitive column); the app, which holds
    the input, shows them all."""
    mondrian = not result.levels and result.algorithm == "mondrian"
    if original is None or mondrian or result.recoded_parts:
        return None
    try:
        return keeps(utility(original, result.table, result.spec,
                             input_values=input_values), input_values=input_values)
    except BlendinError as error:  # the rest of the page stands without it
        return {"error": error.problem, "columns": [], "table": [], "statistics": [],
                "distributions": [], "classification": None, "contingencies": []}


def _caption(d, suppressed: int) -> str:
    starred = sum(n for v, n in d.after if v == "*")
    if not starred:
        star = ""
    elif starred == suppressed:
        star = f" (* marks the {suppressed:,} records suppressed)"
    else:
        star = (f" (* holds {starred - suppressed:,} values generalized to * and the "
                f"{suppressed:,} records suppressed)" if suppressed else
                f" (* holds the {starred:,} values generalized to *)")
    before = (f"{len(d.before):,} values in the input" if d.input_values else
              "the input counted at the released labels")
    return (f"{d.name}: {before}, {len(d.after):,} in the release{star}; each bar is a "
            "share of the input's records.")


def _classification(report: UtilityReport, figure: Figure | None) -> dict | None:
    c = report.classification
    if c is None:
        return None
    rows = [{"model": m, "before": number(c.original[m].accuracy),
             "after": number(c.released[m].accuracy),
             "kept": "–" if math.isnan(c.kept(m)) else pct(c.kept(m)),
             "brier": f"{number(c.original[m].brier)} → {number(c.released[m].brier)}",
             "auc": f"{number(c.original[m].auc)} → {number(c.released[m].auc)}"}
            for m in c.original]
    return {"target": c.target, "folds": c.folds, "records": f"{c.records:,}",
            "seed": c.seed, "baseline": pct(c.baseline.accuracy), "rows": rows,
            "png": plots.png_base64(figure) if figure is not None else None}


def _distribution_keys(report: UtilityReport) -> list[str]:
    """A file name for each distribution, unique even when two column names differ only
    in characters a file name cannot hold."""
    keys: list[str] = []
    for d in report.distributions:
        stem = "distribution-" + (re.sub(r"[^\w.-]+", "_", d.name).strip("._") or "column")
        key, n = f"{stem}.png", 2
        while key in keys:
            key, n = f"{stem}-{n}.png", n + 1
        keys.append(key)
    return keys


def plot_files(report: UtilityReport) -> dict[str, Figure]:
    """Every plot of the report by its file name (``distribution-COLUMN.png``, one per
    quasi-identifier and sensitive column; ``classification.png`` with a target)."""
    found = {}
    for key, d in zip(_distribution_keys(report), report.distributions):
        before, after = d.bars()
        found[key] = plots.distribution(
            d.name, before, after, report.records,
            before_what="input" if d.input_values else "input, at the released labels")
    c = report.classification
    if c is not None:
        found["classification.png"] = plots.classification(
            c.target, c.baseline.accuracy, {m: s.accuracy for m, s in c.original.items()},
            {m: s.accuracy for m, s in c.released.items()})
    return found


def write_plots(report: UtilityReport, folder: str | os.PathLike) -> list[Path]:
    """Write every plot (:func:`plot_files`) into ``folder`` as PNG, all or none."""
    written = []
    with together():
        for name, figure in plot_files(report).items():
            path = Path(folder) / name
            with atomic_path(path) as temp:
                figure.savefig(temp, format="png", dpi=100, metadata={"Software": None})
            written.append(path)
    return written


def render_utility(report: UtilityReport, *, data: str = "", release: str = "") -> str:
    """The utility report as HTML text (``data`` and ``release`` name the files compared)."""
    return template(TEMPLATE).render(
        title="Utility report", generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        version=version(), data=data, release=release, keeps=keeps(report))


def write_utility_report(report: UtilityReport, path: str | os.PathLike, *, data: str = "",
                         release: str = "") -> Path:
    """Write :func:`render_utility` to ``path`` atomically."""
    return write_text(path, render_utility(report, data=data, release=release))
