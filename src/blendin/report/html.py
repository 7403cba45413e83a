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

from blendin.attack import attack
from blendin.codes import as_text
from blendin.errors import BlendinError
from blendin.io import Source, to_arrow, write_text
from blendin.labels import KINDS
from blendin.lattice import suppression_limit
from blendin.models.dp import DifferentialPrivacy, sampled
from blendin.models.presence import subset_column, subset_rows
from blendin.report import plots
from blendin.report.page import template, version
from blendin.report.utility_html import release_keeps
from blendin.report.words import (
    count,
    describe_rule,
    example_path,
    levels_in_words,
    number,
    pct,
)
from blendin.risk import RiskReport, class_sizes, risk
from blendin.suda import DIS_FRACTION
from blendin.summaries import (
    SAFEPUB,
    cells_text,
    fully_generalized,
    not_proven,
    percent_of,
    safepub_sample,
    safepub_words,
)

TEMPLATE = "report.html.j2"
#: example released values shown per quasi-identifier
EXAMPLES = 3

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
    "arx-loss": "ARX's loss: the share of each quasi-identifier's domain the released "
                "values cover, averaged over the values (0 is the original data, 1 is "
                "every value *).",
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
    "average-risk": "The average re-identification risk of the released records (1 / class "
                    "size) is at most {threshold}.",
    "sample-uniqueness": "At most {threshold} of the released records are alone in their "
                         "class.",
    "population-uniqueness": "At most {threshold} of the population is estimated to be "
                             "unique on the released values ({estimator}).",
    "k-map": "Every class stands for at least {k} people of the population (estimated "
             "from its records: the class size required).",
    "individual-risk": "Every released record's individual risk, estimated from the sampling "
                       "weights of its class as sdcMicro does, is at most {threshold}.",
    "beta-likeness": "No value of {attribute} is more than {beta} times more frequent, "
                     "relatively, in a class than overall ({variant}).",
    "delta-disclosure": "In every class the share of each value of {attribute} is within "
                        "a factor 2^{delta} of its overall share.",
    "delta-presence": "Of the people of the population in every class, a share between "
                      "{dmin} and {dmax} is in the release (no one is surely in or out).",
    "differential-privacy": "A random sample, generalized, with classes of fewer records "
                            "than SafePub's k suppressed: ({epsilon}, {delta})-differentially "
                            "private.",
}

#: the meanings that count records, as they read when classes count people (a person key)
PEOPLE_MEANINGS: dict[str, str] = {
    "k-anonymity": "Every person shares their quasi-identifier values with at least {k_1} "
                   "other people (classes of at least {k} people).",
    "average-risk": "The average re-identification risk of the released people (1 / class "
                    "size in people) is at most {threshold}.",
    "sample-uniqueness": "At most {threshold} of the released people are alone in their "
                         "class.",
}

#: bars of the risk plot: label, attribute of the RiskReport
RISK_BARS = (
    ("prosecutor\nhighest", lambda r: r.prosecutor.highest),
    ("prosecutor\naverage", lambda r: r.prosecutor.average),
    ("records above\nthreshold", lambda r: r.prosecutor.records_at_risk),
    ("marketer", lambda r: r.marketer),
    ("sample\nuniques", lambda r: r.sample_uniques / r.records),
)


