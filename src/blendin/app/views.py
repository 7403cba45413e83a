"""What the page shows, gathered from the session and the library's reports."""

from __future__ import annotations

import json
import math

import numpy as np

from blendin.app import trees, workflow
from blendin.app.profile import ROLES
from blendin.app.projects import carried_text
from blendin.app.state import Run, Session
from blendin.codes import combine_keys
from blendin.errors import BlendinError
from blendin.report.html import utility_rows
from blendin.report.plots import class_sizes
from blendin.summaries import cells_text


def context(session: Session) -> dict:
    """Everything ``page.html`` renders."""
    data = session.data
    job = session.job
    done = job is not None and job.done  # read before the runs (see job.html)
    out = {"job_done": done, "session": session,
           "samples": {k: v[0] for k, v in workflow.SAMPLES.items()},
           "database_rows": workflow.DATABASE_ROWS,
           "roles": ROLES, "builders": workflow.BUILDERS, "catalog": workflow.model_catalog(),
           "choices": workflow.choices(), "job": job, "runs": list(session.runs)}
    if data is None:
        return out
    out["preview"] = workflow.preview(data)
    out["script"] = workflow.script_command(session)
    qis = [c for c, r in session.roles.items() if r == "quasi-identifier"]
    out["qis"] = qis
    out["sensitive"] = [c for c, r in session.roles.items() if r == "sensitive"]
    out["hierarchy_forms"] = {q: workflow.builder_fields(session.hierarchies.get(q)
                                                          or {"flat": True}) for q in qis}
    edited = [q for q in qis if out["hierarchy_forms"][q][0] == "tree"]
    out["tree_items"] = {q: trees.tree_items(session, q) for q in edited}
    out["tree_defaults"] = {q: json.dumps(trees.current_tree(session, q) or {})
                            for q in qis}
    out["tree_anchors"] = {q: tree_anchor(q) for q in qis}
    out["tree_limit"] = trees.TREE_VALUES
    out["spec_problem"] = _spec_problem(session)
    out["carried"] = carried_text(session)
    runs = out["runs"]
    if runs:
        out["last"] = describe(runs[-1], session)
        out["described"] = {r.number: describe(r, session) for r in runs}
    return out


def tree_anchor(column: str) -> str:
    """The id of a column's hierarchy card (any text: hex keeps it a valid fragment)."""
    return "tree-" + column.encode("utf-8").hex()


def _spec_problem(session: Session) -> str | None:
    """Why the current choices cannot run, in the spec's words (None when they can)."""
    try:
        workflow.build_spec(session)
    except BlendinError as error:
        return f"{error}"
    return None


def describe(run: Run, session: Session) -> dict:
    """The figures of one run, verdict first (made once per run and trade-off)."""
    if run.view is not None and run.view["tradeoff"] is run.tradeoff:
        return run.view
    result = run.result
    report = result.check
    heights = result.heights
    levels = [{"column": q, "level": lvl, "height": heights.get(q, 0),
               "share": lvl / (heights[q] - 1) if heights.get(q, 0) > 1 else 0.0,
               "label": _level_label(result, q, lvl),
               "distinct_before": _before(run, session, q),
               "distinct_after": _distinct(result.table, q)}
              for q, lvl in result.levels.items()]
    if not result.levels:  # Mondrian: no single level per column
        levels = [{"column": q, "level": None, "height": None, "label": "local recoding",
                   "share": None,
                   "distinct_before": _before(run, session, q),
                   "distinct_after": _distinct(result.table, q)}
                  for q in result.spec.quasi_identifiers]
    out = {
        "number": run.number,
        "passed": report.passed,
        "warnings": list(result.warnings),
        "models": report.models,
        "records": result.records,
        "released": result.table.num_rows,
        "suppressed": result.suppressed,
        "suppressed_share": result.suppressed / max(result.records, 1),
        "cells": cells_text(result.cells) if result.cells is not None else None,
        "cell_records": result.cell_records,
        "transformed": [applied.line() for applied in result.transformed],
        "max_suppression": result.spec.max_suppression,
        "classes": result.classes,
        "min_class": result.min_class_size,
        "levels": levels,
        "utility": {k: float(v) for k, v in result.utility.items()},
        "losses": utility_rows(result.utility),
        "keeps": run.keeps,
        "algorithm": result.algorithm,
        "metric": result.metric,
        "seconds": result.seconds,
        "nodes": result.nodes_checked,
        "spec_models": "; ".join(str(m) for m in result.spec.models),
        "risk": _risk_rows(run.risk_before, run.risk_after),
        "attack": _attack_rows(run.attack_before, run.attack_after),
        "external": run.external,
        "tradeoff": run.tradeoff,
        "tradeoff_svg": tradeoff_svg(run.tradeoff) if run.tradeoff else None,
        "targets": workflow.target_columns(session, run.spec),
        "sizes_png": _sizes_png(run),
        "solution": bool(result.levels),
    }
    run.view = out
    return out


