"""The release report: one self-contained HTML file a data steward can read.

:func:`report_context` gathers the figures (what was released, the spec in words, the
checker's verdicts, utility, risk of the input and of the release, plots); the Jinja2
template ``templates/report.html.j2`` lays them out with autoescaping, so a value such as
``<b>`` in the data shows as text. Styles are inline and plots are base64 PNGs: the file
needs no network and no other file.

Only quasi-identifier values that appear in the release are shown (a few examples per
column), and counts; never a sensitive value, and nothing about one class.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.errors import BlendinError
from blendin.frequency import as_text
from blendin.io import write_text
from blendin.report import plots
from blendin.risk import RiskReport, class_sizes, risk

TEMPLATE = "report.html.j2"
#: example released values shown per quasi-identifier
EXAMPLES = 3
#: longest description of a hierarchy builder shown before it is cut
DESCRIPTION_WIDTH = 70

#: every utility metric in plain words (all are losses: lower is better)
UTILITY_MEANINGS: dict[str, str] = {
    "loss": "Share of detail lost per value, averaged over all quasi-identifier values: "
            "0 is the original data, 1 is every value shown as *.",
    "gcp": "Global certainty penalty: how wide the released ranges and categories are "
           "compared with the whole domain, averaged over values (0 to 1).",
    "precision": "How far up its hierarchy each value was moved, averaged (0 is the "
                 "original values, 1 is every value *).",
    "entropy": "Information lost, in bits: the uncertainty about the original value once "
               "the released one is known, summed over all values.",
    "height": "Sum of the generalization levels chosen for the quasi-identifiers.",
    "discernibility": "Sum over classes of the class size squared, plus the number of "
                      "records for each suppressed record: penalizes large classes.",
    "aecs": "Average equivalence class size: records per class (suppressed records count "
            "as one class). The closer to k, the more detail is kept.",
}

#: what each privacy model promises, with the model's parameters filled in
MODEL_MEANINGS: dict[str, str] = {
    "k-anonymity": "Every record shares its quasi-identifier values with at least {k_1} "
                   "other records (classes of at least {k}).",
    "distinct-l-diversity": "Every class holds at least {l} different values of "
                            "{attribute}.",
    "entropy-l-diversity": "The values of {attribute} in every class are at least as "
                           "spread out as {l} equally frequent values (entropy of at "
                           "least log {l}).",
    "recursive-cl-diversity": "In every class the most frequent value of {attribute} is "
                              "less frequent than {c} times the values from the {l}-th "
                              "most frequent on, together.",
    "t-closeness": "In every class the distribution of {attribute} is within {t} of its "
                   "distribution over all records ({distance} distance).",
}

#: bars of the risk plot: label, attribute of the RiskReport
RISK_BARS = (
    ("prosecutor\nhighest", lambda r: r.prosecutor.highest),
    ("prosecutor\naverage", lambda r: r.prosecutor.average),
    ("records\nat risk", lambda r: r.prosecutor.records_at_risk),
    ("marketer", lambda r: r.marketer),
    ("sample\nuniques", lambda r: r.sample_uniques / r.records),
)


def write_report(result, path: str | os.PathLike, *, original=None,
                 threshold: float = 0.2) -> Path:
    """Write the release report of ``result`` (from :func:`blendin.anonymize`) as HTML.

    ``original`` is the input the release was made from (the same frame or file path): with
    it the report compares the risk before and after; without it, only the release's risk
    is shown. ``threshold`` is the record risk above which a record counts as at risk. The
    file is written atomically: on failure nothing is left and an existing file is kept.

    >>> import tempfile, pathlib, pandas as pd
    >>> from blendin.anonymize import anonymize
    >>> from blendin.hierarchy.core import Hierarchy
    >>> from blendin.models import KAnonymity
    >>> from blendin.spec import Spec
    >>> df = pd.DataFrame({"age": ["31", "32", "33", "47"]})
    >>> age = Hierarchy.from_rows([[a, a[0] + "0-" + a[0] + "9", "*"] for a in df["age"]])
    >>> result = anonymize(df, Spec(quasi_identifiers={"age": age}, models=[KAnonymity(2)],
    ...                             max_suppression=0.25))
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "report.html"
    >>> write_report(result, path, original=df).read_text().startswith("<!DOCTYPE html>")
    True
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise BlendinError(f"folder {str(folder)!r} does not exist",
                           fix="create it first or write the report somewhere else")
    return write_text(path, render_report(result, original=original, threshold=threshold))


def render_report(result, *, original=None, threshold: float = 0.2) -> str:
    """The report as HTML text (see :func:`write_report`)."""
    context = report_context(result, original=original, threshold=threshold)
    return _template().render(**context)