def write_report(result, path: str | os.PathLike, *, original=None,
                 threshold: float | None = None, external=None, on=None,
                 population: float | None = None) -> Path:
    """Write the release report of ``result`` (from :func:`blendin.anonymize`) as HTML.

    ``original`` is the input the release was made from (the same frame or file path): with
    it the report compares the risk before and after; without it, only the release's risk
    is shown. ``threshold`` is the record risk above which a record counts as at risk; by
    default ``1/k`` for the spec's k-anonymity (a record above it is in a class smaller
    than k), else 0.2. ``external`` is an identified table (a voter list; frame or path):
    the report then shows the linking attack on the input and on the release, joined on
    ``on`` (default: the quasi-identifiers the external table has). ``population`` is the
    size of the population the data was drawn from: the report adds the population-based
    risk. The file is written atomically: on failure nothing is left and an existing file
    is kept.

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
    return write_text(path, render_report(result, original=original, threshold=threshold,
                                          external=external, on=on, population=population))


def render_report(result, *, original=None, threshold: float | None = None, external=None,
                  on=None, population: float | None = None) -> str:
    """The report as HTML text (see :func:`write_report`)."""
    context = report_context(result, original=original, threshold=threshold,
                             external=external, on=on, population=population)
    return template(TEMPLATE).render(**context)


# -- the figures -----------------------------------------------------------------------------


def report_context(result, *, original=None, threshold: float | None = None, external=None,
                   on=None, population: float | None = None) -> dict[str, Any]:
    """Everything the template shows, as plain values (numbers already formatted)."""
    spec = result.spec
    release = result.table
    qis = list(spec.quasi_identifiers)
    threshold, threshold_note = risk_threshold(spec, threshold)
    before_table = _input_table(original, spec, result.records)
    # every QI at its top: the records show * everywhere and are released, not suppressed
    # (read as suppressed, the release had no risk to show); a * then matches any value
    everything = bool(result.levels) and result.suppressed_mode == "drop" and all(
        result.levels[q] == result.heights[q] - 1 for q in result.levels)
    after = _risk(result.table_with_people() if result.release_people is not None
                  else release, spec, threshold, population,
                  cells=spec.suppression == "cells" or everything)
    before = (_risk(before_table, spec, threshold, population)
              if before_table is not None else None)
    mondrian = not result.levels and result.algorithm == "mondrian"
    attack = _attack(result, release, before_table, external, on)
    return {
        "title": "Release report",
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "version": version(),
        "passed": _passed(result.check),
        "warnings": list(getattr(result, "warnings", [])),
        "released": _released(result),
        "identifiers": list(spec.identifiers),
        "person": spec.person,
        "quasi_identifiers": _qi_rows(result, release, mondrian),
        "sensitive": list(spec.sensitive),
        "insensitive": _other_columns(release, spec),
        "mondrian": mondrian,
        "models": _model_rows(result.check, spec.models),
        "transformed": _transformed(result),
        "changed": {c: {"microaggregate": "microaggregated", "pram": "randomized by PRAM"}
                    .get(t.kind, t.kind)
                    for t in getattr(result, "transformed", []) for c in t.columns},
        "keeps": release_keeps(result, before_table),
        "utility": utility_rows(result.utility, _minimized(result)),
        "risk": _risk_rows(before, after, list(spec.sensitive), population,
                           _short_threshold_note(spec, threshold, _unit(before, after))),
        "risk_models": _risk_models(result.check, spec.models),
        "threshold": number(threshold),
        "threshold_note": (threshold_note.replace("records", "people")
                           .replace("a record is", "a person is")
                           if _unit(before, after) == "people" else threshold_note),
        "risk_one": "person" if _unit(before, after) == "people" else "record",
        "population": number(population) if population is not None else None,
        "has_input": before is not None,
        "attack": attack,
        "plots": _plots(result, release, before_table, before, after, qis, mondrian),
    }


def _passed(report) -> bool:
    return bool(getattr(report, "passed", False))


def _input_table(original, spec, records: int) -> pa.Table | None:
    """The input's person key, QI and sensitive columns (and the sampling weights and
    households the spec names), read as the release was (the spec's delimiter)."""
    if original is None:
        return None

    source = original if hasattr(original, "read_all") else Source(
        original, delimiter=spec.delimiter, encoding=spec.encoding)

    survey = [c for c in (spec.sampling_weights, spec.household) if c]
    columns = list(dict.fromkeys([*([spec.person] if spec.person else []),
                                  *spec.quasi_identifiers, *spec.sensitive, *survey]))
    spec.validate_columns(source.columns)

    subset = subset_column(spec.models, source.columns)
    drawn = [m for m in spec.models if isinstance(m, DifferentialPrivacy)]
    if drawn:  # SafePub: the release was made from the sample (the same draw again)
        table = pa.concat_tables(sampled(source.batches(columns), drawn[0]))
    elif subset is None:
        table = source.read_all(columns)
    else:  # delta-presence: the release was made from the subset's records
        table = pa.concat_tables(subset_rows(source.batches([*columns, subset]), subset))
        table = table.select(columns)
    if table.num_rows != records:
        raise BlendinError(
            f"the original has {table.num_rows:,} records but the release was made from "
            f"{records:,}",
            fix="pass the input the release was made from as original=")
    return table


#: the report finds the special uniques (SUDA2) up to this many quasi-identifiers
SUDA_QIS = 8

#: the risk threshold when the spec names no k
DEFAULT_THRESHOLD = 0.2


def risk_threshold(spec, threshold: float | None = None) -> tuple[float, str]:
    """The record risk above which a record counts as at risk, and why that figure.

    By default ``1/k`` for the spec's (largest) k: a record is above it exactly when its
    class is smaller than k, so a valid k-anonymous release has none; without k-anonymity
    in the spec, 0.2 (1 in 5).

    >>> from blendin.spec import Spec
    >>> from blendin.models import KAnonymity
    >>> risk_threshold(Spec(models=[KAnonymity(4)]))[0]
    0.25
    """
    if threshold is not None:
        return float(threshold), "as given for this report"
    ks = [int(m.k) for m in spec.models if getattr(m, "key", "") == "k-anonymity"]
    if ks:
        k = max(ks)
        return 1 / k, (f"1/k for the spec's k = {k}: a record is above it when its class "
                       f"has fewer than {k} records, which a valid release never has; the "
                       "input's figure shows how many records the spec protects")
    return DEFAULT_THRESHOLD, ("the spec has no k-anonymity, so 0.2 (1 in 5), a common "
                               "choice; pass threshold= to the report for another")


def _short_threshold_note(spec, threshold: float, unit: str = "records") -> str:
    """The row's note: what being above the threshold means for this spec."""
    ks = [int(m.k) for m in spec.models if getattr(m, "key", "") == "k-anonymity"]
    if ks and math.isclose(threshold, 1 / max(ks)):
        return (f"risk above 1/k = {number(threshold)}: in a class of fewer than "
                f"k = {max(ks)} {unit}")
    return f"risk above {number(threshold)}"


def _risk(table: pa.Table, spec, threshold: float,
          population: float | None = None, cells: bool = False) -> RiskReport | None:
    """The risk of a table on the spec's QIs; None when every record is suppressed.
    ``cells``: a release with blank cells, whose ``*`` matches any value."""
    qis = list(spec.quasi_identifiers)
    if not table.num_rows or (
            not cells and not class_sizes(table, qis, (), spec.missing)[0].sum()):
        return None
    person = spec.person if spec.person in table.column_names else None  # the input's
    survey = {k: getattr(spec, name) for k, name in (("weights", "sampling_weights"),
                                                     ("household", "household"))
              if getattr(spec, name) in table.column_names}
    # special uniques over every subset of the QIs: 2^8 - 1 of them at most here
    suda = person is None and not cells and len(qis) <= SUDA_QIS
    return risk(table, qis, sensitive=list(spec.sensitive), threshold=threshold,
                missing=spec.missing, population=population, person=person, cells=cells,
                suda=suda, **survey)


def _row(key: str, label: str, value: str, note: str = "") -> dict[str, str]:
    return {"key": key, "label": label, "value": value, "note": note}


def _released(result) -> list[dict[str, str]]:
    records, suppressed = result.records, result.suppressed
    dropped = result.suppressed_mode == "drop"
    limit = result.spec.max_suppression
    share = suppressed / records if records else 0.0
    rows = [
        _row("records", "Records in the input", count(records)),
        _row("released", "Records released", count(records - suppressed if dropped
                                                      else records)),
        _row("suppressed", "Records suppressed", count(suppressed),
             f"{pct(share)} of the input; "
             + ("removed from the release" if dropped else "kept with * in every "
                "quasi-identifier")),
        _row("limit", "Suppression limit", f"{100 * limit:g}%",
             f"at most {count(suppression_limit(limit, records))} records"),
        _row("classes", "Equivalence classes", count(_classes(result)),
             "groups of records with the same quasi-identifier values"),
        _row("smallest", "Smallest class", _smallest(result), ""),
        _row("algorithm", "Algorithm", _algorithm(result)),
        _row("metric", "Utility metric minimized", _minimized(result) or "–",
             "" if _minimized(result) else "this release did not minimize a metric"),
        _row("time", "Time", f"{result.seconds:.3f} s"),
    ]
    people = getattr(result, "people", None)
    if people:  # the classes and the limit count people
        gone = people["suppressed_people"]
        rows[1:1] = [
            _row("people", "People in the input", count(people["people"]),
                 "classes count people; a person is released whole or not at all"),
            _row("people_suppressed", "People suppressed", count(gone),
                 f"{pct(gone / people['people'] if people['people'] else 0.0)} of the "
                 "people"),
        ]
        most = suppression_limit(limit, people["people"])
        counted = {"smallest": "people", "limit": f"at most {count(most)} people",
                   "classes": "groups of people with the same quasi-identifier values"}
        rows = [{**r, "note": counted[r["key"]]} if r["key"] in counted else r for r in rows]
    if result.levels and result.applied_from is None and result.algorithm != SAFEPUB:
        rows.insert(10 if people else 8, _row("nodes", "Nodes checked",
                                              count(result.nodes_checked),
                                              _lattice_note(result)))
    if result.algorithm == "mondrian" and result.classes != _classes(result):
        rows.insert(5, _row("groups", "Mondrian groups", count(result.classes),
                            "groups with the same released values count as one class"))
    if result.algorithm == SAFEPUB:  # the input is the sample SafePub drew
        rows[0] = _row("records", "Records sampled", count(records),
                       f"{safepub_sample(result)}; the release is made from them")
    if getattr(result, "cells", None) is not None:
        rows = [r for r in rows if r["key"] != "suppressed"]
        short = result.short_records
        rows[2:2] = [_row("cells", "Cells blanked", cells_text(result.cells),
                          f"in {count(result.cell_records)} records, shown as *, which "
                          "matches any value; no record removed"),
                     _row("short", "Records short of k", count(short),
                          f"{pct(short / records if records else 0.0)} of the input, "
                          "before cells were blanked")]
        rows = [{**r, "label": "Fewest compatible records",
                 "note": "records that match a record wherever neither shows *"}
                if r["key"] == "smallest" else r for r in rows]
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
                         "" if proven else not_proven(result.algorithm)))
    for i, part in enumerate(getattr(result, "recoded_parts", []), start=2):
        levels = ", ".join(f"{q} {lv}" for q, lv in part["levels"].items())
        rows.append(_row(f"part{i}", f"Part {i}: suppressed records recovered",
                         count(part["records"]), f"released at levels {levels}"))
    return rows


