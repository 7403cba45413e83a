"""Anonymize a table: reduce it to a frequency table, search, release, prove, report.

The pipeline, for an in-memory frame or a file read chunk by chunk:

1. check the spec's columns exist; reduce the rows to distinct (QI, sensitive) text tuples;
2. build the hierarchies from the distinct values; encode the frequency table;
3. let the models check the table can meet them; search (full-domain lattice, or Mondrian);
4. recode the rows (one gather per QI, chunk by chunk) and suppress the violating classes;
5. verify the release with the independent checker, which regroups the released values
   themselves; a release it rejects is never returned nor written.

:func:`apply_solution` re-applies a saved full-domain solution to new data of the same shape.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from blendin.engines.kernels import (
    SUPPRESSION_MODES,
    FullDomainRecoder,
    MondrianRecoder,
    RowColumns,
    Shuffle,
    decoded,
)
from blendin.errors import BlendinError, preview
from blendin.frequency import COUNT, FrequencyTable, distinct_texts
from blendin.heap import keep_freed_memory
from blendin.hierarchy.core import Hierarchy
from blendin.io import Source, from_arrow, write_text
from blendin.metrics import utility_of_node
from blendin.models import PrivacyModel, dp, presence
from blendin.normalize import merge_spellings, spelling_warnings
from blendin.outputs import check_paths, pending_location
from blendin.progress import Progress, bars_for, file_pass, progress_callback
from blendin.release import Recoding, plan, plan_part
from blendin.report.notebook import fully_generalized, minimal_nodes, summary_notes
from blendin.spec import Spec, overlooked_warnings

SOLUTION_FORMAT = "blendin-solution"
SOLUTION_VERSION = 3
#: the key of a saved solution's digest: a SHA-256 of its spec part, what says what must
#: hold (the levels and hierarchies may be edited: the checker proves whatever they make)
DIGEST = "digest"
SPEC_PART = ("quasi_identifiers", "identifiers", "sensitive", "insensitive",
             "sensitive_hierarchies", "models", "max_suppression", "missing")

ProgressCallback = Callable[[int, int], None]


# -- the result ----------------------------------------------------------------------------


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

    @property
    def table(self) -> pa.Table:
        """The release as a pyarrow Table (what is written to files); a release streamed to
        a file is read back from it."""
        from blendin.io import Source, file_kind, to_arrow

        if self.data is None and self.written is not None:
            # a file of a run still writing its other outputs lies under a temporary name
            where = pending_location(self.written)
            if where.is_dir():  # Spark's folder of part files
                import pyarrow.dataset as ds

                kind = "parquet" if self.written.suffix.lower() == ".parquet" else "csv"
                return ds.dataset(where, format=kind).to_table()
            return Source(where, kind=file_kind(self.written)).read_all()
        return to_arrow(self.data)

    @property
    def heights(self) -> dict[str, int]:
        """Number of levels of each QI's hierarchy."""
        return {q: h.height for q, h in self.hierarchies.items()}

    def __repr__(self) -> str:
        from blendin.report.notebook import result_summary

        return result_summary(self).text()

    def _repr_html_(self) -> str:
        """The summary as a small HTML table, verdict first (shown by notebooks)."""
        from blendin.report.notebook import result_summary

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
            "utility": {k: _plain(v) for k, v in self.utility.items()},
            "nodes_checked": self.nodes_checked,
            "seconds": round(self.seconds, 6),
            "models": [_model_dict(m) for m in self.spec.models],
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
            else f"{self.algorithm} search, metric {self.metric}")
        lines.append(f"anonymized {self.records:,} records ({what})")
        if self.algorithm_reason:
            lines.append(f"{self.requested_algorithm or 'auto'}: {self.algorithm_reason}")
        if self.proven_optimal is not None and not self.applied_from:
            lines.append("proven optimal: " + ("yes" if self.proven_optimal else
                                               "no (best node found within the budget)"))
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
        lines.append(f"suppressed: {self.suppressed:,} records ({share:.2f}%, limit "
                     f"{100 * self.spec.max_suppression:g}%), {how}")
        lines.append(f"classes: {self.classes:,}, smallest {self.min_class_size:,}")
        if self.utility:
            lines.append("utility: " + ", ".join(
                f"{k} {_fmt(v)}" for k, v in self.utility.items()))
        if self.applied_from is None and self.algorithm != "mondrian":
            lines.append(f"nodes checked: {self.nodes_checked:,}")
        lines.append(f"time: {self.seconds:.3f} s")
        models = "; ".join(str(m) for m in self.spec.models)
        lines.append(f"verified by the checker: {models}")
        lines += summary_notes(self)
        return "\n".join(lines)

    def save_solution(self, path: str | os.PathLike) -> Path:
        """Write the solution as JSON: levels, inline hierarchies, models, limits.

        Re-applying it (:func:`apply_solution`, ``blendin apply``) needs nothing else. With
        recoded suppressed records (``recode_suppressed``) it holds the first part's levels:
        re-applied, the records that part suppresses stay suppressed.
        """
        if not self.levels:
            raise BlendinError(
                f"a {self.algorithm} release has no levels to save (it recodes each group "
                "on its own)",
                fix="save solutions of full-domain searches (optimal, exhaustive, binary, "
                "datafly)")
        payload = solution_dict(self.spec, self.hierarchies, self.levels,
                                self.sensitive_hierarchies)
        return write_text(path, json.dumps(payload, indent=1, ensure_ascii=False) + "\n")

    def report(self, path: str | os.PathLike, *, original=None,
               threshold: float | None = None, external=None, on=None,
               population: float | None = None) -> Path:
        """Write the HTML release report (see :func:`blendin.report.html.write_report`);
        give ``original`` (the input) to compare the risk before and after, ``external``
        (an identified table) for the linking attack, ``population`` for the
        population-based risk."""
        from blendin.report.html import write_report

        return write_report(self, path, original=original, threshold=threshold,
                            external=external, on=on, population=population)

    def write(self, path: str | os.PathLike, *, delimiter: str | None = ",",
              escape_formulas: bool = False) -> Path:
        """Write the (already verified) release atomically: CSV, Parquet or Excel by extension.

        A CSV release is written with ``delimiter``; None takes the spec's ``[input]
        delimiter`` (else ``,``), as :func:`anonymize` does by default.

        In Excel each equivalence class gets its own background colour and every text is
        text (never a formula); ``escape_formulas`` guards a CSV the same way (see
        :func:`blendin.io.write_table`).
        """
        from blendin.engines import is_spark
        from blendin.excel import class_ids, class_styler
        from blendin.io import write_table

        if self.written is not None and Path(path).resolve() == self.written.resolve():
            return self.written  # streamed there after the check
        delimiter = delimiter or self.spec.delimiter or ","
        if is_spark(self.data) and not str(path).lower().endswith(".xlsx"):
            from blendin.engines.spark import SparkEngine

            return SparkEngine(self.data.sparkSession).write(
                self.data, path, delimiter=delimiter, escape_formulas=escape_formulas)
        table = self.table
        styler = None
        if str(path).lower().endswith(".xlsx"):
            styler = class_styler(class_ids(table, list(self.spec.quasi_identifiers)))
        return write_table(table, path, delimiter=delimiter, xlsx_styler=styler,
                           escape_formulas=escape_formulas)


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    return value


