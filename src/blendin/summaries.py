"""Short summaries of the results and reports, for the console and for notebooks.

``repr(result)`` and a notebook cell showing a Result, CheckReport, RiskReport,
AttackReport or UtilityReport give the verdict first, then a few lines of figures: never
the data, the hierarchies or the class sizes behind them. :class:`Summary` holds those lines
and renders them as text (``__repr__``) or as a small HTML table (``_repr_html_``); one
function per report builds it.

>>> s = Summary("Thing", "all good", True, [("records", "3")])
>>> print(s.text())
Thing: all good
  records  3
>>> s.html().index("all good") < s.html().index("<table")
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

from blendin.errors import toml_key

#: at most this many k-minimal nodes are listed
MINIMAL_SHOWN = 5

GOOD, BAD, NEUTRAL = "#1d6b2c", "#9b2618", "#333333"


@dataclass
class Summary:
    """A verdict (``ok``: True good, False bad, None neither) and labelled figures; ``table``
    is an optional small table (header row first), e.g. one line per privacy model."""

    name: str
    verdict: str
    ok: bool | None
    rows: list[tuple[str, str]]
    table: list[tuple[str, ...]] = field(default_factory=list)

    def text(self) -> str:
        width = max((len(label) for label, _ in self.rows), default=0)
        lines = [f"{self.name}: {self.verdict}"]
        lines += [f"  {label:<{width}}  {value}" for label, value in self.rows]
        if self.table:
            widths = [max(len(row[i]) for row in self.table)
                      for i in range(len(self.table[0]))]
            for row in self.table[1:]:
                lines.append("  " + "  ".join(f"{cell:<{w}}" for cell, w in
                                              zip(row, widths)).rstrip())
        return "\n".join(lines)

    def html(self) -> str:
        colour = {True: GOOD, False: BAD, None: NEUTRAL}[self.ok]
        mark = {True: "&#10004; ", False: "&#10008; ", None: ""}[self.ok]
        cell = "padding:0.15em 0.8em 0.15em 0;text-align:left;vertical-align:top"
        parts = [f'<div class="blendin-{escape(self.name.lower())}">',
                 f'<p style="margin:0 0 0.3em 0;font-weight:600;color:{colour}">{mark}'
                 f"{escape(self.name)}: {escape(self.verdict)}</p>",
                 '<table style="border-collapse:collapse"><tbody>']
        parts += [f'<tr><th style="{cell};font-weight:600">{escape(label)}</th>'
                  f'<td style="{cell}">{escape(value)}</td></tr>' for label, value in self.rows]
        parts.append("</tbody></table>")
        if self.table:
            head, *body = self.table
            parts.append('<table style="border-collapse:collapse;margin-top:0.4em"><thead><tr>'
                         + "".join(f'<th style="{cell}">{escape(h)}</th>' for h in head)
                         + "</tr></thead><tbody>")
            parts += ["<tr>" + "".join(f'<td style="{cell}">{escape(c)}</td>' for c in row)
                      + "</tr>" for row in body]
            parts.append("</tbody></table>")
        parts.append("</div>")
        return "\n".join(parts)


def _count(n) -> str:
    return f"{int(n):,}"


def _pct(x: float) -> str:
    return percent(x)


def percent(x: float | None) -> str:
    """A share in percent, one decimal; a share above 0 never reads 0.0% nor one below 1
    100.0% (1 record of 5,001 at risk is <0.1%, 9,996 of 10,000 released >99.9%).

    >>> percent(0.25), percent(0.0004), percent(0.9996), percent(1.0), percent(0.0)
    ('25.0%', '<0.1%', '>99.9%', '100.0%', '0.0%')
    """
    if x is None or math.isnan(x):
        return "n/a"
    shown = f"{100 * x:.1f}%"
    if x > 0 and shown == "0.0%":
        return "<0.1%"
    if x < 1 and shown == "100.0%":
        return ">99.9%"
    return shown


def percent_of(count: int, total: int) -> str:
    """``count`` of ``total`` in percent, one decimal, rounded half up on the exact
    fraction (so 29 of 2,000 reads 1.5% wherever it is printed); a count above 0 never
    reads 0.0%, nor one short of the total 100.0%.

    >>> percent_of(29, 2000), percent_of(1, 3), percent_of(0, 0)
    ('1.5%', '33.3%', 'n/a')
    >>> percent_of(1, 5001), percent_of(9996, 10000), percent_of(5, 5)
    ('<0.1%', '>99.9%', '100.0%')
    """
    if not total:
        return "n/a"
    count, total = int(count), int(total)
    tenths = (2000 * count + total) // (2 * total)
    if tenths == 0 and count > 0:
        return "<0.1%"
    if tenths == 1000 and count < total:
        return ">99.9%"
    return f"{tenths // 10}.{tenths % 10}%"


def _share(count: int, total: int) -> str:
    return f"{_count(count)} ({percent_of(count, total) if total else '-'})"


def _figure(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return str(int(value)) if value.is_integer() else f"{value:.4g}"
    return str(value)


def _models_table(models) -> list[tuple[str, ...]]:
    rows = [("model", "figure", "verdict")]
    for m in models:
        verdict = "holds" if m.passed else f"violated ({_count(m.violating_records)} records)"
        rows.append((m.name, f"{m.figure_name} = {_figure(m.figure)}", verdict))
    return rows


# -- one function per report -----------------------------------------------------------------


def result_summary(result) -> Summary:
    """What :func:`blendin.anonymize` did, verdict first."""
    report = result.check
    verdict = ("verified: every privacy model holds on the release" if report.passed
               else "NOT verified: the checker found a violation")
    released = result.records - (result.suppressed if result.suppressed_mode == "drop" else 0)
    how = "removed" if result.suppressed_mode == "drop" else "kept with *"
    rows = [
        ("records", f"{_count(result.records)} in, {_count(released)} released"),
        ("suppressed", f"{_share(result.suppressed, result.records)}, {how} "
                       f"(limit {100 * result.spec.max_suppression:g}%)"),
        ("classes", f"{_count(report.classes)}, smallest {_figure(report.min_class_size)}"),
    ]
    if getattr(result, "cells", None) is not None:
        rows[1:] = [
            ("blanked cells", cells_text(result.cells) + f" in "
             f"{_share(result.cell_records, result.records)} records (limit "
             f"{100 * result.spec.max_suppression:g}%)"),
            ("classes", f"{_count(report.classes)}, the fewest compatible records "
                        f"{_figure(report.min_class_size)}"),
        ]
    if result.levels:
        heights = result.heights
        rows.append(("levels", ", ".join(f"{q} {lvl}/{heights[q] - 1}"
                                         for q, lvl in result.levels.items())))
    if result.utility:
        rows.append(("utility", ", ".join(f"{k} {_figure(float(v))}"
                                          for k, v in result.utility.items())))
    rows.append(("algorithm", _how(result)))
    rows += [("transformed", applied.line()) for applied in getattr(result, "transformed", [])]
    for qi in fully_generalized(result):
        rows.append(("note", f"{qi} shows one value for every record (see summary())"))
    rows += [("warning", w) for w in getattr(result, "warnings", [])]
    minimal = minimal_nodes(result)
    if len(minimal) > 1:
        rows.append(("k-minimal", _minimal_text(minimal)))
    return Summary("Result", verdict, report.passed, rows, _models_table(report.models))


def cells_text(cells: dict[str, int]) -> str:
    """``174 (relat 128, water 20, roof 14)``: the total, then each QI with a blank."""
    shown = sorted(((n, q) for q, n in cells.items() if n), key=lambda c: -c[0])
    each = ", ".join(f"{q} {_count(n)}" for n, q in shown)
    return _count(sum(cells.values())) + (f" ({each})" if each else "")


def _how(result) -> str:
    if result.applied_from is not None:
        return f"saved solution re-applied, {result.seconds:.3f} s"
    if result.algorithm == "mondrian":
        return f"mondrian, {result.seconds:.3f} s"
    if result.algorithm == SAFEPUB:
        return f"{safepub_words(result)}, {result.seconds:.3f} s"
    return (f"{result.algorithm}, metric {result.metric}, "
            f"{_count(result.nodes_checked)} nodes checked, {result.seconds:.3f} s")


#: the algorithm a differentially private release names: SafePub draws a sample and chooses
#: its node itself (fixed in advance, or by the exponential mechanism); nothing is minimized
SAFEPUB = "safepub"


def safepub_sample(result) -> str:
    """``a random sample of 1,302 of the input's 1,500 records``: what SafePub released from."""
    model = next((m for m in result.spec.models if m.key == "differential-privacy"), None)
    drawn = getattr(model, "records_in_input", None)
    return (f"a random sample of {_count(result.records)} of the input's {_count(drawn)} "
            "records" if drawn else "a random sample of the input")