def _classes(result) -> int:
    """Classes of the release as the checker regrouped them (the figure that was verified)."""
    return int(result.check.classes)


def _smallest(result) -> str:
    smallest = result.check.min_class_size
    return count(smallest) if smallest else "–"


def _algorithm(result) -> str:
    if result.applied_from is not None:
        return f"saved solution re-applied ({result.applied_from})"
    names = {"optimal": "optimal full-domain search", "exhaustive": "exhaustive search",
             "binary": "binary search on height (Samarati)", "datafly": "Datafly (greedy)",
             "heuristic": "anytime heuristic (best node found within the budget)",
             "mondrian": "Mondrian (multidimensional, local recoding)",
             SAFEPUB: safepub_words(result)}
    return names.get(result.algorithm, result.algorithm)


def _minimized(result) -> str | None:
    """The metric the search minimized: none for Mondrian (it cuts at medians) or a saved
    solution (re-applied as it was), nor for SafePub (its node is fixed, or drawn at
    random)."""
    if result.algorithm in ("mondrian", SAFEPUB) or result.applied_from is not None:
        return None
    return result.metric


def _lattice_note(result) -> str:
    size = int(getattr(result.solution, "lattice_size", 0) or np.prod(
        list(result.heights.values())))
    return f"of {count(size)} combinations of levels"