def _level_label(result, column: str, level: int) -> str:
    """The labels the release shows for ``column``, in its hierarchy's order (the
    distinct values counted beside it are the release's too)."""
    hierarchy = result.hierarchies.get(column)
    if hierarchy is None or level >= hierarchy.height or column not in result.table.column_names:
        return ""
    import pyarrow.compute as pc

    shown = {str(v) for v in pc.unique(result.table.column(column)).to_pylist()}
    labels = [v for v in dict.fromkeys(str(v) for v in hierarchy.label_array(level))
              if v in shown]
    labels += sorted(shown - set(labels))  # * of suppressed records kept in the release
    return ", ".join(labels[:4]) + (f" … ({len(labels)} in all)" if len(labels) > 4 else "")


def _before(run: Run, session: Session, column: str) -> int | None:
    """The distinct values of a QI in the input: counted in the database for a table
    there (the page holds only its first rows), else in the loaded table."""
    if run.distinct_before is not None:
        return run.distinct_before.get(column)
    return _distinct(session.data.table, column)


def _distinct(table, column: str) -> int | None:
    import pyarrow.compute as pc

    if column not in table.column_names:
        return None
    # a missing value is one more value: the release keeps it as a label of its own
    return int(pc.count_distinct(table.column(column), mode="all").as_py())


def _risk_rows(before, after) -> list[dict]:
    if before is None:
        return []

    def get(report, pick):
        return None if report is None else pick(report)

    rows = [
        ("classes", lambda r: r.classes, "num"),
        ("smallest class", lambda r: int(r.sizes.min()) if len(r.sizes) else None, "num"),
        ("sample uniques", lambda r: r.sample_uniques, "num"),
        ("highest prosecutor risk", lambda r: r.prosecutor.highest, "pct"),
        ("average prosecutor risk", lambda r: r.prosecutor.average, "pct"),
        (f"records above risk {before.threshold:g}", lambda r: r.prosecutor.records_at_risk,
         "pct"),
        ("marketer risk", lambda r: r.marketer, "pct"),
    ]
    return [{"label": label, "before": get(before, pick), "after": get(after, pick),
             "format": fmt} for label, pick, fmt in rows]


def _attack_rows(before, after) -> list[dict]:
    if before is None:
        return []
    rows = [("external people", lambda a: a.external),
            ("re-identified (match exactly 1 record)", lambda a: a.reidentified),
            (f"hidden among {before.k} or more", lambda a: a.hidden),
            ("release records singled out", lambda a: a.records_reidentified)]
    for name in before.learned:
        rows.append((f"{name} learned with certainty",
                     lambda a, n=name: a.learned.get(n, 0)))
    return [{"label": label, "before": pick(before),
             "after": None if after is None else pick(after)} for label, pick in rows]


def _sizes_png(run: Run) -> str | None:
    if run.risk_after is None:
        return None
    before = run.risk_before.sizes if run.risk_before is not None else None
    return class_sizes(run.risk_after.sizes, before, k=workflow.k_of(run.spec))


def tradeoff_svg(points: list[dict], width: int = 560, height: int = 220) -> str:
    """Loss and suppressed share against k, as a small inline SVG (no script, no fonts);
    with accuracies in the points, a model's accuracy too, the input's and the zero rule's
    as dashed lines.

    >>> svg = tradeoff_svg([{"k": 2, "loss": 0.1, "suppressed": 0.0},
    ...                     {"k": 10, "loss": 0.4, "suppressed": 0.02}])
    >>> svg.startswith("<svg") and svg.count("<circle") == 4
    True
    """
    from markupsafe import escape

    done = [p for p in points if p.get("loss") is not None]
    if not done:
        return ""
    left, right, top, bottom = 48, 36, 16, 36
    ks = np.log([p["k"] for p in done])
    span = max(float(ks.max() - ks.min()), 1e-9)

    def x(k: float) -> float:
        return left + (math.log(k) - float(ks.min())) / span * (width - left - right)

    def y(v: float) -> float:
        return top + (1 - min(max(v, 0.0), 1.0)) * (height - top - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
             f'role="img" aria-label="loss and suppression against k" class="plot">']
    for v in (0, 0.25, 0.5, 0.75, 1):
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                     f'class="grid"/><text x="{left - 6}" y="{y(v) + 4:.1f}" '
                     f'text-anchor="end">{100 * v:.0f}%</text>')
    for p in done:
        parts.append(f'<text x="{x(p["k"]):.1f}" y="{height - 14}" text-anchor="middle">'
                     f'k={escape(str(p["k"]))}</text>')
    lines = [("loss", "loss"), ("suppressed", "supp")]
    if all(p.get("accuracy") is not None for p in done):
        lines.append(("accuracy", "acc"))
        for key, what in (("input_accuracy", "input"), ("baseline", "zero rule")):
            level = y(done[0][key])
            parts.append(f'<line x1="{left}" x2="{width - right}" y1="{level:.1f}" '
                         f'y2="{level:.1f}" class="acc ref"><title>accuracy, {what}: '
                         f'{100 * done[0][key]:.1f}%</title></line>')
    for key, css in lines:
        coords = " ".join(f"{x(p['k']):.1f},{y(p[key]):.1f}" for p in done)
        parts.append(f'<polyline points="{coords}" class="{css}"/>')
        parts.extend(f'<circle cx="{x(p["k"]):.1f}" cy="{y(p[key]):.1f}" r="3.5" '
                     f'class="{css}"><title>k={p["k"]}: {key} {100 * p[key]:.1f}%</title>'
                     f'</circle>' for p in done)
    parts.append(f'<text x="{left + 10}" y="{top + 12}" class="loss">information loss</text>'
                 f'<text x="{left + 10}" y="{top + 28}" class="supp">records suppressed</text>')
    if lines[-1][0] == "accuracy":
        parts.append(f'<text x="{left + 10}" y="{top + 44}" class="acc">accuracy predicting '
                     f'{escape(str(done[0]["target"]))} (dashed: the input\'s, the zero '
                     'rule\'s)</text>')
    parts.append('</svg>')
    return "".join(parts)