def _fmt(value) -> str:
    if isinstance(value, float | np.floating):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    return str(value)


# -- the pipeline --------------------------------------------------------------------------


@dataclass(eq=False)
class Prepared:
    """The data reduced for the search: source, hierarchies, frequency table, and the
    engine that reads and writes the rows."""

    source: Source
    spec: Spec
    hierarchies: dict[str, Hierarchy]
    sensitive_hierarchies: dict[str, Hierarchy]
    ft: FrequencyTable
    engine: Any = None
    #: the 0/1 column of released records (delta-presence), None when all are released
    subset: str | None = None
    #: differential privacy's model: the rows released are its sample
    sample: Any = None
    #: what the user should know before releasing (overlooked identifiers, spellings)
    warnings: list[str] = field(default_factory=list)

    def rows_of(self, recoder):
        """``recoder`` applied to the rows to release only (the subset's, for
        delta-presence; the sample's, drawn again in row order, for differential privacy)."""
        if self.subset is None and self.sample is None:
            return recoder
        from blendin.models.dp import sampled
        from blendin.models.presence import subset_rows

        rows = (sampled if self.sample is not None else subset_rows)
        choose = self.sample if self.sample is not None else self.subset
        pending: list = []
        state = {"stream": None}

        def recode(batch):
            if state["stream"] is None:
                state["stream"] = rows(_drain(pending), choose)
            pending.append(batch)
            return recoder(next(state["stream"]))

        return recode

    @property
    def removed_columns(self) -> tuple[str, ...]:
        """Columns not released: identifiers, and the subset column."""
        return (*self.spec.identifiers, *([self.subset] if self.subset else []))


def _drain(pending: list):
    """Yield the batches put in ``pending``, as they come (a stream fed one by one)."""
    while True:
        yield pending.pop(0)


@dataclass(eq=False)
class Outcome:
    """What an algorithm produced: how to recode the rows, and the figures.

    ``recoder`` (:mod:`blendin.engines.kernels`) turns a batch of source rows into the
    release with every record, the suppressed ones showing ``*`` in each QI, and the mask of
    those rows. The engine applies it; the checker verifies every record (so t-closeness
    compares against the distribution of all records, as the search did).
    """

    recoder: Callable[[pa.Table], tuple[pa.Table, np.ndarray]]
    levels: dict[str, int]
    nodes_checked: int
    solution: Any
    suppressed: int
    class_sizes: np.ndarray
    utility: dict[str, float]
    #: further parts of a release with recode_suppressed ({"levels", "records"} each)
    parts: list[dict] = field(default_factory=list)