def _qi_rows(result, release: pa.Table, mondrian: bool) -> list[dict[str, str]]:
    spec, rows = result.spec, []
    lost = fully_generalized(result)
    for q, builder in spec.quasi_identifiers.items():
        h = result.hierarchies.get(q)
        if mondrian:
            level = "local (Mondrian)"
        elif q in result.levels and h is not None:
            level = f"{result.levels[q]} of {h.height - 1}"
            if q in lost:
                level += " (one value for every record: the column is lost)"
        else:
            level = "–"
        examples = _examples(release, q, spec.missing)
        rows.append({
            "name": q,
            "kind": h.kind if h is not None else "–",
            "hierarchy": _describe(builder, h),
            "sizes": levels_in_words(h) if h is not None else "",
            "path": _path(h, result.levels.get(q), examples),
            "level": level,
            "distinct": count(len(h.ground)) if h is not None else "–",
            "examples": examples,
        })
    return rows


def _describe(builder, hierarchy) -> str:
    """The hierarchy's rule in words (from the spec's keys), else its number of levels."""
    rule = describe_rule(builder)
    if rule:
        return rule[0].upper() + rule[1:]
    if hierarchy is None:
        return "–"
    return f"A hierarchy given as a table, {hierarchy.height} levels"


def _path(hierarchy, level: int | None, examples: Sequence[str]) -> list[str]:
    """The most frequent released value and what it becomes higher up (full-domain only:
    a Mondrian group's label is not a level of the hierarchy)."""
    if hierarchy is None or level is None or not examples:
        return []
    path = example_path(hierarchy, level, examples[0])
    return path if len(path) > 1 else []