def safepub_words(result) -> str:
    """How SafePub made the release, for people: the sample and how the node was chosen."""
    model = next((m for m in result.spec.models if m.key == "differential-privacy"), None)
    sample = safepub_sample(result)
    chosen = ("generalization chosen by the exponential mechanism"
              if getattr(model, "generalization_budget", 0) else
              "generalization fixed in advance")
    return f"SafePub: {sample}, {chosen}"


def not_proven(algorithm: str) -> str:
    """Why a full-domain node is not proven optimal, in words: only the heuristic stops
    at a budget; Datafly climbs greedily and binary search takes a lowest k-minimal node,
    whatever the time they are given."""
    return {"datafly": "the node Datafly's greedy climb stops at; it does not look for "
                       "the best one",
            "binary": "a k-minimal node of the lowest height; binary search does not look "
                      "for the best one"}.get(algorithm, "the best node found within its "
                                                         "budget of time and checks")


def fully_generalized(result) -> list[str]:
    """The QIs whose chosen level has one label for all values: the top of the hierarchy,
    or a level below it that already merges everything (``02***`` for every ZIP). The
    release keeps nothing of such a column."""
    out = []
    for qi, level in result.levels.items():
        h = result.hierarchies.get(qi)
        if h is not None and len(h.labels[level]) <= 1:
            out.append(qi)
    return out