def anonymize(
    data,
    spec: Spec,
    *,
    algorithm: str | None = None,
    metric: str | None = None,
    suppressed: str = "drop",
    progress: ProgressCallback | bool | None = None,
    group_column: str | None = None,
    original_row: str | None = None,
    index_base: int = 1,
    output: str | os.PathLike | None = None,
    output_delimiter: str | None = None,
    escape_formulas: bool = False,
    engine=None,
    time_limit: float | None | bool = False,
    max_checks: int | None | bool = False,
    seed: int | None = None,
    recode_suppressed: bool | None = None,
    keep_order: bool = False,
    shuffle_seed: int | None = None,
    strict: bool = False,
) -> Result:
    """Release ``data`` so that it meets ``spec``; the release is proven before it is returned.

    ``data`` is a pandas or polars DataFrame, a pyarrow Table, or a CSV/Parquet path (read in
    chunks); a pyarrow Table keeps its columns' codes for the next call on it (its texts are
    hashed once, see :meth:`blendin.io.Source.keep_codes`). ``algorithm`` and ``metric``
    override the spec's. Records of classes that still violate a model are removed
    (``suppressed="drop"``) or kept with ``*`` in every QI and their sensitive values
    empty (``"keep"``: shown, they would form a group anyone can read). ``progress=True``
    shows progress bars (terminal or notebook): the search's, and for a file each pass over
    it; a function ``progress(nodes_checked, total_nodes)`` is called during the search
    instead.
    ``group_column`` names a column to add with each record's equivalence class (1, 2, ...;
    empty when suppressed). ``original_row`` names a column to add with the source row number:
    anyone who holds the source can then link every released row back, so it is for internal
    use only. ``index_base`` is the number of the first class and the first row: 1 (as a
    spreadsheet shows rows) or 0 (as pandas and most Mondrian outputs in the literature).
    ``time_limit`` (seconds), ``max_checks`` and ``seed`` override the spec's budget
    of the heuristic (None: no limit); ``recode_suppressed`` the spec's choice to release the
    suppressed records at a coarser node of their own (full-domain searches).

    The released rows are in a random order, drawn afresh for every run: in the source's
    order, anyone who holds the source could link released row i to source row i.
    ``keep_order=True`` keeps the source's order (for internal use, as ``original_row``);
    ``shuffle_seed`` makes the order reproducible (whoever knows the seed can undo it).
    A column that looks like a direct identifier (ssn, name, email, ...) and that the spec
    names nowhere is released with a warning (``result.warnings``); ``strict=True`` refuses
    it before any work instead.

    With ``output`` (a .csv, .parquet or .xlsx path) the release is written there, and only
    once the checker has passed; a CSV or Parquet release is written batch by batch as it is
    made, so a file path in and out holds no whole table in memory (``result.data`` is then
    None and ``result.table`` reads the file back). ``output_delimiter`` (by default the
    spec's ``[input] delimiter``, else ``,``: a release keeps its input's format) and
    ``escape_formulas`` are as in :meth:`Result.write`. ``engine`` is ``"embedded"`` (the
    default), ``"spark"`` (the default for a pyspark DataFrame) or an engine object (see
    :mod:`blendin.engines`).

    >>> import pandas as pd
    >>> from blendin.hierarchy.core import Hierarchy
    >>> from blendin.models import KAnonymity
    >>> df = pd.DataFrame({"age": [31, 32, 33, 47], "dx": ["a", "b", "a", "c"]})
    >>> age = Hierarchy.from_rows([[str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "*"]
    ...                            for a in (31, 32, 33, 47)])
    >>> spec = Spec(quasi_identifiers={"age": age}, sensitive=["dx"],
    ...             models=[KAnonymity(2)], max_suppression=0.25)
    >>> result = anonymize(df, spec)
    >>> result.levels, result.data["age"].tolist(), result.suppressed
    ({'age': 1}, ['30-39', '30-39', '30-39'], 1)
    """
    start = time.perf_counter()
    spec = as_spec(spec)
    output_delimiter = output_delimiter or spec.delimiter or ","  # the input's, as the spec says
    if suppressed not in SUPPRESSION_MODES:
        raise BlendinError(f"suppressed must be 'drop' or 'keep', got {suppressed!r}",
                           fix="use 'drop' (remove the records) or 'keep' (show * in QIs)")
    algorithm = algorithm or spec.algorithm or "auto"
    metric = metric or spec.metric or "loss"
    _check_choice("algorithm", algorithm, tuple(ALGORITHMS) + FULL_DOMAIN)
    overrides = {k: v for k, v in (("time_limit", time_limit), ("max_checks", max_checks))
                 if v is not False}
    overrides.update({k: v for k, v in (("seed", seed), ("recode_suppressed",
                                                          recode_suppressed)) if v is not None})
    if overrides:
        spec = dataclasses.replace(spec, **overrides)
    if spec.recode_suppressed and algorithm not in FULL_DOMAIN:
        raise BlendinError(
            f"recode_suppressed applies to full-domain searches, not to {algorithm}",
            fix="remove recode_suppressed (--recode-suppressed), or use algorithm = \"auto\"")
    _check_output(output, [spec], data=data)
    with progress_callback(progress) as callback:
        # a bar (not a function given) also shows the passes over a file
        bars = callback if isinstance(callback, Progress) else None
        prepared = prepare(data, spec, engine, bars=bars, strict=strict)
        for added in (group_column, original_row):
            if added is not None and added in prepared.source.columns:
                raise BlendinError(f"the input already has a column {added!r}, the name "
                                   "asked for an added column",
                                   fix="give the added column another name")
        run = ALGORITHMS.get(algorithm, _full_domain)
        outcome = run(prepared, algorithm=algorithm, metric=metric, suppressed=suppressed,
                      progress=callback)
        if bars is not None:
            bars.close()  # the search's bar, before the release's
        rows = RowColumns(list(spec.quasi_identifiers), group_column=group_column,
                          original_row=original_row, index_base=index_base)
        release, report = verify(prepared, outcome, spec, suppressed, rows=rows,
                                 output=_streamed(output), output_delimiter=output_delimiter,
                                 escape_formulas=escape_formulas, bars=bars,
                                 shuffle=_shuffle(keep_order, shuffle_seed, prepared))
    found = outcome.solution
    ran = getattr(found, "algorithm", algorithm) if algorithm in FULL_DOMAIN else algorithm
    result = Result(
        data=_like_input(release.data, data),
        levels=outcome.levels,
        utility=outcome.utility,
        classes=int(len(outcome.class_sizes)),
        min_class_size=int(outcome.class_sizes.min()) if len(outcome.class_sizes) else 0,
        suppressed=outcome.suppressed,
        records=prepared.ft.n_records,
        nodes_checked=outcome.nodes_checked,
        seconds=time.perf_counter() - start,
        algorithm=ran,
        metric=metric,
        check=report,
        solution=outcome.solution,
        spec=spec,
        hierarchies=prepared.hierarchies,
        suppressed_mode=suppressed,
        sensitive_hierarchies=prepared.sensitive_hierarchies,
        written=release.path,
        requested_algorithm=algorithm,
        algorithm_reason=getattr(found, "reason", ""),
        proven_optimal=getattr(found, "optimal", None) if algorithm in FULL_DOMAIN else None,
        recoded_parts=outcome.parts,
        warnings=prepared.warnings,
    )
    return _written(result, output, output_delimiter, escape_formulas)


def _shuffle(keep_order: bool, seed: int | None, prepared: Prepared) -> Shuffle | None:
    """The random order of the released rows (None: the source's), from a fresh seed
    unless one is given."""
    if keep_order:
        return None
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise BlendinError(f"shuffle_seed must be a whole number >= 0, got {seed!r}",
                           fix="give e.g. --shuffle-seed 7, or leave it out (a fresh order)")
    return Shuffle(secrets.randbits(63) if seed is None else seed, prepared.ft.n_records)


def _check_output(output, specs: Sequence[Spec], **inputs) -> None:
    """The release never replaces an input (the data, a saved solution: those of
    ``inputs`` given as paths), the spec's hierarchy files or its population tables; an
    existing other file is replaced (the CLI asks for --force first)."""
    if output is None or "://" in str(output):  # a remote path: Spark checks it
        return
    paths = {name: value for name, value in inputs.items()
             if isinstance(value, str | os.PathLike)}
    for spec in specs:
        paths.update(spec.files_read())
    check_paths(paths, {"output": (output, "table")}, force=True, folders=True)