def _examples(release: pa.Table, column: str, missing: str) -> list[str]:
    """The most frequent released values of a QI (they are in the release anyway)."""
    if column not in release.column_names or not release.num_rows:
        return []
    counts = pc.value_counts(as_text(release.column(column), missing))
    values = counts.field("values").to_numpy(zero_copy_only=False)
    order = np.argsort(-counts.field("counts").to_numpy(), kind="stable")[:EXAMPLES]
    return [str(values[i]) for i in order]


def _other_columns(release: pa.Table, spec) -> list[str]:
    named = {*spec.quasi_identifiers, *spec.sensitive, *spec.identifiers, *spec.transforms}
    return [c for c in release.column_names if c not in named]


def _transformed(result) -> list[dict[str, Any]]:
    """What each transform did, as the report shows it: microaggregation's groups and
    losses, PRAM's parameters and its transition matrix (in percent)."""
    rows = []
    for applied in getattr(result, "transformed", []):
        t = applied.transform
        row = {"columns": list(applied.columns), "kind": applied.kind}
        if applied.kind == "microaggregate":
            loss = applied.loss
            row.update(method={"mdav": "MDAV, the columns together",
                               "optimal": "optimal, each column alone"}[t.method], k=t.k,
                       groups=count(applied.groups), smallest=count(applied.smallest),
                       il1=number(loss.il1), il1s=number(loss.il1s),
                       squared_error=f"{loss.squared_error:.4g}")
        else:
            row.update(how=("the transition matrix given" if t.transition is not None
                            else f"invariant PRAM, pd {t.pd:g}, alpha {t.alpha:g}"),
                       seed=t.seed, changed=count(applied.changed),
                       levels=applied.levels,
                       matrix=[[f"{100 * p:.1f}" for p in r] for r in applied.matrix])
        rows.append(row)
    return rows


def _model_rows(report, models: Sequence) -> list[dict[str, Any]]:
    """The checker's verdict per model (it checked the spec's models, in order)."""
    rows = []
    people = getattr(report, "people", None) is not None  # classes count people
    for m, model in zip(getattr(report, "models", []), models):
        params = {k: v for k, v in model.to_dict().items()
                  if v is not None and not k.startswith("hierarchy")}
        rows.append({
            "name": m.name,
            "meaning": _meaning(m.model, params, people),
            "figure_name": m.figure_name,
            "figure": number(m.figure),
            "required": _required(model, params),
            "passed": m.passed,
            "violating": count(m.violating_records),
        })
    return rows


def _meaning(key: str, params: dict, people: bool = False) -> str:
    template = (people and PEOPLE_MEANINGS.get(key)) or MODEL_MEANINGS.get(key)
    if template is None:
        return ""
    values = {k: v if isinstance(v, str) else number(v) for k, v in params.items()}
    if "k" in params:
        values["k_1"] = number(int(params["k"]) - 1)
    try:
        return template.format(**values)
    except KeyError:
        return ""


#: the parameter a model's figure is compared with
BOUNDS = {"k-anonymity": "k", "t-closeness": "t", "average-risk": "threshold",
          "sample-uniqueness": "threshold", "population-uniqueness": "threshold",
          "individual-risk": "threshold",
          "beta-likeness": "beta", "delta-disclosure": "delta", "delta-presence": "dmax"}