def _template():
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("blendin.report", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.get_template(TEMPLATE)


# -- the figures -----------------------------------------------------------------------------


def report_context(result, *, original=None, threshold: float = 0.2) -> dict[str, Any]:
    """Everything the template shows, as plain values (numbers already formatted)."""
    spec = result.spec
    release = result.table
    qis = list(spec.quasi_identifiers)
    before_table = _input_table(original, spec, result.records)
    after = _risk(release, spec, threshold)
    before = _risk(before_table, spec, threshold) if before_table is not None else None
    mondrian = not result.levels and result.algorithm == "mondrian"
    return {
        "title": "Release report",
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "version": _version(),
        "passed": _passed(result.check),
        "released": _released(result),
        "identifiers": list(spec.identifiers),
        "quasi_identifiers": _qi_rows(result, release, mondrian),
        "sensitive": list(spec.sensitive),
        "insensitive": _other_columns(release, spec),
        "mondrian": mondrian,
        "models": _model_rows(result.check, spec.models),
        "utility": _utility_rows(result.utility, _minimized(result)),
        "risk": _risk_rows(before, after, list(spec.sensitive)),
        "threshold": _number(threshold),
        "has_input": before is not None,
        "plots": _plots(result, release, before_table, before, after, qis, mondrian),
    }


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("blendin")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _passed(report) -> bool:
    return bool(getattr(report, "passed", False))


def _input_table(original, spec, records: int) -> pa.Table | None:
    """The input's QI and sensitive columns, read as the release was (spec's delimiter)."""
    if original is None:
        return None
    from blendin.io import Source

    source = original if isinstance(original, Source) else Source(
        original, delimiter=spec.delimiter, encoding=spec.encoding)
    columns = list(dict.fromkeys([*spec.quasi_identifiers, *spec.sensitive]))
    spec.validate_columns(source.columns)
    table = source.read_all(columns)
    if table.num_rows != records:
        raise BlendinError(
            f"the original has {table.num_rows:,} records but the release was made from "
            f"{records:,}",
            fix="pass the input the release was made from as original=")
    return table


def _risk(table: pa.Table, spec, threshold: float) -> RiskReport | None:
    """The risk of a table on the spec's QIs; None when every record is suppressed."""
    qis = list(spec.quasi_identifiers)
    if not table.num_rows or not class_sizes(table, qis, (), spec.missing)[0].sum():
        return None
    return risk(table, qis, sensitive=list(spec.sensitive), threshold=threshold,
                missing=spec.missing)


def _count(n: int) -> str:
    return f"{int(n):,}"


def _pct(x: float) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{100 * x:.1f}%"


def _number(x) -> str:
    """A figure as people read it: thousands separators, 4 significant digits."""
    if x is None:
        return "–"
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return _count(x)
    x = float(x)
    if math.isnan(x):
        return "–"
    if x.is_integer() and abs(x) >= 1000:
        return _count(int(x))
    return f"{x:.4g}"


def _row(key: str, label: str, value: str, note: str = "") -> dict[str, str]:
    return {"key": key, "label": label, "value": value, "note": note}


def _released(result) -> list[dict[str, str]]:
    records, suppressed = result.records, result.suppressed
    dropped = result.suppressed_mode == "drop"
    limit = result.spec.max_suppression
    share = suppressed / records if records else 0.0
    rows = [
        _row("records", "Records in the input", _count(records)),
        _row("released", "Records released", _count(records - suppressed if dropped
                                                      else records)),
        _row("suppressed", "Records suppressed", _count(suppressed),
             f"{_pct(share)} of the input; "
             + ("removed from the release" if dropped else "kept with * in every "
                "quasi-identifier")),
        _row("limit", "Suppression limit", f"{100 * limit:g}%",
             f"at most {_count(math.floor(limit * records + 1e-9))} records"),
        _row("classes", "Equivalence classes", _count(_classes(result)),
             "groups of records with the same quasi-identifier values"),
        _row("smallest", "Smallest class", _smallest(result), ""),
        _row("algorithm", "Algorithm", _algorithm(result)),
        _row("metric", "Utility metric minimized", _minimized(result) or "–",
             "" if _minimized(result) else "this release did not minimize a metric"),
        _row("time", "Time", f"{result.seconds:.3f} s"),
    ]
    if result.levels and result.applied_from is None:
        rows.insert(8, _row("nodes", "Nodes checked", _count(result.nodes_checked),
                            _lattice_note(result)))
    if result.algorithm == "mondrian" and result.classes != _classes(result):
        rows.insert(5, _row("groups", "Mondrian groups", _count(result.classes),
                            "groups with the same released values count as one class"))
    rows.extend(_search_rows(result))
    return rows


def _search_rows(result) -> list[dict[str, str]]:
    """Why auto chose the algorithm, whether the node is proven optimal, and the parts
    that recoded suppressed records."""
    rows = []
    if getattr(result, "algorithm_reason", ""):
        rows.append(_row("auto", "Why this algorithm", result.algorithm_reason))
    proven = getattr(result, "proven_optimal", None)
    if proven is not None and result.applied_from is None:
        rows.append(_row("proven", "Proven optimal", "yes" if proven else "no",
                         "" if proven else "the best node found within the time budget"))
    for i, part in enumerate(getattr(result, "recoded_parts", []), start=2):
        levels = ", ".join(f"{q} {lv}" for q, lv in part["levels"].items())
        rows.append(_row(f"part{i}", f"Part {i}: suppressed records recovered",
                         _count(part["records"]), f"released at levels {levels}"))
    return rows


def _classes(result) -> int:
    """Classes of the release as the checker regrouped them (the figure that was verified)."""
    return int(result.check.classes)


def _smallest(result) -> str:
    smallest = result.check.min_class_size
    return _count(smallest) if smallest else "–"


def _algorithm(result) -> str:
    if result.applied_from is not None:
        return f"saved solution re-applied ({result.applied_from})"
    names = {"optimal": "optimal full-domain search", "exhaustive": "exhaustive search",
             "binary": "binary search on height (Samarati)", "datafly": "Datafly (greedy)",
             "heuristic": "anytime heuristic (best node found within the budget)",
             "mondrian": "Mondrian (multidimensional, local recoding)"}
    return names.get(result.algorithm, result.algorithm)


def _minimized(result) -> str | None:
    """The metric the search minimized: none for Mondrian (it cuts at medians) or a saved
    solution (re-applied as it was)."""
    if result.algorithm == "mondrian" or result.applied_from is not None:
        return None
    return result.metric


def _lattice_note(result) -> str:
    size = int(getattr(result.solution, "lattice_size", 0) or np.prod(
        list(result.heights.values())))
    return f"of {_count(size)} combinations of levels"


def _qi_rows(result, release: pa.Table, mondrian: bool) -> list[dict[str, str]]:
    spec, rows = result.spec, []
    for q, builder in spec.quasi_identifiers.items():
        h = result.hierarchies.get(q)
        if mondrian:
            level = "local (Mondrian)"
        elif q in result.levels and h is not None:
            level = f"{result.levels[q]} of {h.height - 1}"
        else:
            level = "–"
        rows.append({
            "name": q,
            "kind": h.kind if h is not None else "–",
            "hierarchy": _describe(builder),
            "level": level,
            "distinct": _count(len(h.ground)) if h is not None else "–",
            "examples": _examples(release, q, spec.missing),
        })
    return rows


def _describe(builder) -> str:
    from blendin.hierarchy.core import Hierarchy

    if isinstance(builder, Hierarchy):
        return f"given hierarchy ({builder.height} levels)"
    text = repr(builder)
    return text if len(text) <= DESCRIPTION_WIDTH else text[:DESCRIPTION_WIDTH - 1] + "…"


def _examples(release: pa.Table, column: str, missing: str) -> list[str]:
    """The most frequent released values of a QI (they are in the release anyway)."""
    if column not in release.column_names or not release.num_rows:
        return []
    counts = pc.value_counts(as_text(release.column(column), missing))
    values = counts.field("values").to_numpy(zero_copy_only=False)
    order = np.argsort(-counts.field("counts").to_numpy(), kind="stable")[:EXAMPLES]
    return [str(values[i]) for i in order]


def _other_columns(release: pa.Table, spec) -> list[str]:
    named = {*spec.quasi_identifiers, *spec.sensitive, *spec.identifiers}
    return [c for c in release.column_names if c not in named]


def _model_rows(report, models: Sequence) -> list[dict[str, Any]]:
    """The checker's verdict per model (it checked the spec's models, in order)."""
    rows = []
    for m, model in zip(getattr(report, "models", []), models):
        params = {k: v for k, v in model.to_dict().items()
                  if v is not None and not k.startswith("hierarchy")}
        rows.append({
            "name": m.name,
            "meaning": _meaning(m.model, params),
            "figure_name": m.figure_name,
            "figure": _number(m.figure),
            "required": _required(model, params),
            "passed": m.passed,
            "violating": _count(m.violating_records),
        })
    return rows


def _meaning(key: str, params: dict) -> str:
    template = MODEL_MEANINGS.get(key)
    if template is None:
        return ""
    values = {k: v if isinstance(v, str) else _number(v) for k, v in params.items()}
    if "k" in params:
        values["k_1"] = _number(int(params["k"]) - 1)
    try:
        return template.format(**values)
    except KeyError:
        return ""


#: the parameter a model's figure is compared with
BOUNDS = {"k-anonymity": "k", "t-closeness": "t"}


def _required(model, params: dict) -> str:
    name = BOUNDS.get(model.key, "l")
    if name not in params:
        return ""
    sign = "≥" if getattr(model, "larger_is_better", True) else "≤"
    return f"{sign} {_number(params[name])}"


def _utility_rows(utility: dict, minimized: str | None) -> list[dict[str, Any]]:
    return [{
        "name": name,
        "value": _number(value),
        "meaning": UTILITY_MEANINGS.get(name, ""),
        "better": "lower" if name in UTILITY_MEANINGS else "",
        "minimized": name == minimized,
    } for name, value in utility.items()]


def _risk_rows(before: RiskReport | None, after: RiskReport | None,
               sensitive: Sequence[str]) -> list[dict[str, str]]:
    def both(key, label, get, note=""):
        return {"key": key, "label": label, "note": note,
                "before": get(before) if before is not None else "–",
                "after": get(after) if after is not None else "–"}

    def share(count, r):
        return f"{_count(count)} ({_pct(count / r.records)})"

    rows = [
        both("risk-records", "Records measured",
             lambda r: _count(r.records), "suppressed records are not at risk"),
        both("risk-classes", "Classes", lambda r: _count(r.classes)),
        both("risk-smallest", "Smallest class", lambda r: _count(r.sizes.min())),
        both("sample-uniques", "Sample uniques", lambda r: share(r.sample_uniques, r),
             "records alone in their class"),
        both("prosecutor-highest", "Prosecutor risk, highest",
             lambda r: _pct(r.prosecutor.highest),
             "attacker knows the person is in the data: 1 / class size"),
        both("prosecutor-average", "Prosecutor risk, average",
             lambda r: _pct(r.prosecutor.average)),
        both("prosecutor-at-risk", "Records above the threshold (prosecutor)",
             lambda r: _pct(r.prosecutor.records_at_risk)),
        both("journalist-highest", "Journalist risk, highest",
             lambda r: _pct(r.journalist.highest),
             "attacker does not know whether the person is in the data; without "
             "population figures the sample stands for it (same as prosecutor)"),
        both("journalist-average", "Journalist risk, average",
             lambda r: _pct(r.journalist.average)),
        both("journalist-at-risk", "Records above the threshold (journalist)",
             lambda r: _pct(r.journalist.records_at_risk)),
        both("marketer", "Marketer risk", lambda r: _pct(r.marketer),
             "expected share of records re-identified in a mass attack"),
    ]
    for i, s in enumerate(sensitive):
        rows.append(both(
            f"homogeneous-{i}", f"Classes with one value of {s}",
            lambda r, s=s: (f"{_count(r.homogeneity[s].classes)} classes, "
                            f"{share(r.homogeneity[s].records, r)} records"),
            "everyone in such a class has the same value: it is disclosed"))
    return rows


def _k(result) -> int | None:
    ks = [int(m.k) for m in result.spec.models if getattr(m, "key", "") == "k-anonymity"]
    return max(ks) if ks else None


def _distinct(table: pa.Table, qis: Sequence[str], missing: str) -> dict[str, int]:
    out = {}
    for q in qis:
        values = pc.unique(as_text(table.column(q), missing))
        out[q] = len(values) - int(pc.sum(pc.equal(values, "*")).as_py() or 0)
    return out


def _plots(result, release, before_table, before, after, qis, mondrian) -> list[dict]:
    what = "Mondrian groups" if mondrian else "equivalence classes"
    out = []
    if after is not None:
        out.append({"key": "plot-sizes", "title": f"Sizes of the {what}",
                    "caption": "How many classes have each size, in the release (bars) and "
                               "the input (outline). Classes left of the k line cannot exist "
                               "in the release.",
                    "png": plots.class_sizes(after.sizes, None if before is None
                                             else before.sizes, k=_k(result), what=what)})
    if result.levels:
        out.append({"key": "plot-levels", "title": "Generalization per quasi-identifier",
                     "caption": "The chosen level of each hierarchy, from the original "
                                "values (0) to everything shown as * (the top).",
                     "png": plots.levels(result.levels, result.heights)})
    else:
        out.append({"key": "plot-distinct", "title": "Distinct values per quasi-identifier",
                    "caption": "How many different values each quasi-identifier shows; "
                               "fewer values means coarser groups.",
                    "png": plots.distinct_values(
                        _distinct(release, qis, result.spec.missing),
                        None if before_table is None
                        else _distinct(before_table, qis, result.spec.missing))})
    if after is not None:
        labels = [label for label, _ in RISK_BARS]
        out.append({"key": "plot-risk", "title": "Risk before and after",
                    "caption": "Re-identification risk figures of the input and the release, "
                               "in percent.",
                    "png": plots.risks(labels, [get(after) for _, get in RISK_BARS],
                                       None if before is None
                                       else [get(before) for _, get in RISK_BARS])})
    return out