def _like_input(release, data):
    """The release as the kind of table the input was (a Spark release of a pandas frame,
    say, comes back as pandas); None when it was written to a file instead."""
    from blendin.engines import is_spark

    if release is None:
        return None
    if is_spark(release):
        if is_spark(data):
            return release
        release = release.toArrow()
    return from_arrow(release, data)


def _streamed(output: str | os.PathLike | None) -> str | os.PathLike | None:
    """``output`` when the release can be written batch by batch (CSV, Parquet)."""
    from blendin.engines.embedded import STREAMED_SUFFIXES
    from blendin.io import _suffix

    if output is None or _suffix(Path(output)) not in STREAMED_SUFFIXES:
        return None
    return output


def _written(result: Result, output, delimiter: str, escape_formulas: bool) -> Result:
    """Write an in-memory release to ``output`` (Excel) when it was not streamed there."""
    if output is not None and result.written is None:
        result.written = result.write(output, delimiter=delimiter,
                                      escape_formulas=escape_formulas)
    return result


FULL_DOMAIN = ("auto", "optimal", "heuristic", "exhaustive", "binary", "datafly")


def as_spec(spec) -> Spec:
    """A Spec, or the spec file (TOML) a path names."""
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, str | os.PathLike):
        return Spec.from_toml(spec)
    raise BlendinError(f"expected a Spec or the path of a spec file, got {type(spec).__name__}",
                       fix="pass bl.Spec(...) or a path such as \"release.toml\"")