def _risk_models(report, models: Sequence) -> list[str]:
    """The risk bounds the release was made to, as the checker measured them on it, e.g.
    ``average risk 3.1% ≤ 5%``."""
    lines = []
    for m, model in zip(getattr(report, "models", []), models):
        if getattr(model, "release", False):
            sign = "≤" if m.passed else ">"
            lines.append(f"{m.figure_name} {pct(m.figure)} {sign} {pct(model.threshold)}")
    return lines


def _required(model, params: dict) -> str:
    if model.key == "k-map":  # the figure is a class size: the size that stands for k
        if getattr(model, "needs_population", False):
            return f"≥ {number(params['k'])}"
        try:
            return f"≥ {number(model.derived())}"
        except BlendinError:  # the table's size is not known
            return ""
    name = BOUNDS.get(model.key, "l")
    if name not in params:
        return ""
    sign = "≥" if getattr(model, "larger_is_better", True) else "≤"
    return f"{sign} {number(params[name])}"


def utility_rows(utility: dict, minimized: str | None = None) -> list[dict[str, Any]]:
    """Each loss metric with its value, its meaning and which way is better."""
    return [{
        "name": name,
        "value": number(value),
        "meaning": UTILITY_MEANINGS.get(name, ""),
        "better": "lower" if name in UTILITY_MEANINGS else "",
        "minimized": name == minimized,
    } for name, value in utility.items()]


def _risk_rows(before: RiskReport | None, after: RiskReport | None,
               sensitive: Sequence[str], population: float | None = None,
               threshold_note: str = "") -> list[dict[str, str]]:
    unit = _unit(before, after)  # what the figures count: people where both count them
    Unit = unit.capitalize()

    def both(key, label, get, note=""):
        return {"key": key, "label": label, "note": note,
                "before": get(before) if before is not None else "–",
                "after": get(after) if after is not None else "–"}

    def share(n, r):
        return f"{count(n)} ({pct(n / r.records)})"

    units = {getattr(r, "person", None) is not None for r in (before, after) if r is not None}
    measured, note = {
        frozenset({True}): ("People measured", "counted by the person key; suppressed "
                                               "people are not at risk"),
        frozenset({True, False}): ("Measured", "the input in people (its person key), the "
                                               "release in records (written to a file, its "
                                               "rows carry no person)"),
    }.get(frozenset(units), ("Records measured", "suppressed records are not at risk"))
    rows = [
        both("risk-records", measured, lambda r: count(r.records), note),
        both("risk-classes", "Classes", lambda r: count(r.classes)),
        both("risk-smallest", "Smallest class", lambda r: count(r.sizes.min())),
        both("sample-uniques", "Sample uniques", lambda r: share(r.sample_uniques, r),
             f"{unit} alone in their class"),
        both("prosecutor-highest", "Prosecutor risk, highest",
             lambda r: pct(r.prosecutor.highest),
             "attacker knows the person is in the data: 1 / class size"),
        both("prosecutor-average", "Prosecutor risk, average",
             lambda r: pct(r.prosecutor.average)),
        both("prosecutor-at-risk", f"{Unit} above the threshold (prosecutor)",
             lambda r: pct(r.prosecutor.records_at_risk), threshold_note),
        both("journalist-highest", "Journalist risk, highest",
             lambda r: pct(r.journalist.highest),
             "attacker does not know whether the person is in the data; without "
             "population figures the sample stands for it (same as prosecutor)"
             if population is None else
             f"attacker does not know whether the person is in the data: a class of f "
             f"records stands for f / sampling fraction people of the population of "
             f"{number(population)}"),
        both("journalist-average", "Journalist risk, average",
             lambda r: pct(r.journalist.average)),
        both("journalist-at-risk", f"{Unit} above the threshold (journalist)",
             lambda r: pct(r.journalist.records_at_risk)),
        both("marketer", "Marketer risk", lambda r: pct(r.marketer),
             f"expected share of {unit} re-identified in a mass attack"),
    ]
    if population is not None:
        rows.append(both(
            "population-uniques", "Population uniques (estimate)", _population_uniques,
            "people unique in the whole population on the quasi-identifiers, estimated "
            "from the class sizes (Zayatz, Pitman, SNB; Dankar et al. choose the model)"))
    reports = [r for r in (before, after) if r is not None]
    if any(getattr(r, "individual", None) is not None for r in reports):
        rows += _individual_rows(both, reports)
    if any(getattr(r, "suda", None) is not None for r in reports):
        rows += _suda_rows(both, population)
    for i, s in enumerate(sensitive):
        rows.append(both(
            f"homogeneous-{i}", f"Classes with one value of {s}",
            lambda r, s=s: (f"{count(r.homogeneity[s].classes)} classes, "
                            f"{share(r.homogeneity[s].records, r)} {unit}"),
            "everyone in such a class has the same value: it is disclosed"))
    return rows


