"""The result of a run: the release and the figures that describe it (:class:`Result`)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from blendin import report as reports  # the HTML report's heavy parts load on first use
from blendin.anonymize.solutions import model_dict, plain, solution_dict
from blendin.engines import is_spark
from blendin.engines.databases import is_database
from blendin.engines.spark import SparkEngine
from blendin.errors import BlendinError
from blendin.excel import class_ids, class_styler
from blendin.hierarchy.core import Hierarchy
from blendin.io import Source, file_kind, to_arrow, write_table, write_text
from blendin.outputs import check_paths, pending_location
from blendin.related import check_folder, table_paths, write_tables
from blendin.spec import Spec
from blendin.summaries import (
    SAFEPUB,
    cells_text,
    fully_generalized,
    minimal_nodes,
    not_proven,
    result_summary,
    safepub_words,
    summary_notes,
)
from blendin.utility import utility


def _fmt(value) -> str:
    if isinstance(value, float | np.floating):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    return str(value)


@dataclass(eq=False)
class Result:
    """What :func:`anonymize` did: the release and the figures that describe it.

    ``data`` is the release, of the same kind as the input (pandas, polars or pyarrow; a
    pyarrow Table for a file path). ``levels`` maps each QI to its generalization level
    (empty for Mondrian, which recodes locally). ``utility`` holds every utility figure;
    ``classes`` and ``min_class_size`` describe the released equivalence classes;
    ``suppressed`` counts the records removed (or blanked to ``*`` when kept); ``check`` is
    the independent checker's report on the release.
    """

    data: Any
    levels: dict[str, int]
    utility: dict[str, float]
    classes: int
    min_class_size: int
    suppressed: int
    records: int
    nodes_checked: int
    seconds: float
    algorithm: str
    metric: str
    check: Any
    solution: Any
    spec: Spec
    hierarchies: dict[str, Hierarchy] = field(default_factory=dict)
    suppressed_mode: str = "drop"
    #: hierarchies of sensitive attributes (hierarchical t-closeness), saved with a solution
    sensitive_hierarchies: dict[str, Hierarchy] = field(default_factory=dict)
    #: what a saved solution re-applied to this data showed (None for a fresh search)
    applied_from: str | None = None
    #: the file the release was written to by anonymize(output=...), if any
    written: Path | None = None
    #: the table in a database the release was made as (anonymize(output_table=...))
    written_table: Any = None
    #: the input, when it is a table in a database (the report reads it there)
    source: Any = None
    #: the files the run read (its data, where a file): no write of this Result replaces
    #: one, nor a file the spec reads (:meth:`write`, :meth:`report`, :meth:`save_solution`)
    read: dict[str, Path] = field(default_factory=dict, repr=False)
    #: the algorithm asked for (``algorithm`` is the one that ran: they differ for auto)
    requested_algorithm: str = ""
    #: why auto chose the algorithm that ran
    algorithm_reason: str = ""
    #: the node is proven the best acceptable one (None where that does not apply)
    proven_optimal: bool | None = None
    #: with recode_suppressed: the further parts, each {"levels", "records"} (records
    #: released at that node out of those the first part suppressed)
    recoded_parts: list[dict] = field(default_factory=list)
    #: what the user should know of the release: columns that look like direct identifiers
    #: released as they are, a sensitive value spelled several ways
    warnings: list[str] = field(default_factory=list)
    #: with a person key: the people, those suppressed, the QIs by level (``classes``,
    #: ``min_class_size`` count people; ``records`` and ``suppressed`` count rows)
    people: dict | None = None
    #: related tables: each released table (its key a random person number; ``data`` is
    #: then their stack, as checked) and each input table's rows
    tables: dict[str, Any] | None = None
    records_by_table: dict[str, int] | None = None
    released_by_table: dict[str, int] | None = None
    #: the stack's column naming each row's table (a quasi-identifier never generalized)
    table_column: str | None = None
    #: with a person key, in memory: each released row's person as a number (0, 1, ...;
    #: never the key), so that the report measures the release's risk in people
    release_people: Any = field(default=None, repr=False)
    #: suppression by cells: the cells blanked (``*``) per QI, in ``cell_records`` records
    #: that are released, not removed (``suppressed`` is then 0)
    cells: dict[str, int] | None = None
    cell_records: int = 0
    #: ... and the records that fell short of k at the node (what the suppression limit
    #: counts)
    short_records: int = 0
    #: what the spec's transforms did (microaggregation, PRAM), one entry a column set
    transformed: list = field(default_factory=list)

    @property
    def table(self) -> pa.Table:
        """The release as a pyarrow Table (what is written to files); a release streamed to
        a file is read back from it."""
        if self.data is None and self.written_table is not None:
            return self.written_table.read_all()
        if self.data is None and self.written is not None:
            # a file of a run still writing its other outputs lies under a temporary name
            where = pending_location(self.written)
            if where.is_dir():  # Spark's folder of part files
                import pyarrow.dataset as ds

                kind = "parquet" if self.written.suffix.lower() == ".parquet" else "csv"
                return ds.dataset(where, format=kind).to_table()
            return Source(where, kind=file_kind(self.written)).read_all()
        return to_arrow(self.data)

    def table_with_people(self) -> pa.Table:
        """The release, with each row's person number (0, 1, ...; never the key) in the
        person key's column where the run kept them (in memory, with a key): what
        measures the release's risk in people (``risk(..., person=spec.person)``)."""
        table = self.table
        people, key = self.release_people, self.spec.person
        if people is None or key is None or len(people) != table.num_rows:
            return table
        return table.append_column(key, pa.array(people))

    def person_counted(self, columns) -> str | None:
        """The person key, where the release's rows are counted by it on ``columns`` (the
        columns hold one value a person); else None."""
        people = self.people
        if people and set(columns) <= set(people["person_level"]):
            return self.spec.person
        return None

    @property
    def heights(self) -> dict[str, int]:
        """Number of levels of each QI's hierarchy."""
        return {q: h.height for q, h in self.hierarchies.items()}

    def __repr__(self) -> str:
        return result_summary(self).text()

    def _repr_html_(self) -> str:
        """The summary as a small HTML table, verdict first (shown by notebooks)."""
        return result_summary(self).html()

    def to_dict(self) -> dict:
        """The figures as plain JSON-ready values (no data)."""
        return {
            "algorithm": self.algorithm,
            "metric": self.metric,
            "levels": dict(self.levels),
            "heights": self.heights if self.levels else {},
            "records": self.records,
            "released": self.records - (self.suppressed if self.suppressed_mode == "drop"
                                        else 0),
            "suppressed": self.suppressed,
            "suppressed_share": self.suppressed / self.records if self.records else 0.0,
            "suppressed_mode": self.suppressed_mode,
            "max_suppression": self.spec.max_suppression,
            "classes": self.classes,
            "min_class_size": self.min_class_size,
            "utility": {k: plain(v) for k, v in self.utility.items()},
            "nodes_checked": self.nodes_checked,
            "seconds": round(self.seconds, 6),
            "models": [model_dict(m, self.spec.base_dir) for m in self.spec.models],
            "check_passed": self.check.passed,
            "check": self.check.to_dict(),
            "applied_from": self.applied_from,
            "minimal": minimal_nodes(self),
            "fully_generalized": fully_generalized(self),
            "requested_algorithm": self.requested_algorithm or self.algorithm,
            "algorithm_reason": self.algorithm_reason,
            "proven_optimal": self.proven_optimal,
            "recoded_parts": [dict(p) for p in self.recoded_parts],
            "recovered": self.recovered,
            "warnings": list(self.warnings),
            "people": dict(self.people) if self.people else None,
            "transformed": [applied.to_dict() for applied in self.transformed],
            "cells": None if self.cells is None else {
                "blanked": dict(self.cells), "records": self.cell_records,
                "short_of_k": self.short_records},
            "tables": {name: {"records": rows, "released": self.released_by_table[name]}
                       for name, rows in self.records_by_table.items()}
            if self.records_by_table else None,
        }

    @property
    def recovered(self) -> int:
        """Records the first part suppressed that the recoded parts release."""
        return sum(int(p["records"]) for p in self.recoded_parts)

    def summary(self) -> str:
        """A few lines saying what was done, for people."""
        lines = []
        what = "re-applied the saved solution" if self.applied_from else (
            "mondrian partitioning" if self.algorithm == "mondrian"
            else safepub_words(self) if self.algorithm == SAFEPUB
            else f"{self.algorithm} search, metric {self.metric}")
        lines.append(f"anonymized {self.records:,} records ({what})" if not
                     self.records_by_table else f"anonymized related tables as one stack of "
                     f"{self.records:,} rows ({what})")
        if self.records_by_table:
            counts = ", ".join(f"{name} {rows:,} rows ({self.released_by_table[name]:,} "
                               "released)"
                               for name, rows in self.records_by_table.items())
            lines.append(f"related tables: {counts}; checked together as one stack (its "
                         f"column {self.table_column!r}, never generalized, names each "
                         "row's table)")
        people = self.people
        if people:
            key = ("the tables' keys" if self.records_by_table
                   else f"person key {self.spec.person!r}")
            lines.append(f"people: {people['people']:,} ({key}); "
                         "every class counted in people")
            levels = [f"{q} varies within a person" for q in people["event_level"]]
            levels += [f"{q} is one value a person" for q in people["person_level"]]
            lines.append("quasi-identifiers: " + "; ".join(levels))
        if self.algorithm_reason:
            lines.append(f"{self.requested_algorithm or 'auto'}: {self.algorithm_reason}")
        if self.proven_optimal is not None and not self.applied_from:
            lines.append("proven optimal: " + ("yes" if self.proven_optimal else
                                               f"no ({not_proven(self.algorithm)})"))
        if self.levels:
            heights = self.heights
            parts = [f"{q} {lvl}/{heights[q] - 1}" for q, lvl in self.levels.items()]
            lines.append("levels: " + ", ".join(parts))
        for i, part in enumerate(self.recoded_parts, start=2):
            levels = ", ".join(f"{q} {lvl}" for q, lvl in part["levels"].items())
            lines.append(f"part {i}: {part['records']:,} suppressed records recovered at "
                         f"levels {levels}")
        share = 100 * self.suppressed / self.records if self.records else 0.0
        how = "removed" if self.suppressed_mode == "drop" else (
            "kept with * in every QI, sensitive values empty")
        if people:
            gone = people["suppressed_people"]
            lines.append(f"suppressed: {gone:,} people "
                         f"({100 * gone / max(people['people'], 1):.2f}%, limit "
                         f"{100 * self.spec.max_suppression:g}%), {self.suppressed:,} records "
                         f"({share:.2f}%), {how}")
        elif self.cells is not None:
            short = 100 * self.short_records / max(self.records, 1)
            lines.append(f"blanked cells: {cells_text(self.cells)} in {self.cell_records:,} "
                         "records, released with * there, none removed ("
                         f"{self.short_records:,} records fell short of k, {short:.2f}%, limit "
                         f"{100 * self.spec.max_suppression:g}%)")
        else:
            lines.append(f"suppressed: {self.suppressed:,} records ({share:.2f}%, limit "
                         f"{100 * self.spec.max_suppression:g}%), {how}")
        unit = " people" if people else ""
        smallest = ("the fewest compatible records" if self.cells is not None
                    else "smallest")
        lines.append(f"classes: {self.classes:,}, {smallest} {self.min_class_size:,}{unit}")
        if self.utility:
            lines.append("utility: " + ", ".join(
                f"{k} {_fmt(v)}" for k, v in self.utility.items())
                + (" (of the node, the records with blanks counted as suppressed)"
                   if self.cells is not None else ""))
        if self.applied_from is None and self.algorithm not in ("mondrian", SAFEPUB):
            lines.append(f"nodes checked: {self.nodes_checked:,}")
        lines.append(f"time: {self.seconds:.3f} s")
        lines += [applied.line() for applied in self.transformed]
        models = "; ".join(str(m) for m in self.spec.models)
        lines.append(f"verified by the checker: {models}")
        lines += summary_notes(self)
        return "\n".join(lines)

    def utility_report(self, original, *, target: str | None = None, **options):
        """How much of ``original`` (the input of this run) the release keeps, column by
        column (:func:`blendin.utility.utility`; ``target`` adds the classification)."""
        if self.records_by_table:
            raise BlendinError("the utility report compares one table with its release",
                               fix="measure each released table against its input")
        return utility(original, self.table, self.spec, target=target, **options)

    def save_solution(self, path: str | os.PathLike) -> Path:
        """Write the solution as JSON: levels, inline hierarchies, models, limits.

        Re-applying it (:func:`apply_solution`, ``blendin apply``) needs nothing else. With
        recoded suppressed records (``recode_suppressed``) it holds the first part's levels:
        re-applied, the records that part suppresses stay suppressed.
        """
        payload = self.solution_dict()
        self._check_write(path, "json")
        return write_text(path, json.dumps(payload, indent=1, ensure_ascii=False) + "\n")

    def solution_dict(self) -> dict:
        """The solution as :meth:`save_solution` writes it (a dict ready for JSON)."""
        if not self.levels:
            raise BlendinError(
                f"a {self.algorithm} release has no levels to save (it recodes each group "
                "on its own)",
                fix="save solutions of full-domain searches (optimal, exhaustive, binary, "
                "datafly)")
        return solution_dict(self.spec, self.hierarchies, self.levels,
                             self.sensitive_hierarchies)

    def report(self, path: str | os.PathLike, *, original=None,
               threshold: float | None = None, external=None, on=None,
               population: float | None = None) -> Path:
        """Write the HTML release report (see :func:`blendin.report.html.write_report`);
        give ``original`` (the input) to compare the risk before and after, ``external``
        (an identified table) for the linking attack, ``population`` for the
        population-based risk."""
        self._check_write(path, "report", original=original, external=external)
        return reports.write_report(self, path, original=original, threshold=threshold,
                            external=external, on=on, population=population)

    def _check_write(self, path, kind: str, **given) -> None:
        """Before this Result writes ``path`` (of ``kind``, see
        :func:`blendin.outputs.check_paths`): it is none of the files its run read, nor
        one the spec reads, nor one ``given`` to read in the same call, nor the release the
        run wrote; an existing other file is replaced, unless it is read-only."""
        read = {**self.read, **self.spec.files_read(), **{
            f"the {name} given": file_of(value) for name, value in given.items()
            if file_of(value) is not None}}
        if self.written is not None:
            read["the release the run wrote"] = self.written
        check_paths(read, {"the output": (path, kind)}, force=True)

    def write(self, path: str | os.PathLike, *, delimiter: str | None = ",",
              escape_formulas: bool = False) -> Path:
        """Write the (already verified) release atomically: CSV, Parquet or Excel by extension.

        A CSV release is written with ``delimiter``; None takes the spec's ``[input]
        delimiter`` (else ``,``), as :func:`anonymize` does by default.

        In Excel each equivalence class gets its own background colour and every text is
        text (never a formula); ``escape_formulas`` guards a CSV the same way (see
        :func:`blendin.io.write_table`).
        """
        if self.records_by_table:  # related tables: a folder, one CSV file a table
            return write_related(self, path, delimiter or self.spec.delimiter or ",",
                                 escape_formulas)
        if self.written is not None and Path(path).resolve() == self.written.resolve():
            return self.written  # streamed there after the check
        if not (is_spark(self.data) and "://" in str(path)):  # (a cluster's: Spark's own)
            self._check_write(path, "table")
        delimiter = delimiter or self.spec.delimiter or ","
        if is_spark(self.data) and not str(path).lower().endswith(".xlsx"):
            return SparkEngine(self.data.sparkSession).write(
                self.data, path, delimiter=delimiter, escape_formulas=escape_formulas)
        table = self.table
        styler = None
        if str(path).lower().endswith(".xlsx"):
            styler = class_styler(class_ids(table, list(self.spec.quasi_identifiers)))
        return write_table(table, path, delimiter=delimiter, xlsx_styler=styler,
                           escape_formulas=escape_formulas)