# -- the release beside the input -------------------------------------------------------------

#: records a page of the side-by-side table shows
BESIDE_ROWS = 50
#: what the side-by-side table can show: every record, those in the smallest classes, the
#: suppressed ones
BESIDE_SHOWS = ("all", "small", "suppressed")
#: light colours for the classes (a class keeps its colour on every page)
CLASS_COLOURS = ("#e8f1fb", "#fdf0e2", "#e9f6ec", "#f6e9f4", "#fbf7dd", "#e6f4f4",
                 "#f3ece4", "#ecebf8", "#f9e7e7", "#eef3e2")


def beside(run: Run, session: Session, page: int = 1, show: str = "all") -> dict | None:
    """One page of the input's records next to what the release shows of them: the
    quasi-identifiers and sensitive columns (never an identifier or the person key), each
    record's class (its colour and size) or that it was suppressed; ``show`` picks every
    record, the smallest classes first, or the suppressed records. None where the records
    cannot be matched (a table in a database, Mondrian, a release in parts)."""
    matched = _matched(run, session)
    if matched is None:
        return None
    show = show if show in BESIDE_SHOWS else "all"
    order = matched["order"][show]
    pages = max(1, -(-len(order) // BESIDE_ROWS))
    page = min(max(int(page), 1), pages)
    rows = order[(page - 1) * BESIDE_ROWS:page * BESIDE_ROWS]
    qis, sensitive = matched["qis"], matched["sensitive"]
    body = []
    for r in rows:
        cls = int(matched["classes"][r])
        body.append({
            "number": int(r) + 1,
            "input": [str(matched["input"][c][r]) for c in qis],
            "release": ["*" if matched["suppressed"][r] else str(matched["shown"][c][r])
                        for c in qis],
            "sensitive": [str(matched["input"][c][r]) for c in sensitive],
            "suppressed": bool(matched["suppressed"][r]),
            "size": 0 if cls < 0 else int(matched["sizes"][cls]),
            "colour": "" if cls < 0 else CLASS_COLOURS[cls % len(CLASS_COLOURS)]})
    return {"qis": qis, "sensitive": sensitive, "rows": body, "page": page, "pages": pages,
            "show": show, "shows": BESIDE_SHOWS, "records": len(order),
            "k": workflow.k_of(run.spec), "suppressed": int(matched["suppressed"].sum())}


def _matched(run: Run, session: Session) -> dict | None:
    """Each input record matched with its release (made once per run)."""
    if run.beside is not None:
        return run.beside or None
    result = run.result
    if session.data.ref is not None or not result.levels or result.recoded_parts:
        run.beside = {}
        return None
    from blendin.utility import align

    spec = result.spec
    qis = list(spec.quasi_identifiers)
    sensitive = [c for c in spec.sensitive if c in session.data.table.column_names]
    table = session.data.table
    try:
        a = align(table, result.table, qis, [result.hierarchies[q] for q in qis],
                  spec.missing)
    except BlendinError:
        run.beside = {}
        return None
    key = combine_keys(a.general, [len(h.labels[lv]) for h, lv in zip(a.hierarchies,
                                                                       a.levels)])
    key = np.where(a.suppressed, -1, key)
    found, classes = np.unique(key, return_inverse=True)
    classes = classes.reshape(-1)
    sizes = np.bincount(classes)
    if len(found) and found[0] == -1:  # the suppressed records are no class
        classes, sizes = classes - 1, sizes[1:]
    kept = np.flatnonzero(~a.suppressed)
    # smallest classes first, each class together
    small = kept[np.lexsort((kept, classes[kept], sizes[classes[kept]]))] if len(kept) else kept
    run.beside = {
        "qis": qis, "sensitive": sensitive, "suppressed": a.suppressed, "classes": classes,
        "sizes": sizes,
        "input": {c: table.column(c).to_numpy(zero_copy_only=False) for c in
                  [*qis, *sensitive]},
        "shown": {q: np.asarray(h.labels[lv], dtype=object)[a.general[:, i]]
                  for i, (q, h, lv) in enumerate(zip(qis, a.hierarchies, a.levels))},
        "order": {"all": np.arange(a.records), "small": small,
                  "suppressed": np.flatnonzero(a.suppressed)}}
    return run.beside