def _unit(*reports) -> str:
    """``people`` where every measured table counts people (a person key), else ``records``."""
    measured = [r for r in reports if r is not None]
    return ("people" if measured and all(getattr(r, "person", None) is not None
                                         for r in measured) else "records")


def _individual_rows(both, reports: Sequence[RiskReport]) -> list[dict[str, str]]:
    """sdcMicro's individual and household risk, where the spec names sampling weights or
    households (docs/sdc.md)."""
    def get(figure, shown=pct):
        def read(r):
            value = getattr(r.individual, figure, None) if r.individual is not None else None
            return "–" if value is None else shown(value)
        return read

    rows = [
        both("individual-average", "Individual risk, average", get("average"),
             "sdcMicro's global risk: each record's risk estimated from the sampling "
             "weights of its class (Benedetti-Franconi)"),
        both("individual-highest", "Individual risk, highest", get("highest")),
        both("individual-expected", "Expected re-identifications", get("expected", number),
             "the sum of the records' individual risks"),
    ]
    if any(r.individual is not None and r.individual.household is not None
           for r in reports):
        rows += [both("household-average", "Household risk, average",
                      get("household_average"),
                      "a household is re-identified when any member is: 1 - Π(1 - risk)"),
                 both("household-expected", "Expected re-identifications through households",
                      get("household_expected", number),
                      "records, not households: the sum of each record's household risk "
                      "(sdcMicro's hier_risk_ER)")]
    return rows


def _suda_rows(both, population: float | None = None) -> list[dict[str, str]]:
    """The special uniques (SUDA2, sdcMicro's scores; docs/sdc.md)."""
    def get(read):
        return lambda r: "–" if r.suda is None else read(r.suda, r)

    def records(s, r):
        return f"{count(s.records_with_msu)} ({pct(s.records_with_msu / r.records)})"

    return [
        both("suda-records", "Records with a special unique", get(records),
             "alone in the table on a few of their values, while not alone on any fewer "
             "(SUDA2's minimal sample uniques)"),
        both("suda-dis-max", "DIS-SUDA score, highest", get(lambda s, r: f"{s.dis_max:.4f}"),
             "the probability that a record unique on those values is a correct match, "
             + (f"for a sampling fraction of {DIS_FRACTION}" if population is None else
                "for the sampling fraction of each table, its records over the population "
                f"of {number(population)}")),
        both("suda-dis-sum", "DIS-SUDA score, sum", get(lambda s, r: f"{s.dis_sum:.4f}")),
    ]


def _population_uniques(r: RiskReport) -> str:
    p = r.population
    if p is None:
        return "–"
    if p.model == "none":  # no sample unique, so no population unique to estimate
        return "0 (no sample uniques)"
    return f"{p.dankar:,.0f} ({pct(p.share)}), {p.model}"


# -- the linking attack ------------------------------------------------------------------------


