"""The independent checker: is this table, as it stands, safe under the spec's models?

It regroups the values themselves (generalized labels such as ``20-29``, ``021**``,
``{a,b}`` are just text here) and never uses the search's lattice or frequency-table
roll-ups, so a bug there cannot hide a violation. Rows whose quasi-identifiers are all ``*``
count as suppressed, not as a class.

t-closeness compares each class with the distribution of the sensitive attribute over ALL
records of the checked table, suppressed ones included: a release keeps the sensitive values
of its suppressed rows, so this is the distribution of the original data that the search
used too.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import COUNT, as_text, combine_keys, distinct_texts
from blendin.engines import engine_for
from blendin.engines.embedded import READ_BLOCK
from blendin.engines.kernels import decoded
from blendin.engines.sql import SqlSource, in_database
from blendin.errors import BlendinError, Unmeetable
from blendin.estimators import sampling_weights
from blendin.frequency import Classes, SensitiveDomain, class_slices, in_slices, summed
from blendin.groupby import distinct_tuples
from blendin.heap import tune_heap
from blendin.hierarchy.core import SUPPRESSED, Hierarchy
from blendin.io import Source, source_with_columns
from blendin.models import IndividualRisk, KAnonymity, PrivacyModel
from blendin.models.presence import population_source, subset_column, subset_rows
from blendin.normalize import merge_spellings, spelling_warnings
from blendin.people import PERSON_ENGINES, per_person, require_keys
from blendin.progress import Progress, file_pass, short_name
from blendin.related import in_memory, refuse_options
from blendin.spec import Spec, as_spec, overlooked_warnings
from blendin.summaries import cells_text, check_summary
from blendin.transform.cells import compatible
from blendin.transform.microaggregation import Microaggregate, smallest_group
from blendin.transform.table import class_of, numbers, transform_sets

#: how many problem combinations a report lists
MAX_PROBLEMS = 20


@dataclass
class ModelResult:
    """The verdict of one privacy model over the classes of the checked table."""

    name: str
    model: str
    attribute: str | None
    passed: bool
    figure_name: str
    figure: float | None
    violating_classes: int
    violating_records: int


@dataclass
class Problem:
    """One class that violates a model: its quasi-identifier values and size.

    ``sensitive`` (value counts per sensitive attribute) is filled only on request, as it
    shows sensitive values.
    """

    values: dict[str, str]
    size: int
    violates: list[str]
    sensitive: dict[str, dict[str, int]] | None = None


@dataclass
class CheckReport:
    """What :func:`check` found. ``passed`` is true when every model holds on every class
    and no identifier column is present."""

    passed: bool
    records: int
    classes: int
    min_class_size: int | None
    suppressed: int
    violating_records: int
    models: list[ModelResult]
    problems: list[Problem] = field(default_factory=list)
    violating_classes: int = 0
    identifiers_present: list[str] = field(default_factory=list)
    quasi_identifiers: list[str] = field(default_factory=list)
    #: the sensitive models the suppressed records, showing their sensitive values, violate
    #: as one visible group
    exposed_suppressed: list[str] = field(default_factory=list)
    #: whose distribution the classes were compared with: "input" (given) or "table" (this
    #: table's own: the input's only when it holds every record); None when no model does
    distribution: str | None = None
    #: what the user should know: columns that look like direct identifiers the spec names
    #: nowhere, a sensitive value spelled several ways
    warnings: list[str] = field(default_factory=list)
    #: per QI, the records read as missing: holding the spec's missing label, and holding
    #: an empty value (counted apart from the label, as a reader sees it)
    missing: dict[str, dict[str, int]] = field(default_factory=dict)
    #: related tables: each table's rows (the check ran on their stack)
    tables: dict[str, int] | None = None
    #: with a person key: the people, those suppressed, the QIs that vary within a person;
    #: class sizes and violating counts are then people (docs/people.md)
    people: int | None = None
    suppressed_people: int | None = None
    event_level: list[str] = field(default_factory=list)
    #: suppression by cells: the ``*`` cells of each QI (class sizes then count the records
    #: compatible with a class, a ``*`` matching any value)
    cells: dict[str, int] | None = None
    #: microaggregated columns (those aggregated together joined by ", "): the fewest
    #: records sharing one released tuple, and whether each set reaches its k
    microaggregated: dict[str, int] = field(default_factory=dict)
    microaggregation_held: bool = True

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (figures that do not exist are None)."""
        out = asdict(self)
        for model in out["models"]:
            if model["figure"] is not None and math.isnan(model["figure"]):
                model["figure"] = None
        for problem in out["problems"]:
            if problem["sensitive"] is None:
                del problem["sensitive"]
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __repr__(self) -> str:
        return check_summary(self).text()

    def _repr_html_(self) -> str:
        """The summary as a small HTML table, verdict first (shown by notebooks)."""
        return check_summary(self).html()

    @property
    def verdict(self) -> str:
        """One line: passed, or how many models are violated."""
        failed = [m for m in self.models if not m.passed]
        if self.passed:
            return f"PASSED: all {len(self.models)} privacy model(s) hold"
        if failed:
            return f"FAILED: {len(failed)} of {len(self.models)} privacy model(s) violated"
        if not self.microaggregation_held:
            return "FAILED: microaggregated values are shared by fewer than k records"
        return "FAILED"

    def __str__(self) -> str:
        head = self.verdict
        share = self.suppressed / self.records if self.records else 0.0
        lines = [
            head,
            f"  records            {self.records}",
            f"  classes            {self.classes}",
            f"  smallest class     {_show(self.min_class_size)}",
            f"  suppressed         {self.suppressed} ({share:.2%})",
            f"  violating records  {self.violating_records}",
        ]
        if self.cells is not None:  # a class's size: the records compatible with it
            lines[2:5] = [
                f"  classes            {self.classes}",
                f"  fewest compatible  {_show(self.min_class_size)} (a * matches any value)",
                f"  blanked cells      {cells_text(self.cells)}",
            ]
        if self.people is not None:  # classes count people
            lost = self.suppressed_people / self.people if self.people else 0.0
            lines[2:] = [
                f"  people             {self.people} (classes count people)",
                f"  classes            {self.classes}",
                f"  smallest class     {_show(self.min_class_size)} people",
                f"  suppressed         {self.suppressed_people} people ({lost:.2%}), "
                f"{self.suppressed} records ({share:.2%})",
                f"  violating people   {self.violating_records}",
            ]
            if self.event_level:
                lines.append("  vary in a person   " + ", ".join(self.event_level)
                             + " (a class holds people with the same set of values)")
        if self.tables:
            lines.insert(1, "  tables             " + ", ".join(
                f"{name} {rows:,} rows" for name, rows in self.tables.items())
                + " (checked as one stack, its column 'table' naming each row's)")
        if self.identifiers_present:
            lines.append("  identifier column(s) still present: "
                         + ", ".join(self.identifiers_present) + " (remove them)")
        for name, held in self.missing.items():
            label = next(k for k in held if k)
            lines.append(f"  missing values     {name}: {held[label]:,} x {label!r} (the "
                         f"missing label), {held['']:,} empty")
        lines += [f"  warning: {w}" for w in self.warnings]
        if self.distribution == "table":
            lines.append("  distribution       this table's own; to compare with the input's "
                         "(every record, as anonymize does), give the input: --population "
                         "FILE (population=...)")
        if self.exposed_suppressed:
            lines.append("  the suppressed records show their sensitive values, and as one "
                         "group violate " + "; ".join(self.exposed_suppressed)
                         + " (empty them, as --suppressed keep does)")
        for names, fewest in self.microaggregated.items():
            lines.append(f"  microaggregated    {names}: the fewest records sharing values "
                         f"{fewest}" + ("" if self.microaggregation_held else
                                        " (FAILS its k)"))
        lines.append("models:")
        width = max(len(m.name) for m in self.models)
        for m in self.models:
            verdict = "ok  " if m.passed else "FAIL"
            detail = f"{m.figure_name} = {_show(m.figure)}"
            if not m.passed:
                unit = "people" if self.people is not None else "record(s)"
                detail += (f"; violated by {m.violating_classes} class(es), "
                           f"{m.violating_records} {unit}")
            lines.append(f"  {verdict} {m.name:<{width}}  {detail}")
        if self.problems:
            lines.append(f"problem combinations (smallest first, {len(self.problems)} of "
                         f"{self.violating_classes}):")
            for p in self.problems:
                values = ", ".join(f"{k}={v}" for k, v in p.values.items())
                lines.append(f"  {p.size:>6} x  {values}")
                for attr, counts in (p.sensitive or {}).items():
                    shown = ", ".join(f"{v}: {c}" for v, c in counts.items())
                    lines.append(f"           {attr}: {shown}")
        return "\n".join(lines)