def _check_choice(what: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise BlendinError(f"unknown {what} {value!r}",
                           fix=f"use one of {', '.join(dict.fromkeys(choices))}")


def prepare(data, spec: Spec, engine=None, bars: Progress | None = None, *,
            strict: bool = False) -> Prepared:
    """Spec and columns checked, rows reduced to distinct tuples (by the engine), hierarchies
    built, the frequency table encoded, the models' feasibility checked (``bars`` show the
    pass over a file). Columns that look like direct identifiers the spec names nowhere are
    warned of, or with ``strict`` refused; sensitive values are normalized as
    ``[input] normalize`` says, and a value spelled several ways is warned of."""
    from blendin.engines import engine_for
    from blendin.engines.groupby import distinct_tuples

    keep_freed_memory()
    spec.validate()
    engine = engine_for(data, engine)
    source = engine.source(data, spec)
    spec.validate_columns(source.columns)
    warnings = overlooked_warnings(spec, source.columns, strict=strict)
    types = source.types()
    for name, builder in spec.quasi_identifiers.items():
        if hasattr(builder, "check_type"):  # codes read as numbers, say
            builder.check_type(types[name], name)
    subset = presence.subset_column(spec.models, source.columns)
    sample = dp.sample_model(spec)
    columns = list(dict.fromkeys([*spec.quasi_identifiers, *spec.sensitive,
                                  *([subset] if subset else [])]))
    if sample is not None:  # SafePub: the population is the input, the sample released
        distinct = distinct_tuples(dp.sampled(engine.batches(source, columns), sample,
                                              mark=dp.MARK), [*columns, dp.MARK], spec.missing)
    else:
        with _pass(bars, "reading", source) as told:
            distinct = engine.distinct(source, columns, spec.missing, _ground_texts(spec),
                                       progress=told)
    distinct = merge_spellings(distinct, spec.sensitive, spec.normalize, COUNT)
    warnings += spelling_warnings({name: distinct_texts(distinct.column(name))
                                   for name in spec.sensitive})
    qis = list(spec.quasi_identifiers)
    # k-map against a population table; the population models read the tuples as text
    tables = [(m, decoded(people)) for m, people in presence.population_tables(spec, qis)]
    if tables or subset is not None:
        distinct = decoded(distinct)
    hierarchies = spec.build_hierarchies(presence.with_people(
        distinct, [t for _, t in tables], qis))
    sensitive_hierarchies = spec.build_sensitive_hierarchies(distinct)
    for model, people in tables:
        model.bind(presence.Population.from_distinct(people, hierarchies))
    if sample is not None:
        distinct = dp.sample_of(sample, distinct)
    elif subset is not None:  # the input is the population; the subset is released
        distinct = presence.bind_population(spec.models, distinct, hierarchies, subset)
    ft = FrequencyTable.from_distinct(distinct, hierarchies, list(spec.sensitive),
                                      sensitive_hierarchies=sensitive_hierarchies)
    for model in spec.models:
        model.validate(ft.n_records, ft.domains)
    return Prepared(source, spec, hierarchies, sensitive_hierarchies, ft, engine, subset,
                    sample, warnings)


def _pass(bars: Progress | None, doing: str, source):
    """The bar of one pass over ``source`` (shown only for a file that takes a while)."""
    return file_pass(bars, f"{doing} {Path(source.name).name}")


def _ground_texts(spec: Spec) -> dict[str, pa.Array]:
    """The ground values of the quasi-identifiers whose hierarchy is given whole (a file, a
    tree): the texts their columns are expected to hold."""
    given = {name: builder if isinstance(builder, Hierarchy) else builder.given()
             for name, builder in spec.quasi_identifiers.items()}
    return {name: h.ground_texts for name, h in given.items() if h is not None}


# -- algorithms ----------------------------------------------------------------------------


def _full_domain(prepared: Prepared, *, algorithm: str, metric: str, suppressed: str,
                 progress: ProgressCallback | None) -> Outcome:
    """Search the generalization lattice, then apply the chosen node to every row."""
    from blendin.lattice import Checker
    from blendin.search import find

    spec, ft = prepared.spec, prepared.ft
    if prepared.sample is not None:  # SafePub chooses its node itself
        levels = dp.find_dp(prepared.sample, Checker(ft, spec.models, 1.0),
                            prepared.sample.records_in_input)
        return full_domain_outcome(prepared, levels)
    solution = find(ft, spec.models, max_suppression=spec.max_suppression, metric=metric,
                    algorithm=algorithm, policy=spec.policy, weights=spec.weights or None,
                    progress=progress, time_limit=spec.time_limit,
                    max_checks=spec.max_checks, seed=spec.seed)
    levels = solution.levels
    if levels is None:
        raise BlendinError(
            "no generalization meets the privacy models within the suppression limit "
            f"({100 * spec.max_suppression:g}%)",
            fix="allow more suppression (max_suppression), give the hierarchies more "
            "levels, or relax the models")
    checked = int(solution.nodes_checked)
    if spec.recode_suppressed:
        if any(m.needs_population for m in spec.models):
            raise BlendinError("recode_suppressed cannot be used with a model that counts a "
                               "population (delta-presence, k-map against a table)",
                               fix="remove recode_suppressed (--recode-suppressed)")
        return _recoded_outcome(prepared, tuple(levels), metric=metric,
                                nodes_checked=checked, solution=solution)
    return full_domain_outcome(prepared, tuple(levels), nodes_checked=checked,
                               solution=solution)


def _recoded_outcome(prepared: Prepared, levels: tuple[int, ...], *, metric: str,
                     nodes_checked: int, solution: Any) -> Outcome:
    """The release at ``levels`` with its suppressed records recoded at nodes of their own
    where they form valid classes (search/remainder.py); the union is checked as a whole."""
    from blendin.search.remainder import Part, parts_utility, recode_remainder

    spec, ft = prepared.spec, prepared.ft
    main = plan(ft, levels, spec.models, identifiers=spec.identifiers, missing=spec.missing)
    _within_limit(main, ft, spec, False)
    first = Part(levels, ~main.suppressed_tuples)
    # each round searches the (small) remainder with the heuristic for a second at most
    budget = 1.0 if spec.time_limit is None else min(1.0, spec.time_limit / 4)
    parts = recode_remainder(ft, first, spec.models, metric=metric,
                             weights=spec.weights or None, time_limit=budget,
                             max_checks=spec.max_checks, seed=spec.seed)
    if not parts:
        return full_domain_outcome(prepared, levels, nodes_checked=nodes_checked,
                                   solution=solution)
    left, recodings = main.suppressed_tuples.copy(), []
    for part in parts:
        recodings.append(plan_part(ft, part.levels, left, part.tuples,
                                   identifiers=spec.identifiers, missing=spec.missing))
        left &= ~part.tuples
    metrics, sizes = parts_utility(ft, [first, *parts], weights=spec.weights or None)
    named = dict(zip(ft.qi_names, (int(v) for v in levels)))
    described = [{"levels": dict(zip(ft.qi_names, (int(v) for v in p.levels))),
                  "records": p.records(ft)} for p in parts]
    return Outcome(FullDomainRecoder(main, recodings), named, nodes_checked, solution,
                   int(ft.counts[left].sum()), sizes,
                   {k: _plain(v) for k, v in metrics.items()}, described)


def full_domain_outcome(prepared: Prepared, levels: Sequence[int], *,
                        nodes_checked: int = 0, solution: Any = None,
                        saved: bool = False) -> Outcome:
    """Release ``prepared`` at the node ``levels``: recode, mark the suppressed, measure.

    The suppression limit is enforced here too, whoever chose the node (``saved``: a saved
    solution, whose failure on new data is the user's to know, not a bug).
    """
    spec, ft = prepared.spec, prepared.ft
    recoding = plan(ft, levels, spec.models, identifiers=prepared.removed_columns,
                    missing=spec.missing, checked=getattr(solution, "check", None))
    _within_limit(recoding, ft, spec, saved)
    named = dict(zip(ft.qi_names, (int(v) for v in levels)))
    found = getattr(solution, "utility", None)
    if not found or tuple(solution.levels) != tuple(recoding.levels) or (
            solution.n_suppressed != recoding.suppressed_records):
        # the search measured its node already; anything else is measured here
        found = utility_of_node(ft, levels, recoding.suppressed_tuples,
                                weights=spec.weights or None)
    utility = {k: _plain(v) for k, v in found.items()}
    if getattr(solution, "check", None) is not None:  # planned: its classes are not kept
        solution = dataclasses.replace(solution, check=None)
    return Outcome(prepared.rows_of(FullDomainRecoder(recoding)), named, nodes_checked,
                   solution,
                   recoding.suppressed_records, recoding.class_sizes, utility)


def _within_limit(recoding: Recoding, ft: FrequencyTable, spec: Spec, saved: bool) -> None:
    limit = spec.max_suppression * ft.n_records
    if recoding.suppressed_records > limit + 1e-9:
        share = 100 * recoding.suppressed_records / ft.n_records
        levels = ", ".join(f"{q} {lvl}" for q, lvl in zip(ft.qi_names, recoding.levels))
        if not saved:
            raise BlendinError(
                f"the search chose levels {levels}, where {recoding.suppressed_records:,} "
                f"records ({share:.2f}%) must be suppressed, over the limit of "
                f"{100 * spec.max_suppression:g}%; nothing was released",
                fix="this is a bug in blendin; please report it with the spec")
        raise BlendinError(
            f"the saved solution does not hold on this data: at levels {levels}, "
            f"{recoding.suppressed_records:,} records ({share:.2f}%) are in classes that "
            f"violate the models, more than the limit of {100 * spec.max_suppression:g}%",
            fix="anonymize this data afresh (blendin anonymize), or raise max_suppression")


def _mondrian(prepared: Prepared, *, algorithm: str, metric: str, suppressed: str,
              progress: ProgressCallback | None) -> Outcome:
    """Multidimensional local recoding (search/mondrian.py): partition, label, measure."""
    from blendin.search import mondrian as m

    spec, ft = prepared.spec, prepared.ft
    p = m.mondrian(ft, spec.models, relaxed=spec.relaxed, sets=spec.sets,
                   max_suppression=spec.max_suppression)
    # the partitions are found on the frequency table; releasing them is a per-batch lookup
    recoder = MondrianRecoder(ft, p, identifiers=spec.identifiers, missing=spec.missing)
    utility = {k: _plain(v) for k, v in m.mondrian_utility(ft, p).items() if k != "groups"}
    return Outcome(recoder, {}, 0, p, p.suppressed(ft), p.sizes(ft), utility)


#: algorithms that are not a full-domain lattice search; everything else goes to find()
ALGORITHMS: dict[str, Callable[..., Outcome]] = {"mondrian": _mondrian}


def with_row_columns(table: pa.Table, quasi_identifiers: Sequence[str], *,
                     group_column: str | None = None,
                     original_row: str | None = None, index_base: int = 1) -> pa.Table:
    """The release with, on request, each row's class (1, 2, ... in order of first
    appearance, empty when suppressed) and its row number in the source (1 = first row);
    ``index_base=0`` numbers both from 0.

    >>> t = pa.table({"age": ["20-29", "*", "20-29"], "dx": ["a", "b", "c"]})
    >>> out = with_row_columns(t, ["age"], group_column="group", original_row="row")
    >>> out.column("group").to_pylist(), out.column("row").to_pylist()
    ([1, None, 1], [1, 2, 3])
    >>> out = with_row_columns(t, ["age"], group_column="group", original_row="row",
    ...                        index_base=0)
    >>> out.column("group").to_pylist(), out.column("row").to_pylist()
    ([0, None, 0], [0, 1, 2])
    """
    from blendin.excel import class_ids

    if index_base not in (0, 1):
        raise BlendinError(f"index_base must be 0 or 1, got {index_base!r}",
                           fix="number rows and classes from 1 (--index-base 1) or 0 "
                           "(--index-base 0)")

    for name in (group_column, original_row):
        if name is not None and name in table.column_names:
            raise BlendinError(f"the release already has a column {name!r}",
                               fix="choose another name for the added column")
    if group_column is not None:
        ids = class_ids(table, quasi_identifiers)
        table = table.append_column(group_column, pa.array(ids + index_base, mask=ids < 0))
    if original_row is not None:
        rows = np.arange(index_base, table.num_rows + index_base)
        table = table.append_column(original_row, pa.array(rows))
    return table


# -- verification --------------------------------------------------------------------------


def verify(prepared: Prepared, outcome: Outcome, spec: Spec, suppressed: str, *,
           rows: RowColumns | None = None, output: str | os.PathLike | None = None,
           output_delimiter: str = ",", escape_formulas: bool = False,
           bars: Progress | None = None, shuffle: Shuffle | None = None):
    """Release through the engine, run the independent checker on the released values, and
    commit only what it passes (a written file is renamed into place only then; ``bars``
    show the pass over a file).

    The checker sees every record, the suppressed ones with ``*`` in each QI and their
    sensitive values empty (it counts them as suppressed, not as a class); the release drops
    them when ``suppressed`` is ``"drop"``, which leaves exactly the classes the checker
    verified. Their classes are compared with the distribution of the input's sensitive
    values, every record's (the frequency table's), as ``check`` compares them when given
    the input (docs/spec.md).
    """
    from blendin.check import check_regrouped

    columns = list(dict.fromkeys([*spec.quasi_identifiers, *spec.sensitive]))
    with _pass(bars, "releasing", prepared.source) as told, prepared.engine.release(
            prepared.source, outcome.recoder, check_columns=columns, missing=spec.missing,
            suppressed=suppressed, row_columns=rows, output=output,
            delimiter=output_delimiter, escape_formulas=escape_formulas,
            labelled=list(spec.quasi_identifiers), progress=told,
            shuffle=shuffle, blank=list(spec.sensitive)) as release:
        report = check_regrouped(release.regrouped, spec, release.columns,
                                 population=prepared.source, reference=prepared.ft.domains)
        if not report.passed:
            raise BlendinError(
                f"the release failed the independent check, so it was not released:\n{report}",
                fix="this is a bug in blendin; please report it with the spec")
    return release, report


# -- saved solutions -----------------------------------------------------------------------


def solution_dict(spec: Spec, hierarchies: Mapping[str, Hierarchy],
                  levels: Mapping[str, int],
                  sensitive_hierarchies: Mapping[str, Hierarchy] | None = None) -> dict:
    """The JSON form of a full-domain solution: levels, and each hierarchy as its rule.

    Rules (dates ladder, intervals, masking, flat) and trees or files as the user gave them
    are saved, never the data's values, so the solution is metadata that re-applies to new
    data (see :func:`blendin.hierarchy.registry.rule_of`).
    """
    from blendin.hierarchy.registry import rule_of

    sensitive_builders = spec.sensitive_builders()
    return with_digest({
        "format": SOLUTION_FORMAT,
        "version": SOLUTION_VERSION,
        "quasi_identifiers": list(hierarchies),
        "levels": {q: int(levels[q]) for q in hierarchies},
        "heights": {q: int(h.height) for q, h in hierarchies.items()},
        "hierarchies": {q: rule_of(spec.quasi_identifiers.get(q, h), h)
                        for q, h in hierarchies.items()},
        "identifiers": list(spec.identifiers),
        "sensitive": list(spec.sensitive),
        "insensitive": list(spec.insensitive),
        "sensitive_hierarchies": {q: rule_of(sensitive_builders.get(q, h), h)
                                  for q, h in (sensitive_hierarchies or {}).items()},
        "models": [_model_dict(m) for m in spec.models],
        "max_suppression": float(spec.max_suppression),
        "missing": spec.missing,
    })


def with_digest(payload: dict) -> dict:
    """``payload`` with the digest of its spec part: an edit of the saved models,
    identifiers or limits no longer matches (:func:`changed_since_saved`).

    >>> saved = with_digest({"models": [{"model": "k-anonymity", "k": 5}]})
    >>> changed_since_saved(saved)
    False
    >>> saved["models"][0]["k"] = 1
    >>> changed_since_saved(saved)
    True
    """
    body = {k: v for k, v in payload.items() if k != DIGEST}
    return {**body, DIGEST: _digest(body)}


def changed_since_saved(payload: dict) -> bool | None:
    """True when a solution's content no longer matches its digest; None when it has none
    (saved by an older blendin)."""
    if DIGEST not in payload:
        return None
    body = {k: v for k, v in payload.items() if k != DIGEST}
    return payload[DIGEST] != _digest(body)


def _digest(body: dict) -> str:
    part = {k: body.get(k) for k in SPEC_PART}
    text = json.dumps(part, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _model_dict(model: PrivacyModel) -> dict:
    """The model's table without an attached hierarchy (saved built, with the others)."""
    params = model.params() if hasattr(model, "params") else model.to_dict()
    return {"model": model.key, **{k: _plain(v) for k, v in params.items()
                                   if v is not None and k != "model"
                                   and not k.startswith("hierarchy")}}


def _saved_builders(payload: dict, unknown: str):
    """The QIs' builders of a saved solution (each at its level, told what to do with values
    a tree or file does not cover) and the sensitive attributes' builders."""
    from blendin.hierarchy.registry import WithUnknown, builder_from_rule

    levels = _saved_levels(payload)
    rules = payload["hierarchies"]
    if not isinstance(rules, dict) or any(q not in rules for q in levels):
        raise BlendinError("the solution has no hierarchy for some quasi-identifier",
                           fix="save it again with --save-solution")
    qis = {q: WithUnknown(builder_from_rule(rules[q], q), levels[q], unknown) for q in levels}
    sens = {q: builder_from_rule(r, q)
            for q, r in (payload.get("sensitive_hierarchies") or {}).items()}
    return qis, sens


def _saved_levels(payload: dict) -> dict[str, int]:
    """The saved level of each QI, checked (a tampered file gets a clear error)."""
    qis, levels = payload["quasi_identifiers"], payload["levels"]
    if not isinstance(qis, list) or not isinstance(levels, dict):
        raise BlendinError("the solution's quasi_identifiers or levels are malformed",
                           fix="save it again with --save-solution")
    out = {}
    for q in qis:
        level = levels.get(q)
        if isinstance(level, bool) or not isinstance(level, int) or level < 0:
            raise BlendinError(f"the solution's level of {q!r} is {level!r}, not a level "
                               "(0, 1, 2, ...)", fix="save it again with --save-solution")
        out[q] = level
    return out


def _check_levels(levels: Mapping[str, int], hierarchies: Mapping[str, Hierarchy]) -> None:
    for q, level in levels.items():
        top = hierarchies[q].height - 1
        if level > top:
            raise BlendinError(f"the solution's level of {q!r} is {level}, above its "
                               f"hierarchy's top ({top})",
                               fix="save the solution again with --save-solution")


def load_solution(solution) -> dict:
    """A saved solution from a path, a JSON string's dict or a Result."""
    if isinstance(solution, Result):
        return solution_dict(solution.spec, solution.hierarchies, solution.levels,
                             solution.sensitive_hierarchies)
    if isinstance(solution, dict):
        payload = solution
    else:
        path = Path(solution)
        if not path.is_file():
            raise BlendinError(f"solution file {str(path)!r} does not exist",
                               fix="give the file written by --save-solution")
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise BlendinError(f"{str(path)!r} is not a JSON solution file: {error}",
                               fix="give the file written by --save-solution") from None
    if not isinstance(payload, dict) or payload.get("format") != SOLUTION_FORMAT:
        raise BlendinError("this is not a blendin solution (no \"format\": "
                           f"\"{SOLUTION_FORMAT}\")",
                           fix="give the file written by --save-solution")
    for key in ("quasi_identifiers", "levels", "hierarchies", "models"):
        if key not in payload:
            raise BlendinError(f"the solution has no {key!r}",
                               fix="save it again with --save-solution")
    return payload


def _models_from(tables: Sequence[dict]) -> list[PrivacyModel]:
    from blendin import models

    make = getattr(models, "model_from_toml", None)
    if make is not None:
        return [make(dict(t)) for t in tables]
    out = []
    for table in tables:
        if table.get("model") != "k-anonymity":
            raise BlendinError(f"unknown model {table.get('model')!r} in the solution",
                               fix="use a blendin version that knows this model")
        out.append(models.KAnonymity(int(table["k"])))
    return out


def spec_from_solution(payload: dict, spec: Spec | None = None, *,
                       unknown: str = "error") -> Spec:
    """The Spec a saved solution stands for (roles, models, limits from ``spec`` if given).

    Its hierarchies are the saved rules; ``unknown`` says what happens to values a saved tree
    or file does not cover (``"error"`` or ``"suppress"``; see
    :class:`blendin.hierarchy.registry.WithUnknown`).
    """
    hierarchies, sens_h = _saved_builders(payload, unknown)
    if spec is not None:
        absent = [q for q in spec.quasi_identifiers if q not in hierarchies]
        if absent:
            raise BlendinError(f"the solution has no level for QI(s) {preview(absent)}",
                               fix="use the spec the solution was made with")
        return Spec(quasi_identifiers={q: hierarchies[q] for q in spec.quasi_identifiers},
                    identifiers=list(spec.identifiers), sensitive=list(spec.sensitive),
                    insensitive=list(spec.insensitive), models=list(spec.models),
                    max_suppression=spec.max_suppression, sensitive_hierarchies={
                        **sens_h, **_built_only(spec.sensitive_hierarchies)},
                    delimiter=spec.delimiter, encoding=spec.encoding, missing=spec.missing,
                    base_dir=spec.base_dir)
    return Spec(quasi_identifiers=hierarchies, identifiers=list(payload.get("identifiers", [])),
                sensitive=list(payload.get("sensitive", [])),
                insensitive=list(payload.get("insensitive", [])),
                models=_models_from(payload["models"]),
                max_suppression=float(payload.get("max_suppression", 0.0)),
                sensitive_hierarchies=sens_h, missing=payload.get("missing", ""))


def _built_only(hierarchies: Mapping[str, Any]) -> dict:
    return {k: v for k, v in hierarchies.items() if isinstance(v, Hierarchy)}


def apply_solution(data, solution, spec: Spec | None = None, *, suppressed: str = "drop",
                   delimiter: str | None = None, encoding: str | None = None,
                   unknown: str = "error", output: str | os.PathLike | None = None,
                   output_delimiter: str | None = None, escape_formulas: bool = False,
                   engine=None, progress: Progress | bool | None = None,
                   keep_order: bool = False, shuffle_seed: int | None = None,
                   strict: bool = False) -> Result:
    """Re-apply a saved full-domain solution to new data of the same shape.

    ``solution`` is a path to the JSON written by :meth:`Result.save_solution`, its dict, or
    a Result. The saved rules generalize new values (new dates, new ZIPs); a value a saved
    tree or file does not cover is released as ``*`` at the top level, and below it stops
    the run with an error naming it (``unknown="error"``) or has its records suppressed
    (``"suppress"``). Records of classes that violate the models at the saved levels are
    suppressed; when that is within the saved limit the release is verified and returned,
    and when it is over the limit a BlendinError says so and nothing is released: the spec
    does not hold on this data with this solution, so it must be anonymized afresh.
    ``output``, ``output_delimiter``, ``escape_formulas`` and ``engine`` are as in
    :func:`anonymize`; ``progress=True`` (or a :class:`~blendin.progress.Progress`) shows a
    bar for each pass over a file; ``keep_order``, ``shuffle_seed`` and ``strict`` as in
    :func:`anonymize` (the rows are shuffled by default).

    >>> import pandas as pd
    >>> from blendin.hierarchy.intervals import intervals
    >>> from blendin.models import KAnonymity
    >>> spec = Spec(quasi_identifiers={"age": intervals(10)}, models=[KAnonymity(2)])
    >>> saved = solution_dict(spec, {"age": intervals(10).build(["31"])}, {"age": 1})
    >>> new = pd.DataFrame({"age": [32, 31, 47, 45]})
    >>> sorted(apply_solution(new, saved).data["age"])  # the rows in a random order
    ['30-39', '30-39', '40-49', '40-49']
    """
    start = time.perf_counter()
    payload = load_solution(solution)
    given = None if spec is None else as_spec(spec)
    notes = _trust_of(payload, given)
    used = spec_from_solution(payload, given, unknown=unknown)
    if delimiter is not None:
        used.delimiter = delimiter
    if encoding is not None:
        used.encoding = encoding
    output_delimiter = output_delimiter or used.delimiter or ","
    saved_levels = _saved_levels(payload)
    levels = tuple(saved_levels[q] for q in used.quasi_identifiers)
    _check_output(output, [used, *([given] if given else [])], data=data,
                  solution=solution)
    with bars_for(progress) as bars:
        prepared = prepare(data, used, engine, bars=bars, strict=strict)
        _check_levels(saved_levels, prepared.hierarchies)
        outcome = _saved_outcome(prepared, levels)
        release, report = verify(prepared, outcome, used, suppressed, output=_streamed(output),
                                 output_delimiter=output_delimiter,
                                 escape_formulas=escape_formulas, bars=bars,
                                 shuffle=_shuffle(keep_order, shuffle_seed, prepared))
    origin = str(solution) if isinstance(solution, str | os.PathLike) else "a saved solution"
    result = Result(
        data=_like_input(release.data, data),
        levels=outcome.levels, written=release.path,
        utility=outcome.utility, classes=int(len(outcome.class_sizes)),
        min_class_size=int(outcome.class_sizes.min()) if len(outcome.class_sizes) else 0,
        suppressed=outcome.suppressed, records=prepared.ft.n_records, nodes_checked=0,
        seconds=time.perf_counter() - start, algorithm="saved", metric="-", check=report,
        solution=payload, spec=used, hierarchies=prepared.hierarchies,
        suppressed_mode=suppressed, applied_from=origin,
        sensitive_hierarchies=prepared.sensitive_hierarchies,
        warnings=[*notes, *prepared.warnings])
    return _written(result, output, output_delimiter, escape_formulas)


def _trust_of(payload: dict, spec: Spec | None) -> list[str]:
    """Refuse a solution edited since it was saved, unless a spec gives the roles and models
    (then say so); note one too old to carry a digest."""
    changed = changed_since_saved(payload)
    if changed and spec is None:
        raise BlendinError(
            "the solution was changed after it was saved (its digest no longer matches): its "
            "identifiers, models or limits cannot be trusted",
            fix="save it again with blendin anonymize --save-solution, or give the spec to "
            "check against: blendin apply ... --spec release.toml")
    if changed:
        return ["the solution was changed after it was saved; its identifiers, models and "
                "limits were taken from the spec given instead"]
    if changed is None and spec is None:
        return ["the solution carries no digest (saved by an older blendin): an edit of its "
                "identifiers or models would go unnoticed; fix: save it again, or give "
                "--spec"]
    return []


def _saved_outcome(prepared: Prepared, levels: Sequence[int]) -> Outcome:
    """:func:`full_domain_outcome` at the saved levels, the records of values a saved tree
    or file does not cover suppressed too (they count against the limit)."""
    forced = _unknown_tuples(prepared)
    if not forced.any():
        return full_domain_outcome(prepared, levels, saved=True)
    spec, ft = prepared.spec, prepared.ft
    recoding = plan(ft, levels, spec.models, identifiers=prepared.removed_columns,
                    missing=spec.missing)
    generalized = ft.generalized(levels)
    keys = recoding.keyer(generalized)
    tuple_bad = recoding.suppressed_tuples | forced
    kept_keys, kept_class = np.unique(keys[~tuple_bad], return_inverse=True)
    sizes = np.bincount(kept_class.reshape(-1), weights=ft.counts[~tuple_bad],
                        minlength=len(kept_keys)).astype(np.int64)
    recoding = dataclasses.replace(
        recoding, suppressed_keys=np.unique(keys[tuple_bad]),
        suppressed_records=int(ft.counts[tuple_bad].sum()), suppressed_tuples=tuple_bad,
        class_sizes=sizes)
    _within_limit(recoding, ft, spec, True)
    utility = {k: _plain(v) for k, v in utility_of_node(
        ft, levels, tuple_bad, weights=spec.weights or None).items()}
    named = dict(zip(ft.qi_names, (int(v) for v in levels)))
    return Outcome(prepared.rows_of(FullDomainRecoder(recoding)), named, 0, None,
                   recoding.suppressed_records, sizes, utility)


def _unknown_tuples(prepared: Prepared) -> np.ndarray:
    """Tuples holding a value that a saved tree or file does not cover (to suppress)."""
    ft = prepared.ft
    forced = np.zeros(len(ft.counts), dtype=bool)
    for i, q in enumerate(ft.qi_names):
        unknown = getattr(prepared.spec.quasi_identifiers[q], "unknown", None)
        if unknown:
            ground = prepared.hierarchies[q].ground.astype(str)
            codes = np.flatnonzero(np.isin(ground, np.asarray(unknown, dtype=str)))
            forced |= np.isin(ft.tuples[:, i], codes)
    return forced