def minimal_nodes(result) -> list[dict[str, int]]:
    """Binary search's k-minimal nodes (``result.solution.minimal``), QI name -> level."""
    minimal = getattr(result.solution, "minimal", ()) or ()
    names = list(result.levels) or list(getattr(result.solution, "qi_names", ()))
    return [dict(zip(names, (int(v) for v in node))) for node in minimal]


def _minimal_text(minimal: Sequence[dict[str, int]]) -> str:
    shown = ["(" + ", ".join(f"{q} {v}" for q, v in node.items()) + ")"
             for node in minimal[:MINIMAL_SHOWN]]
    more = len(minimal) - MINIMAL_SHOWN
    return f"{len(minimal)} nodes: " + " ".join(shown) + (f" and {more} more" if more > 0
                                                          else "")


def check_summary(report) -> Summary:
    """The checker's verdict, then its figures and one line per model."""
    verdict = report.verdict
    rows = [
        ("records", _count(report.records)),
        ("classes", f"{_count(report.classes)}, smallest {_figure(report.min_class_size)}"),
        ("suppressed", _share(report.suppressed, report.records)),
        ("violating", f"{_count(report.violating_records)} records in "
                      f"{_count(report.violating_classes)} classes"),
    ]
    if getattr(report, "cells", None) is not None:
        rows[1:3] = [("classes", f"{_count(report.classes)}, the fewest compatible records "
                                 f"{_figure(report.min_class_size)}"),
                     ("blanked cells", cells_text(report.cells))]
    if getattr(report, "people", None) is not None:  # classes count people
        rows[1:] = [
            ("people", _count(report.people) + " (classes count people)"),
            ("classes", f"{_count(report.classes)}, smallest "
                        f"{_figure(report.min_class_size)} people"),
            ("suppressed", _share(report.suppressed_people, report.people) + " people, "
                           + _share(report.suppressed, report.records) + " records"),
            ("violating", f"{_count(report.violating_records)} people in "
                          f"{_count(report.violating_classes)} classes"),
        ]
        if report.event_level:
            rows.append(("vary in a person", ", ".join(report.event_level)))
    if report.identifiers_present:
        rows.append(("identifiers", ", ".join(report.identifiers_present)
                     + " still present (remove them)"))
    if report.exposed_suppressed:
        rows.append(("suppressed", "show their sensitive values, and as one group violate "
                     + "; ".join(report.exposed_suppressed)))
    rows += [("warning", w) for w in report.warnings]
    return Summary("CheckReport", verdict, report.passed, rows, _models_table(report.models))


def risk_summary(report) -> Summary:
    """The highest re-identification risk first, then the other figures."""
    smallest = int(report.sizes.min()) if len(report.sizes) else 0
    verdict = (f"highest risk {_pct(report.prosecutor.highest)} (a class of "
               f"{_count(smallest)}), {_pct(report.prosecutor.records_at_risk)} of "
               f"{'people' if getattr(report, 'person', None) else 'records'} "
               f"above {report.threshold:g}")
    n = report.records
    rows = [
        ("people" if getattr(report, "person", None) else "records",
         _count(n) + (f" (+{_count(report.suppressed)} suppressed)" if report.suppressed
                      else "") + (f", {_count(report.rows)} records"
                                  if getattr(report, "person", None) else "")),
        ("quasi-identifiers", ", ".join(report.quasi_identifiers)),
        ("classes", f"{_count(report.classes)}, smallest {_count(smallest)}"),
        ("sample uniques", _share(report.sample_uniques, n)),
        ("prosecutor", f"highest {_pct(report.prosecutor.highest)}, average "
                       f"{_pct(report.prosecutor.average)}"),
        ("journalist", f"highest {_pct(report.journalist.highest)}, average "
                       f"{_pct(report.journalist.average)}"),
        ("marketer", _pct(report.marketer)),
    ]
    if report.population is not None:
        p = report.population
        rows.append(("population uniques", f"{p.dankar:,.1f} of {p.population:,.0f} "
                                           f"({_pct(p.share)}, {p.model})"))
    individual = getattr(report, "individual", None)
    if individual is not None:
        rows.append(("individual risk", f"average {100 * individual.average:.4f}%, "
                                        f"{individual.expected:,.3f} expected "
                                        "re-identifications"))
        if individual.household is not None:
            rows.append(("household risk", f"average {100 * individual.household_average:.4f}%"
                                           f", {individual.household_expected:,.3f} expected"))
    special = getattr(report, "suda", None)
    if special is not None:
        rows.append(("special uniques", f"{_share(special.records_with_msu, n)} records, "
                                        f"DIS-SUDA highest {special.dis_max:.4f}"))
    for h in report.homogeneity.values():
        rows.append((f"one {h.attribute} only", f"{_count(h.classes)} classes, "
                                                f"{_share(h.records, n)} records"))
    high = report.prosecutor.records_at_risk > 0
    return Summary("RiskReport", verdict, not high, rows)