def _attack(result, release: pa.Table, before_table: pa.Table | None, external,
            on) -> dict[str, Any] | None:
    """The linking attack of ``external`` on the input (when given) and on the release."""
    if external is None:
        return None

    spec = result.spec
    ext = (Source(external).read_all() if isinstance(external, str | os.PathLike)
           else to_arrow(external))
    join = _join_columns(on, spec, ext)
    sensitive = [s for s in spec.sensitive if s not in ext.column_names]
    k = _k(result) or 2
    hierarchies = {q: result.hierarchies[q] for q in join if q in result.hierarchies}
    # read each join column as its hierarchy does: years in intervals (1930-1934) would
    # otherwise pass for a span of dates, and the external years fail to parse as dates
    kinds = {q: h.kind for q, h in hierarchies.items() if h.kind in KINDS}
    if result.release_people is not None:
        release = result.table_with_people()
    after = attack(release, ext, join, k=max(k, 2), sensitive=sensitive,
                   hierarchies=hierarchies, kinds=kinds, missing=spec.missing,
                   person=_person_of(result, release, join))
    before = None
    if before_table is not None:
        person = _person_of(result, before_table, join)
        before = attack(before_table, ext, join, k=max(k, 2), sensitive=sensitive,
                        kinds=kinds, missing=spec.missing, person=person)
    return {"on": join, "people": count(ext.num_rows), "k": k,
            "rows": _attack_rows(before, after, sensitive)}


def _person_of(result, table: pa.Table, join: Sequence[str]) -> str | None:
    """The person key, where the attack on ``table`` counts people: it holds the key (or
    the person numbers) and the join columns hold one value a person."""
    key = result.person_counted(join)
    return key if key in table.column_names else None


def _join_columns(on, spec, ext: pa.Table) -> list[str]:
    if on is None:
        join = [q for q in spec.quasi_identifiers if q in ext.column_names]
    else:
        join = [c.strip() for c in on.split(",")] if isinstance(on, str) else list(on)
    if not join:
        raise BlendinError("the external table has none of the quasi-identifiers "
                           f"({', '.join(spec.quasi_identifiers)})",
                           fix="name the columns to join on with --on (on= in the API)")
    absent = [c for c in join if c not in ext.column_names or c not in spec.quasi_identifiers]
    if absent:
        raise BlendinError(f"cannot join the external table on {', '.join(absent)}: only "
                           "quasi-identifiers the external table has can be joined on",
                           fix="name such columns in --on (on= in the API)")
    return join


def _attack_rows(before, after, sensitive: Sequence[str]) -> list[dict[str, str]]:
    def both(key, label, get, note=""):
        return {"key": key, "label": label, "note": note,
                "before": get(before) if before is not None else "–",
                "after": get(after)}

    def people(n, r):
        return f"{count(n)} ({percent_of(n, r.external) if r.external else pct(0.0)})"

    k = after.k
    unit = {(True, True): "; a match is a person (the person key), not a record",
            (True, False): "; on the input a match is a person (its person key), not a "
                           "record"}.get((before is not None and before.unit == "people",
                                          after.unit == "people"), "")
    rows = [
        both("reidentified", "People re-identified", lambda r: people(r.reidentified, r),
             "their quasi-identifiers match exactly one record: that record is theirs"
             + unit),
        both("singled-out", "Records singled out",
             lambda r: f"{count(r.records_reidentified)} ({pct(r.reidentified_share)})",
             "records some person matches alone (share of the table attacked)"),
        both("ambiguous", f"People matching 2 to {k - 1} records",
             lambda r: people(r.ambiguous, r), "a small group: a guess is often right")
        if k > 2 else None,
        both("hidden", f"People matching {k} or more records",
             lambda r: people(r.hidden, r), "hidden among at least k records"),
        both("no-match", "People matching no record", lambda r: people(r.no_match, r),
             "not in the data (or their values differ)"),
    ]
    for i, s in enumerate(sensitive):
        rows.append(both(f"learned-{i}", f"{s} learned with certainty",
                         lambda r, s=s: people(r.learned.get(s, 0), r),
                         "every record they match has the same value: it is disclosed"))
    return [r for r in rows if r is not None]


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
        unit = "people" if getattr(after, "person", None) is not None else "records"
        k = _k(result)
        out.append({"key": "plot-sizes", "title": f"Sizes of the {what}",
                    "caption": f"How many {what} have each size in {unit}, in the release "
                               f"(bars) and the input (outline; every input "
                               f"{'person' if unit == 'people' else 'record'} with the same "
                               "values is one class)."
                               + (" Nothing left of the k line can exist in the release;"
                                  if k is not None else "")
                               + " the count axis is logarithmic when the counts spread "
                               "widely.",
                    "png": plots.class_sizes(after.sizes, None if before is None
                                             else before.sizes, k=k, what=what, unit=unit)})
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