def file_of(data) -> Path | None:
    """The file ``data`` is, where it is one on this machine (a path, or a Source of one).

    >>> file_of("in.csv"), file_of("postgresql://me@db/x"), file_of([1])
    (PosixPath('in.csv'), None, None)
    """
    value = getattr(data, "path", data)  # (a Source: its file)
    if isinstance(value, str | os.PathLike) and not is_database(value) \
            and "://" not in str(value):
        return Path(value)
    return None


def write_related(result: Result, folder: str | os.PathLike, delimiter: str,
                  escape_formulas: bool) -> Path:
    """Write each released table of ``result`` to ``folder`` as NAME.csv, all together."""
    if result.tables is None:  # streamed there
        if Path(folder).resolve() == Path(result.written).resolve():
            return result.written
        raise BlendinError(f"the related tables were written to {str(result.written)!r} "
                           "as they were made, and are not held in memory",
                           fix="copy that folder, or anonymize again with output= elsewhere")
    tables = {name: to_arrow(t) for name, t in result.tables.items()}
    paths = table_paths(folder, list(tables), {}, suffix=".csv")
    check_folder(folder, paths, {}, result.spec)
    write_tables(tables.items(), paths, {n: t.schema for n, t in tables.items()},
                 delimiter=delimiter, escape_formulas=escape_formulas)
    return Path(folder)