def attack_summary(report) -> Summary:
    """How many people the linking attack re-identified, then the other counts."""
    n = report.external
    verdict = f"{_count(report.reidentified)} of {_count(n)} people re-identified"
    rows = [
        ("join on", ", ".join(report.on)),
        ("release", f"{_count(report.release)} {report.unit}, "
                    f"{_share(report.records_reidentified, report.release)} singled out"),
        ("no match", _share(report.no_match, n)),
        ("1 match", _share(report.reidentified, n)),
    ]
    if report.k > 2:
        rows.append((f"2..{report.k - 1} matches", _share(report.ambiguous, n)))
    rows.append((f"{report.k}+ matches", _share(report.hidden, n)))
    if report.correct is not None:
        rows.append(("correct", _share(report.correct, n)))
    for name, count in report.learned.items():
        rows.append((f"{name} learned", _share(count, n)))
    return Summary("AttackReport", verdict, report.reidentified == 0, rows)


def utility_summary(report) -> Summary:
    """What the release keeps: the records, then a line per column and the table's
    qualities; never a value of the input."""
    verdict = (f"{_count(report.released)} of {_count(report.records)} records released "
               f"({percent_of(report.released, report.records)})")
    rows = [(c.name, c.line().removeprefix(f"{c.name}: ")) for c in report.columns]
    rows += [(name.replace("_", " "), _figure(value)) for name, value in report.table.items()]
    c = report.classification
    if c is not None:
        rows += [(f"{model} on {c.target!r}",
                  f"accuracy {c.original[model].accuracy:.3f} -> "
                  f"{c.released[model].accuracy:.3f} (zero rule {c.baseline.accuracy:.3f})")
                 for model in c.original]
    return Summary("UtilityReport", verdict, None, rows)


def summary_notes(result) -> list[str]:
    """Lines :meth:`Result.summary` adds after the figures: binary search's k-minimal nodes,
    and a warning for the QIs that show one value for every record (the column is lost)."""
    lines = []
    minimal = minimal_nodes(result)
    if minimal:
        lines.append(f"k-minimal nodes at the lowest feasible height ({len(minimal)}; the "
                     "chosen one is best by the metric):")
        lines += ["  " + ", ".join(f"{q} {v}" for q, v in node.items()) for node in minimal]
    lost = fully_generalized(result)
    if lost:
        it = "it" if len(lost) == 1 else "them"
        weights = ", ".join(f"{toml_key(q)} = 5" for q in lost)  # (as TOML reads it)
        if result.algorithm == SAFEPUB:  # weights and Mondrian do not apply
            model = next(m for m in result.spec.models if m.key == "differential-privacy")
            how = ("a larger epsilon makes the exponential mechanism's choice of a finer "
                   "node likelier" if model.generalization_budget else
                   "lower the model's degree (SafePub generalizes each hierarchy that share "
                   "of the way up, fixed in advance) or give it a generalization_budget, so "
                   "that it chooses the generalization from the data")
            lines.append(f"note: {', '.join(lost)} ended where every record shows the same "
                         f"value, so the release keeps nothing of {it}. To keep more of "
                         f"{it}, {how}.")
            return lines
        way = (f"anonymize the data afresh with {it} weighed more ([anonymization] "
               f"weights = {{ {weights} }} in the spec): a saved solution keeps its levels"
               if getattr(result, "applied_from", None) else
               f"weigh {it} more ([anonymization] weights = {{ {weights} }} in the spec, "
               "weights= in the API) or try --algorithm mondrian, which generalizes each "
               "group only as much as it needs")
        lines.append(
            f"note: {', '.join(lost)} ended where every record shows the same value "
            f"(the top of the hierarchy, or one value short of it), so the release keeps "
            f"nothing of {it}. To keep more of {it}, {way}.")
    return lines
