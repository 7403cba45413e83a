"""The utility report: every measure of :mod:`blendin.utility` for one input and release."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import as_text
from blendin.errors import BlendinError, preview
from blendin.io import Source, to_arrow
from blendin.spec import as_spec
from blendin.summaries import percent_of, utility_summary
from blendin.utility.align import Aligned, align
from blendin.utility.classify import CLASSIFY_SAMPLE, MODELS, Classification, classify
from blendin.utility.columns import (
    Contingency,
    Distribution,
    Summary,
    contingency,
    distribution,
    midpoints,
)
from blendin.utility.quality import (
    MEANINGS,
    ColumnQuality,
    _quality,
    column_quality,
    table_quality,
)


@dataclass(frozen=True, eq=False)
class UtilityReport:
    """What :func:`utility` found (every quality in [0, 1]: 1 is the input itself)."""

    records: int
    released: int
    columns: list[ColumnQuality]
    #: ARX's aggregate of each column measure over the QIs (a ratio of the means)
    overall: dict[str, float]
    table: dict[str, float]
    statistics: dict[str, tuple[Summary, Summary]]
    classification: Classification | None = None
    contingencies: list[Contingency] = field(default_factory=list)
    #: every QI and sensitive column before and after
    distributions: list[Distribution] = field(default_factory=list)

    def __repr__(self) -> str:
        return utility_summary(self).text()

    def _repr_html_(self) -> str:
        """The summary as a small HTML table (shown by notebooks): no value of the input."""
        return utility_summary(self).html()

    def to_dict(self) -> dict:
        return {"records": self.records, "released": self.released,
                "columns": [vars(c) | {"line": c.line()} for c in self.columns],
                "overall": dict(self.overall), "table": dict(self.table),
                "statistics": {name: {"input": vars(a), "release": vars(b)}
                               for name, (a, b) in self.statistics.items()},
                "classification": (self.classification.to_dict()
                                   if self.classification else None),
                "contingencies": [c.to_dict() for c in self.contingencies],
                "distributions": [d.to_dict() for d in self.distributions]}

    def columns_table(self) -> pa.Table:
        """The per-column view as a table (what ``--csv`` writes)."""
        return pa.table({key: [getattr(c, key) for c in self.columns]
                         for key in ColumnQuality.__dataclass_fields__})

    def lines(self) -> list[str]:
        """The report as text, the plain view first."""
        lines = [f"records: {self.records:,}, released {self.released:,} "
                 f"({percent_of(self.released, self.records)})", "columns:"]
        lines += [f"  {c.line()}" for c in self.columns]
        for name, (before, after) in self.statistics.items():
            lines.append(f"  {name}: mean {before.mean:.4g} -> {after.mean:.4g}, median "
                         f"{before.median:.4g} -> {after.median:.4g}, quartiles "
                         f"{before.q1:.4g}-{before.q3:.4g} -> {after.q1:.4g}-{after.q3:.4g}")
        for c in self.contingencies:
            lines.append(f"  {c.columns[0]} x {c.columns[1]}: {c.original.num_rows:,} pairs "
                         f"of values in the input, {c.released.num_rows:,} of labels in the "
                         f"release; distance {c.distance:.4f} (0: the same, 1: nothing in "
                         "common)")
        if self.classification is not None:
            c = self.classification
            lines.append(f"classification of {c.target!r} ({c.folds}-fold, {c.records:,} "
                         f"records, seed {c.seed}): zero-rule accuracy "
                         f"{c.baseline.accuracy:.3f}")
            for model in c.original:
                o, r = c.original[model], c.released[model]
                kept = c.kept(model)
                gain = ("the input does no better than the baseline" if np.isnan(kept) else
                        f"keeps {100 * kept:.0f}% of the gain over the baseline")
                lines.append(f"  {model}: accuracy {o.accuracy:.3f} -> {r.accuracy:.3f} "
                             f"({gain}), Brier {o.brier:.3f} -> {r.brier:.3f}, AUC "
                             f"{o.auc:.3f} -> {r.auc:.3f}")
        lines.append("quality per column (1: as in the input, 0: nothing left):")
        width = max((len(c.name) for c in self.columns), default=4)
        lines.append(f"  {'':<{width}}  granularity  entropy  intensity  sq.error")
        for c in self.columns:
            error = "-" if c.squared_error is None else f"{c.squared_error:.4f}"
            lines.append(f"  {c.name:<{width}}  {c.granularity:11.4f}  "
                         f"{c.non_uniform_entropy:7.4f}  {c.generalization_intensity:9.4f}  "
                         f"{error:>8}")
        lines.append("quality of the table:")
        for name, value in self.overall.items():
            lines.append(f"  {name + ' (columns)':<34} {value:.4f}  {MEANINGS[name]}")
        lines += [f"  {name:<34} {value:.4f}  {MEANINGS[name]}"
                  for name, value in self.table.items()]
        return lines

    def __str__(self) -> str:
        return "\n".join(self.lines())


def utility(original, release, spec, *, target: str | None = None,
            pairs: Sequence[Sequence[str]] = (), folds: int = 5, seed: int = 0,
            sample: int = CLASSIFY_SAMPLE, models: Sequence[str] = MODELS,
            input_values: bool = True, delimiter: str | None = None,
            encoding: str | None = None) -> UtilityReport:
    """How much of ``original`` the ``release`` (of it, made with ``spec``) keeps.

    Both are files, DataFrames or Arrow tables. With ``target`` (a column of the input
    that is not a QI), models are trained on the QIs of the input and of the release to
    predict it (:func:`classify`; ``folds``, ``seed``, ``sample`` set the protocol,
    ``models`` picks among :data:`MODELS`).
    ``pairs`` (two column names each) adds their contingency tables (:func:`contingency`).
    A file is read with ``delimiter`` (default: the spec's) and ``encoding`` (default: the
    spec's for the input, UTF-8 for the release, as :func:`anonymize` writes it).
    Without ``input_values`` the distributions show no value the release hides (see
    :func:`distribution`; for a report that travels with the release): the QIs' input is
    counted at the released labels and the sensitive columns are left out.

    >>> import blendin as bl
    >>> df = bl.datasets.hospital(300, seed=1)
    >>> spec = bl.Spec(identifiers=["name", "ssn"], quasi_identifiers={
    ...     "zip": bl.masking(), "sex": bl.flat()}, models=[bl.KAnonymity(5)],
    ...     max_suppression=0.1)
    >>> report = utility(df, bl.anonymize(df, spec).data, spec)
    >>> [c.line() for c in report.columns][1]
    'sex: values as they are; 0.3% of values suppressed'
    """
    spec = as_spec(spec)  # (a path too, as anonymize and check take it)

    def read(data, default_encoding: str):
        if isinstance(data, str):
            return Source(data, delimiter=delimiter or spec.delimiter,
                          encoding=encoding or default_encoding).read_all()
        return to_arrow(data)

    qis = list(spec.quasi_identifiers)
    # the input in the spec's encoding; a release file in UTF-8, as anonymize writes it
    source, released = read(original, spec.encoding), read(release, "utf-8")
    for table, what in ((source, "the input"), (released, "the release")):
        absent = [q for q in qis if q not in table.column_names]
        if absent:
            raise BlendinError(f"{what} has no column(s) {preview(absent)}",
                               fix="give the input and the release the spec was used on")
    hierarchies = spec.build_hierarchies(source)
    a = align(source, released, qis, [hierarchies[q] for q in qis], spec.missing)
    numbers = {i: np.asarray(h.numbers, float)[a.ground[:, i]]
               for i, h in enumerate(a.hierarchies) if h.numbers is not None
               and not np.isnan(np.asarray(h.numbers, float)[a.ground[:, i]]).any()}
    columns, triples = zip(*(column_quality(a, i, numbers.get(i))
                             for i in range(len(qis)))) if qis else ((), ())
    found = None
    if target is not None:
        found = _classification(source, a, target, qis, folds=folds, seed=seed,
                                sample=sample, models=models)
    shown = [*qis, *(s for s in spec.sensitive if s in source.column_names and input_values)]
    return UtilityReport(
        a.records, int((~a.suppressed).sum()), list(columns), _overall(triples),
        table_quality(a, numbers), _statistics(a, numbers, released, spec.missing), found,
        [contingency(a, _pair(pair), source, spec.missing) for pair in pairs],
        [distribution(a, name, source, spec.missing, input_values=input_values)
         for name in shown])


def _overall(triples) -> dict[str, float]:
    """ARX's aggregate of each column measure: the quality of the means of the columns'
    (loss, least, most) triples."""
    names = ("granularity", "generalization_intensity", "non_uniform_entropy",
             "squared_error")
    overall = {}
    for j, name in enumerate(names):
        kept = [t[j] for t in triples if t[j] is not None]
        if kept:
            loss, least, most = np.mean(np.asarray(kept, float), axis=0)
            overall[name] = _quality(float(loss), float(least), float(most))
    return overall


def _statistics(a: Aligned, numbers: dict[int, np.ndarray], released: pa.Table,
                missing: str) -> dict[str, tuple[Summary, Summary]]:
    """Summary statistics of each numeric QI: its input values, the release's midpoints."""
    statistics = {}
    for i, x in numbers.items():
        if a.hierarchies[i].kind != "numeric":  # dates: days since 1970 say nothing
            continue
        # each distinct label parsed once
        shown = pc.dictionary_encode(as_text(released.column(a.qis[i]), missing)
                                     .combine_chunks())
        middle = midpoints(np.asarray(shown.dictionary.to_pylist(), dtype=object))
        statistics[a.qis[i]] = (Summary.of(x), Summary.of(
            middle[shown.indices.to_numpy(zero_copy_only=False)]))
    return statistics


def _pair(pair: str | Sequence[str]) -> list[str]:
    pair = [c.strip() for c in pair.split(",")] if isinstance(pair, str) else list(pair)
    if len(pair) != 2:
        raise BlendinError(f"--pair {','.join(pair)!r} does not name two columns",
                           fix="give two columns, e.g. --pair age,sex")
    return pair

def _classification(source: pa.Table, a: Aligned, target: str, qis: Sequence[str], **how
                    ) -> Classification:
    if target not in source.column_names:
        raise BlendinError(f"the input has no column {target!r} to predict",
                           fix=f"name one of its columns: {preview(source.column_names, 10)}")
    if target in qis:
        raise BlendinError(f"the target {target!r} is a quasi-identifier, which the models "
                           "take as a feature", fix="predict another column (--target)")
    released = np.where(a.suppressed[:, None], -1, a.general)  # suppressed: one category
    labels = as_text(source.column(target)).to_numpy(zero_copy_only=False)
    return classify(labels, a.ground, released + 1, features=qis, name=target, **how)