def _show(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def check(
    data,
    spec: Spec | str | os.PathLike,
    *,
    show_values: bool = False,
    delimiter: str | None = None,
    encoding: str | None = None,
    population=None,
    progress: bool | Progress = False,
    strict: bool = False,
    table: str | None = None,
    query: str | None = None,
    schema: str | None = None,
    password_env: str | None = None,
) -> CheckReport:
    """Check a table as it stands (raw or released) against the spec's privacy models.

    ``data`` is a file path (CSV, Parquet), a :class:`~blendin.io.Source`, or a pandas,
    polars or pyarrow table; ``spec`` a :class:`~blendin.spec.Spec` or the path of a spec
    file. ``delimiter``/``encoding`` override the spec's ``[input]``. ``population`` is the
    table the release was drawn from (the input of delta-presence): its people are counted
    in every released class, each person's values generalized to the released label that
    covers them, and t-closeness, beta-likeness and delta-disclosure compare each class with
    its distribution. ``progress=True`` (or a :class:`~blendin.progress.Progress`) shows a
    bar while a file is read. A column that looks like a direct identifier and that the
    spec names nowhere is warned of (``report.warnings``), and with ``strict`` fails the
    check. A table in a database (``data`` its URL, ``table`` or ``query`` its rows, as in
    :func:`~blendin.anonymize.anonymize`) is checked there: only its grouped rows are read.

    >>> import pandas as pd
    >>> from blendin.hierarchy.core import Hierarchy
    >>> from blendin.models import KAnonymity
    >>> df = pd.DataFrame({"age": ["20-29", "20-29", "30-39", "*"],
    ...                    "zip": ["021**", "021**", "021**", "*"]})
    >>> flat = Hierarchy.from_rows([["x", "*"]])
    >>> spec = Spec(quasi_identifiers={"age": flat, "zip": flat}, models=[KAnonymity(2)])
    >>> report = check(df, spec)
    >>> report.passed, report.classes, report.min_class_size, report.suppressed
    (False, 2, 1, 1)
    """
    spec = as_spec(spec)
    spec.validate()
    spec = spec.with_own_models()
    if isinstance(data, Mapping):  # related tables: checked as one stack
        refuse_options({"table": table, "query": query, "schema": schema,
                        "password_env": password_env})
        spec = replace(spec, delimiter=delimiter or spec.delimiter,
                       encoding=encoding or spec.encoding)
        stacked, whole = in_memory(data, spec)
        report = check(whole, stacked.spec(spec), show_values=show_values,
                       population=population, strict=strict)
        report.tables = {name: stacked.records[name] for name in stacked.names}
        return report
    if spec.tables:
        raise BlendinError(
            f"the spec names related tables ({', '.join(spec.tables)}) and one table was "
            "given", fix="give each table: --input NAME=FILE for each (a dict in Python)")

    data, _ = in_database(data, table=table, query=query, schema=schema,
                          password_env=password_env)
    engine = engine_for(data)
    tune_heap(getattr(engine, "small_process", False))
    source = (_source(data, spec, delimiter, encoding, engine.block_size)
              if engine.name == "embedded" else engine.source(data, spec))
    _has_person(spec, source.columns, engine.name)
    spec.validate_columns(source.columns, released=True)
    columns = list(dict.fromkeys([*([spec.person] if spec.person else []),
                                  *spec.quasi_identifiers, *spec.sensitive,
                                  *weighed_columns(spec)]))
    with file_pass(progress, f"checking {short_name(source)}") as told:
        # the QIs as they stand: an empty cell is not the missing label a reader sees
        distinct = engine.distinct(source, columns, "", progress=told)
    if spec.person is not None:
        require_keys(distinct, spec.person, "", lambda: source.batches([spec.person]))
    missing = _missing_values(distinct, list(spec.quasi_identifiers), spec.missing)
    distinct = merge_spellings(_sensitive_missing(distinct, list(spec.sensitive), spec.missing),
                               list(spec.sensitive), spec.normalize, COUNT)
    reference = (_input_distribution(population, spec, delimiter, encoding)
                 if population is not None and spec.sensitive else None)
    report = check_regrouped(distinct, spec, source.columns, show_values=show_values,
                             population=population, delimiter=delimiter, encoding=encoding,
                             reference=reference)
    report.missing = missing
    report.warnings[:0] = [*_empty_warnings(missing, spec.missing), *spelling_warnings(
        {name: distinct_texts(distinct.column(name)) for name in spec.sensitive})]
    overlooked = overlooked_warnings(spec, source.columns)
    if overlooked:
        report.warnings[:0] = overlooked
        report.passed = report.passed and not strict
    aggregated = [name for name, t in spec.transforms.items()
                  if isinstance(t, Microaggregate)]
    if aggregated:  # their released values, every record's (a few numeric columns)
        if not hasattr(source, "read_all"):
            raise BlendinError(f"microaggregated columns are checked on a file or a "
                               f"DataFrame, not on {engine.name}",
                               fix="check the release as a file (or export the table)")
        classes = ([q for q in spec.quasi_identifiers if q not in aggregated]
                   if set(aggregated) & set(spec.transformed_qis) else [])
        report = check_transforms(source.read_all([*aggregated, *classes]), spec, report)
    return report


def weighed_columns(spec: Spec) -> list[str]:
    """The sampling weights column, where a model weighs records by it."""
    weighed = any(isinstance(m, IndividualRisk) for m in spec.models)
    return [spec.sampling_weights] if weighed and spec.sampling_weights else []


def anonymity_floor(models: Sequence[PrivacyModel]) -> int:
    """The k of the models' k-anonymity (0 without): a microaggregated quasi-identifier's
    released values, with its class, are shared by at least this many records too."""
    return max((int(m.k) for m in models if isinstance(m, KAnonymity)), default=0)


def check_transforms(table: pa.Table, spec: Spec, report: CheckReport) -> CheckReport:
    """``report`` with the spec's microaggregations verified on the released values of
    ``table``: each set of columns aggregated together shares every released tuple among
    at least k records; where one of them is a quasi-identifier, every tuple together with
    its class (the other quasi-identifiers), among at least k and k-anonymity's k records
    (PRAM promises nothing a table can show)."""
    smallest = {}
    classes = [q for q in spec.quasi_identifiers if q in table.column_names]
    for columns, transform in transform_sets(spec.transforms):
        if not isinstance(transform, Microaggregate):
            continue
        values, k = numbers(table, columns), transform.k
        if set(columns) & set(spec.transformed_qis):  # a QI: each class's values, apart
            values = np.column_stack([values, class_of(table, classes)])
            k = max(k, anonymity_floor(spec.models))
        smallest[", ".join(columns)] = (smallest_group(values), k)
    held = all(fewest >= k or not table.num_rows for fewest, k in smallest.values())
    return replace(report, passed=report.passed and held,
                   microaggregated={name: fewest for name, (fewest, _) in smallest.items()},
                   microaggregation_held=held)


def _has_person(spec: Spec, columns: Sequence[str], engine: str) -> None:
    """The person key is there to count people by (a release never holds it)."""
    if spec.person is None:
        return
    if spec.person not in columns:
        raise BlendinError(
            f"the table has no column {spec.person!r}, the person key: people can only be "
            "counted where each record names its person (a release never holds the key; "
            "anonymize checks its release with the key before writing it)",
            fix="check the table with its key column, or leave out the person key "
                "(person under the spec's [attributes], or --person) to count records")
    if engine not in PERSON_ENGINES:
        raise BlendinError(f"the person key works on the embedded and SQL engines, not on "
                           f"{engine}", fix="check a file, a DataFrame or a table in a "
                                            "database, or leave out the person key")


def _missing_values(distinct: pa.Table, qis: Sequence[str], label: str
                    ) -> dict[str, dict[str, int]]:
    """Per QI, the records holding the spec's missing ``label`` and those holding an empty
    value (when the label is another text): what was read as missing."""
    if not label:
        return {}
    counts = distinct.column(COUNT).to_numpy()
    found = {}
    for name in qis:
        text = decoded(distinct.select([name])).column(0)
        held = {shown: int(counts[pc.equal(text, shown).to_numpy(zero_copy_only=False)].sum())
                for shown in (label, "")}
        if any(held.values()):
            found[name] = held
    return found


def _empty_warnings(missing: dict[str, dict[str, int]], label: str) -> list[str]:
    return [f"quasi-identifier {name!r}: {held['']:,} record(s) hold an empty value, which the "
            f"spec reads as missing ({label!r}): counted apart from {label!r}, as a reader of "
            f"the table sees them; fix: write missing values as {label!r}, or set missing = "
            '"" under [input]' for name, held in missing.items() if held[""]]


def _sensitive_missing(distinct: pa.Table, sensitive: Sequence[str], label: str) -> pa.Table:
    """``distinct`` with its sensitive columns' empty values read as the missing ``label``
    (a value of its own either way: one value, not two), the tuples merged."""
    if not label or not sensitive:
        return distinct
    for name in sensitive:
        at = distinct.schema.get_field_index(name)
        text = as_text(decoded(distinct.select([name])).column(0), label)
        distinct = distinct.set_column(at, pa.field(name, text.type), text)
    keys = [n for n in distinct.column_names if n != COUNT]
    merged = decoded(distinct).group_by(keys, use_threads=False).aggregate([(COUNT, "sum")])
    return merged.rename_columns([*keys, COUNT]).select(distinct.column_names)


def _input_distribution(population, spec: Spec, delimiter: str | None,
                        encoding: str | None) -> dict[str, SensitiveDomain]:
    """Each sensitive attribute's domain over every record of the input a release was drawn
    from (those delta-presence releases, where it marks a subset): its values, their counts
    and its hierarchy, as ``anonymize`` compares classes with them."""
    source = _source(population, spec, delimiter, encoding, READ_BLOCK)
    subset = subset_column(spec.models, source.columns)
    columns = list(spec.sensitive)
    batches = source.batches([*columns, *([subset] if subset else [])])
    if subset:
        batches = subset_rows(batches, subset)
    # spelled as the checked classes are (and as anonymize counted the input): normalized
    distinct = merge_spellings(decoded(distinct_tuples(batches, columns, spec.missing)),
                               columns, spec.normalize, COUNT)
    hierarchies = spec.build_sensitive_hierarchies(distinct)
    counts = distinct.column(COUNT)
    domains = {}
    for name in columns:
        summed = pa.table({"v": distinct.column(name), "n": counts}).group_by("v").aggregate(
            [("n", "sum")])
        values = np.asarray(summed.column("v").to_pylist(), dtype=object)
        overall = summed.column("n_sum").to_numpy()
        hierarchy = hierarchies.get(name)
        if hierarchy is not None:  # over the hierarchy's ground values, as anonymize counts
            overall = np.bincount(hierarchy.encode(pa.array(values.astype(str).tolist()), name),
                                  weights=overall, minlength=len(hierarchy.ground))
            values = hierarchy.ground
        domains[name] = SensitiveDomain(name, values, np.asarray(overall, np.int64), hierarchy)
    return domains


def check_regrouped(distinct: pa.Table, spec: Spec, columns: Sequence[str], *,
                    show_values: bool = False, population=None,
                    delimiter: str | None = None, encoding: str | None = None,
                    reference: Mapping[str, SensitiveDomain] | None = None) -> CheckReport:
    """The checker's verdict on a table regrouped by an engine: ``distinct`` holds its
    distinct (QI, sensitive) text tuples with their counts (column ``COUNT``), ``columns``
    are the table's columns (an identifier among them fails the check).

    ``reference`` gives, per sensitive attribute, the domain its classes are compared with
    (t-closeness, beta-likeness, delta-disclosure): the values, their distribution over
    every record of the input the table was drawn from (docs/spec.md), and the attribute's
    hierarchy. Without it the table's own records make it, which is the input's for a table
    of raw records.

    >>> from blendin.models import KAnonymity
    >>> flat = Hierarchy.from_rows([["x", "*"]])
    >>> spec = Spec(quasi_identifiers={"age": flat}, models=[KAnonymity(2)])
    >>> regrouped = pa.table({"age": ["20-29", "*"], COUNT: [3, 1]})
    >>> check_regrouped(regrouped, spec, ["age"]).passed
    True
    """
    qis = list(spec.quasi_identifiers)
    sensitive = list(spec.sensitive)
    distinct = merge_spellings(distinct, sensitive, spec.normalize, COUNT)
    rows = None
    if spec.person is not None:  # one row a person: the classes count people
        row_counts = distinct.column(COUNT).to_numpy().astype(np.int64)
        starred = _all_suppressed([_codes(distinct.column(q)) for q in qis], distinct.num_rows)
        rows = int(row_counts.sum()), int(row_counts[starred].sum())
        distinct, by_person, signature = per_person(distinct, spec.person, qis, sensitive,
                                                    spec.missing)
    counts = distinct.column(COUNT).to_numpy().astype(np.int64)
    records = int(counts.sum())
    qi_codes = [_codes(distinct.column(name)) for name in qis]
    kept = ~_all_suppressed(qi_codes, distinct.num_rows)
    by_cells = spec.suppression == "cells"
    if by_cells:  # a record blank in every QI is released, and matches every record
        kept[:] = True
    visible = _visible_suppressed(spec, distinct, kept)
    domains, value_codes = _domains(distinct, sensitive, spec, counts, kept | visible,
                                    reference)
    grouped = qi_codes
    if rows is not None and signature is not None:  # the joint set of event tuples
        grouped = [*qi_codes, (np.arange(int(signature.max(initial=0)) + 1), signature)]
    class_of, first_row, n_classes = _group(grouped, kept)
    widest = max((len(d.labels) for d in domains.values()), default=1)
    parts = class_slices(n_classes, widest)
    # (the histograms of many classes by many values: made a slice of classes at a time)
    slicing = len(parts) > 1 and not by_cells
    classes = _classes(class_of, n_classes, counts[kept],
                       {} if slicing else value_codes, kept, domains)
    sliced = None
    if slicing:
        kept_codes = {name: codes[kept] for name, codes in value_codes.items()}
        sliced = [(part, partial(_part, classes, class_of, counts[kept], kept_codes, part, rows))
                  for part, rows in zip(parts, in_slices(class_of, parts))]
    cells = None
    if by_cells:  # a blank cell matches any value (docs/sdc.md)
        classes, cells = _compatible(qis, qi_codes, counts, first_row, classes)
    exposed = _exposed(spec.models, counts, visible, value_codes, domains)
    people = {i: _weights_per_class(spec, distinct, class_of, n_classes, kept, counts)
              if isinstance(m, IndividualRisk) else
              _people(spec, distinct, qis, first_row, kept,
                      _population_source(m, population, spec, delimiter, encoding))
              for i, m in enumerate(spec.models) if m.needs_population}
    results, ok = _evaluate(spec.models, classes, records, domains, people, sliced)
    problems = _problems(distinct, qis, first_row, classes, ok, spec.models,
                         show_values=show_values, sliced=sliced)
    present = spec.identifiers_present(columns)
    all_ok = np.logical_and.reduce(ok) if ok else np.ones(n_classes, bool)
    counted = {"records": records, "suppressed": int(counts[~kept].sum()),
               "cells": cells}
    if rows is not None:
        counted = {"records": rows[0], "suppressed": rows[1], "people": records,
                   "suppressed_people": counted["suppressed"],
                   "event_level": list(by_person.event_level)}
    return CheckReport(
        passed=all(r.passed for r in results) and not present and not exposed,
        classes=n_classes,
        min_class_size=int(classes.sizes.min()) if n_classes else None,
        violating_records=int(classes.sizes[~all_ok].sum()),
        models=results,
        problems=problems,
        violating_classes=int((~all_ok).sum()),
        identifiers_present=present,
        quasi_identifiers=qis,
        exposed_suppressed=exposed,
        distribution=(("input" if reference else "table")
                      if any(m.compares_distribution for m in spec.models) else None),
        **counted,
    )


def _source(data, spec: Spec, delimiter: str | None, encoding: str | None,
            block_size: int) -> Source | SqlSource:
    if isinstance(data, Source | SqlSource):
        return data
    if isinstance(data, str | os.PathLike):
        # the spec's delimiter, unless the file was written with another (a release with
        # commas): see source_with_columns
        columns = [*([spec.person] if spec.person else []), *spec.quasi_identifiers,
                   *spec.sensitive, *spec.insensitive]
        return source_with_columns(data, columns, delimiter=delimiter,
                                   expected=spec.delimiter, encoding=encoding or spec.encoding,
                                   block_size=block_size)
    return Source(data)


def _all_suppressed(qi_codes: Sequence[tuple[np.ndarray, np.ndarray]], rows: int) -> np.ndarray:
    """True for rows whose every quasi-identifier is ``*`` (``qi_codes`` as from
    :func:`_codes`)."""
    mask = np.ones(rows, dtype=bool)
    for labels, index in qi_codes:
        mask &= index == _star(labels)  # -1 (no ``*`` among the labels) matches no row
    return mask


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct texts of a column and each row's index among them.

    Of a dictionary-encoded column only the entries are read: the labels are the texts of
    the entries its rows use (a null entry reads as the empty text, as
    :func:`~blendin.frequency.as_text` reads it; two entries holding one text are one
    label), and each row's index is its entry's, found by a binary search among the labels
    (a release's few distinct rows cost a few NumPy calls, not a hash table per column). A
    text column is hashed row by row.
    """
    if (pa.types.is_dictionary(column.type) and pa.types.is_string(column.type.value_type)
            and not column.null_count):
        chunks = column.chunks
        texts = [(pc.fill_null(c.dictionary, "") if c.dictionary.null_count else c.dictionary
                  ).to_numpy(zero_copy_only=False) for c in chunks]
        rows = [c.indices.to_numpy() for c in chunks]
        if len(chunks) == 1 and len(texts[0]) == 1 and len(rows[0]):
            # one entry (a QI at its top, say): one label, every row's
            return texts[0], np.zeros(len(rows[0]), np.int64)
        used = [t[np.bincount(r, minlength=len(t)) > 0] for t, r in zip(texts, rows)]
        labels = np.unique(np.concatenate([np.zeros(0, object), *used]))
        # an entry no row uses may land anywhere: no index points to it
        parts = [np.searchsorted(labels, t).astype(np.int64)[r] for t, r in zip(texts, rows)]
        return labels, np.concatenate([np.zeros(0, np.int64), *parts])
    column = decoded(pa.table({"c": column})).column(0)
    labels = np.array(sorted(pc.unique(column).to_pylist()), dtype=object)
    index = pc.index_in(column, value_set=pa.array(labels.tolist(), pa.string()))
    return labels, index.to_numpy(zero_copy_only=False).astype(np.int64)


def _group(qi_codes: Sequence[tuple[np.ndarray, np.ndarray]], kept: np.ndarray):
    """Class id of every kept distinct row, the first row of each class, number of classes."""
    codes = [index[kept] for _, index in qi_codes]
    radices = [max(len(labels), 1) for labels, _ in qi_codes]
    stacked = (np.stack(codes, axis=1) if codes and len(codes[0]) else
               np.zeros((int(kept.sum()), len(qi_codes)), np.int64))
    key = combine_keys(stacked, radices)
    _, first, class_of = np.unique(key, return_index=True, return_inverse=True)
    kept_rows = np.flatnonzero(kept)
    return class_of.reshape(-1), kept_rows[first], len(first)


def _compatible(qis: Sequence[str], qi_codes: Sequence[tuple[np.ndarray, np.ndarray]],
                counts: np.ndarray, first_row: np.ndarray, classes: Classes):
    """Suppression by cells: each class's size is the records compatible with it, equal
    wherever neither shows ``*`` (records blank in every QI count too: they are released,
    not suppressed). Also the ``*`` cells of each QI."""
    codes = np.stack([index for _, index in qi_codes], axis=1)
    stars = np.stack([index == _star(labels) for labels, index in qi_codes], axis=1)
    sizes = compatible(codes, stars, counts, codes[first_row], stars[first_row])
    cells = (stars * counts[:, None]).sum(axis=0)
    return replace(classes, sizes=sizes), dict(zip(qis, (int(n) for n in cells)))


def _star(labels: np.ndarray) -> int:
    """The index of ``*`` among sorted distinct ``labels``; -1 when it is not one."""
    at = np.flatnonzero(labels == SUPPRESSED)
    return int(at[0]) if len(at) else -1


def _domains(distinct: pa.Table, sensitive: Sequence[str], spec: Spec, counts: np.ndarray,
             known: np.ndarray, reference: Mapping[str, SensitiveDomain] | None = None):
    """Per sensitive attribute: its domain (the overall distribution: the ``reference``'s,
    else that of the ``known`` rows: those in classes, and the suppressed ones that show
    their values) and each row's code (0 for the rows not ``known``: they have no value)."""
    reference = reference or {}
    every = bool(known.all())
    shown = distinct if every else distinct.filter(pa.array(known))
    hierarchies = (spec.build_sensitive_hierarchies(shown)
                   if any(n not in reference for n in spec.sensitive_builders()) else {})
    domains, value_codes = {}, {}
    for name in sensitive:
        column = shown.column(name)
        given = reference.get(name)
        hierarchy: Hierarchy | None = (given.hierarchy if given is not None
                                       else hierarchies.get(name))
        if hierarchy is not None:
            labels, codes = hierarchy.ground, hierarchy.encode(column, name).astype(np.int64)
        else:
            labels, codes = _codes(column)
            if given is not None:  # the values of both, in one sorted domain
                union = np.union1d(labels.astype(str), np.asarray(given.labels).astype(str))
                codes = np.searchsorted(union, labels.astype(str))[codes]
                labels = union.astype(object)
        if not every:
            codes = _spread(codes, known)
        if given is None:
            overall = np.bincount(codes[known], weights=counts[known], minlength=len(labels))
        elif given.labels is labels:
            overall = given.overall
        else:
            at = np.searchsorted(labels.astype(str), np.asarray(given.labels).astype(str))
            overall = np.bincount(at, weights=given.overall, minlength=len(labels))
        domains[name] = SensitiveDomain(name, labels, np.asarray(overall, np.int64), hierarchy)
        value_codes[name] = codes
    return domains, value_codes


def _spread(codes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``codes`` of the ``rows`` (a mask) placed at them, 0 elsewhere."""
    out = np.zeros(len(rows), np.int64)
    out[rows] = codes
    return out


def _visible_suppressed(spec: Spec, distinct: pa.Table, kept: np.ndarray) -> np.ndarray:
    """The suppressed rows (every QI ``*``) that form a visible group: none where none shows
    a sensitive value (each is empty or ``*``), else every one of them. An empty value in
    the group is the missing value, as in a class: a release at the top node (every label
    ``*``) reads as suppressed records, and its one class counted it so."""
    shown = np.zeros(distinct.num_rows, bool)
    if kept.all():
        return shown
    for name in spec.sensitive:
        text = as_text(decoded(distinct.select([name])).column(0), spec.missing)
        blank = pc.or_(pc.equal(text, spec.missing), pc.equal(text, SUPPRESSED))
        shown |= ~blank.to_numpy(zero_copy_only=False)
    return ~kept if (shown & ~kept).any() else np.zeros_like(shown)


def _exposed(models: Sequence[PrivacyModel], counts: np.ndarray, visible: np.ndarray,
             value_codes, domains) -> list[str]:
    """The sensitive models that the ``visible`` suppressed rows violate as one class. A
    release keeps its suppressed records' sensitive values empty: shown, they form a group
    anyone can read (were they all one diagnosis, everyone missing from the classes would be
    known to have it)."""
    if not visible.any():
        return []
    group = _classes(np.zeros(int(visible.sum()), np.int64), 1, counts[visible], value_codes,
                     visible, domains)
    return [model_name(m) for m in models if m.attribute is not None
            and not np.asarray(m.holds(group), dtype=bool).all()]


def _classes(class_of, n_classes, counts, value_codes, kept, domains) -> Classes:
    sizes = np.bincount(class_of, weights=counts, minlength=n_classes).astype(np.int64)
    histograms = {}
    for name, codes in value_codes.items():
        width = len(domains[name].labels)
        flat = class_of * width + codes[kept]
        hist = np.bincount(flat, weights=counts, minlength=n_classes * width)
        histograms[name] = hist.astype(np.int64).reshape(n_classes, width)
    return Classes(sizes, histograms, domains)


def _part(classes: Classes, class_of, counts, kept_codes: dict, part: slice,
          rows: np.ndarray) -> Classes:
    """The classes of ``part``, their histograms summed from ``rows`` (their rows)."""
    local, n = class_of[rows] - part.start, part.stop - part.start
    return Classes(classes.sizes[part], {
        name: summed(local, codes[rows], counts[rows], n, len(classes.domains[name].labels))
        for name, codes in kept_codes.items()}, classes.domains)


def model_name(model: PrivacyModel) -> str:
    """A short readable name: ``k-anonymity (k=5)``, ``distinct-l-diversity (occupation, l=3)``.

    >>> from blendin.models import KAnonymity
    >>> model_name(KAnonymity(5))
    'k-anonymity (k=5)'
    """
    params = {k: v for k, v in model.params().items()
              if v is not None and not k.startswith("hierarchy")}
    attribute = params.pop("attribute", None)
    parts = ([attribute] if attribute else []) + [f"{k}={v}" for k, v in params.items()]
    return f"{model.key} ({', '.join(parts)})" if parts else model.key


def _evaluate(models, classes: Classes, records: int, domains, people=None, sliced=None):
    """Each model's verdict per class and figure; a model of a sensitive attribute on the
    histograms of ``sliced`` (slices of the classes, and how to make each) where given."""
    results, ok = [], []
    by_slices = None  # (each slice made once, for every model of a sensitive attribute)
    for i, model in enumerate(models):
        with contextlib.suppress(Unmeetable):  # (then no class holds: the verdict says so)
            model.validate(records, domains)
        if model.needs_population:
            classes = replace(classes, population=people[i])
        if sliced and model.attribute is not None:
            if by_slices is None:
                by_slices = _in_slices([m for m in models if m.attribute is not None], sliced)
            holds, figure = by_slices[model]
        else:
            holds = (np.asarray(model.holds(classes), dtype=bool) if len(classes)
                     else np.zeros(0, bool))
            figure = float(model.figure(classes)) if len(classes) else float("nan")
        ok.append(holds)
        results.append(ModelResult(
            name=model_name(model),
            model=model.key,
            attribute=model.attribute,
            passed=bool(holds.all()),
            figure_name=model.figure_name or "figure",
            figure=figure,
            violating_classes=int((~holds).sum()),
            violating_records=int(classes.sizes[~holds].sum()),
        ))
    return results, ok


def _in_slices(models: Sequence[PrivacyModel], sliced) -> dict:
    """Each model's verdict per class and its figure (the worst class's), a slice of
    classes at a time."""
    holds = {model: [] for model in models}
    values = {model: [] for model in models}
    for _, make in sliced:
        part = make()
        for model in models:
            holds[model].append(np.asarray(model.holds(part), dtype=bool))
            values[model].append(np.asarray(model.per_class(part), dtype=float))
    out = {}
    for model in models:
        every = np.concatenate(values[model])
        out[model] = (np.concatenate(holds[model]),
                      float(every.min() if model.larger_is_better else every.max()))
    return out


def _histograms_of(classes: Classes, sliced, cls: int):
    """The histograms that hold class ``cls``, and its row there (its slice's, if sliced)."""
    for part, make in sliced or ():
        if part.start <= cls < part.stop:
            return make().histograms, cls - part.start
    return classes.histograms, cls


def _problems(distinct, qis, first_row, classes: Classes, ok, models, *,
              show_values: bool, sliced=None) -> list[Problem]:
    if not ok:
        return []
    bad = np.flatnonzero(~np.logical_and.reduce(ok))
    if not len(bad):
        return []
    labels = {name: np.array(distinct.column(name).take(pa.array(first_row[bad])).to_pylist(),
                             dtype=object) for name in qis}
    # smallest first; ties in label order so the listing is stable
    order = np.lexsort([*(labels[n].astype(str) for n in reversed(qis)), classes.sizes[bad]])
    problems = []
    for i in order[:MAX_PROBLEMS]:
        cls = bad[i]
        sensitive = None
        if show_values:
            sensitive = {}
            rows, at = _histograms_of(classes, sliced, cls)
            for name, hist in rows.items():
                row = hist[at]
                values = classes.domains[name].labels
                sensitive[name] = {str(values[j]): int(row[j]) for j in np.flatnonzero(row)}
        problems.append(Problem(
            values={name: str(labels[name][i]) for name in qis},
            size=int(classes.sizes[cls]),
            violates=[model_name(m) for m, h in zip(models, ok) if not h[cls]],
            sensitive=sensitive,
        ))
    return problems


def _weights_per_class(spec: Spec, distinct: pa.Table, class_of: np.ndarray, n_classes: int,
                       kept: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The people each class stands for: the sum of its records' sampling weights (the
    spec's ``[attributes] sampling_weights``, a column of the table), or its records."""
    if spec.sampling_weights is None:
        people = counts[kept].astype(float)
    else:
        if spec.sampling_weights not in distinct.column_names:
            raise BlendinError(
                f"individual-risk weighs each record by {spec.sampling_weights!r}, which "
                "the table lacks", fix="check the table with its sampling weights column")
        weights = sampling_weights(distinct.column(spec.sampling_weights).filter(
            pa.array(kept)), spec.sampling_weights, "[attributes] sampling_weights")
        people = weights * counts[kept]
    return np.bincount(class_of, weights=people, minlength=n_classes)


def _population_source(model, population, spec: Spec, delimiter, encoding) -> Source:
    """The table whose people ``model`` counts: its own (k-map) or the one given."""
    if hasattr(model, "path"):
        return population_source(model.path(spec.base_dir), list(spec.quasi_identifiers),
                                 delimiter=spec.delimiter, encoding=spec.encoding)
    if population is None:
        raise BlendinError(
            "delta-presence is checked against the population the release was drawn from, "
            "and none was given", fix="give the input table: population=... (API) or "
            "--population FILE (blendin check)")

    source = _source(population, spec, delimiter, encoding, READ_BLOCK)
    spec.validate_columns(source.columns)
    return source


def _people(spec: Spec, distinct: pa.Table, qis: Sequence[str], first_row: np.ndarray,
            kept: np.ndarray, population: Source) -> np.ndarray:
    """People of the population in every released class: each person's value of a QI is
    generalized to the lowest of its hierarchy's labels that the release shows (the
    release's level, for a full-domain release), and people are counted by those labels."""
    distinct = decoded(distinct)
    # grouped by the population's engine (in its database, for a table in one)
    people = engine_for(population).distinct(population, qis, spec.missing)
    hierarchies = spec.build_hierarchies(people)
    shown = distinct.filter(pa.array(kept))
    class_codes, people_codes, radices = [], [], []
    for name in qis:
        labels = np.array(sorted(pc.unique(shown.column(name)).to_pylist()), dtype=object)
        hierarchy = hierarchies[name]
        covering = np.full(len(hierarchy.ground), -1, np.int64)
        for level in range(hierarchy.height):  # the lowest shown label covering each value
            text = np.asarray(hierarchy.labels[level], dtype=object).astype(str)[
                hierarchy.codes[level]]
            position = np.searchsorted(labels.astype(str), text) if len(labels) else (
                np.zeros(len(text), np.int64))
            position = np.minimum(position, max(len(labels) - 1, 0))
            found = (labels.astype(str)[position] == text) if len(labels) else np.zeros(
                len(text), bool)
            covering = np.where((covering < 0) & found, position, covering)
        people_codes.append(covering[hierarchy.encode(people.column(name), name)])
        representative = distinct.column(name).take(pa.array(first_row)).to_pylist()
        class_codes.append(np.searchsorted(labels.astype(str), np.array(
            representative, dtype=object).astype(str)).astype(np.int64))
        radices.append(max(len(labels), 1))
    counts = people.column(COUNT).to_numpy().astype(np.int64)
    covered = np.logical_and.reduce([c >= 0 for c in people_codes])
    stacked = np.concatenate([np.stack(people_codes, axis=1)[covered],
                              np.stack(class_codes, axis=1)])
    key = combine_keys(stacked, radices)
    n = int(covered.sum())
    uniq, inverse = np.unique(key[:n], return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=counts[covered], minlength=len(uniq))
    if not len(uniq):
        return np.zeros(len(first_row), np.int64)
    pos = np.minimum(np.searchsorted(uniq, key[n:]), len(uniq) - 1)
    return np.where(uniq[pos] == key[n:], sums[pos], 0).astype(np.int64)
