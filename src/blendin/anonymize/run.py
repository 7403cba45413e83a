"""The run of :func:`anonymize`: prepare, search, release and prove, in that order."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping

from blendin.anonymize.prepare import ProgressCallback, as_spec, check_choice, prepare
from blendin.anonymize.release import (
    check_output,
    order_seed,
    released_result,
    scratch_for,
    shuffle_for,
    streamed,
    transformed,
    verify,
    written,
)
from blendin.anonymize.result import Result
from blendin.anonymize.search import ALGORITHMS, FULL_DOMAIN, full_domain_search
from blendin.anonymize.tables import release_tables, release_tables_in_database
from blendin.engines.databases import is_database
from blendin.engines.kernels import SUPPRESSION_MODES, RowColumns
from blendin.engines.sql import SqlEngine, TableRef, check_target, in_database
from blendin.errors import BlendinError
from blendin.models.dp import DifferentialPrivacy
from blendin.progress import Progress, progress_callback
from blendin.spec import Spec
from blendin.summaries import SAFEPUB


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
    table: str | None = None,
    query: str | None = None,
    schema: str | None = None,
    output_table: str | None = None,
    password_env: str | None = None,
    replace: bool = False,
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

    In a database (PostgreSQL, DuckDB), ``data`` is its URL (``postgresql://USER@HOST/DB``,
    ``duckdb:///FILE``), a ``.duckdb`` path, a DuckDB connection or a SQLAlchemy engine,
    and ``table`` (in ``schema``) or ``query`` (one SELECT) names the rows; the SQL engine
    then works in the database and only the frequency table leaves it. ``output_table``
    names the release's table, made in the same database (``output``, else the input's)
    and named only once the checker passed; an existing table is replaced only with
    ``replace=True``. ``password_env`` names the environment variable holding the password
    (else the URL's, ``PGPASSWORD`` or ``~/.pgpass``).

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
    if index_base != 1 and group_column is None and original_row is None:
        raise BlendinError(f"index_base={index_base!r} numbers the classes and rows of the "
                           "added columns, and none was asked for",
                           fix="add group_column= or original_row=, or leave out index_base=")
    if isinstance(data, Mapping):
        return release_tables(
            anonymize, data, spec, output=output, suppressed=suppressed, engine=engine,
            group_column=group_column, original_row=original_row, keep_order=keep_order,
            shuffle_seed=shuffle_seed, output_delimiter=output_delimiter,
            escape_formulas=escape_formulas, database=table or query or output_table,
            algorithm=algorithm, metric=metric, progress=progress, time_limit=time_limit,
            max_checks=max_checks, seed=seed, recode_suppressed=recode_suppressed,
            strict=strict, start=start)
    if spec.tables and is_database(data) and table is None and query is None:
        return release_tables_in_database(
            anonymize, data, spec, output=output, output_table=output_table, schema=schema,
            password_env=password_env, replace=replace, shuffle_seed=shuffle_seed,
            refused={"suppressed='keep'": suppressed != "drop", "group_column": group_column,
                     "original_row": original_row, "keep_order": keep_order},
            writing={"delimiter": output_delimiter or spec.delimiter or ",",
                     "escape_formulas": escape_formulas}, start=start, algorithm=algorithm,
            metric=metric, progress=progress, time_limit=time_limit, max_checks=max_checks,
            seed=seed, recode_suppressed=recode_suppressed, strict=strict)
    if spec.tables:
        raise BlendinError(
            f"the spec names related tables ({', '.join(spec.tables)}) and one table was "
            "given", fix="give each table: --input NAME=FILE for each (a dict of "
                         "DataFrames in Python)")
    data, output = in_database(data, output, table=table, query=query, schema=schema,
                               output_table=output_table, password_env=password_env)
    if isinstance(data, TableRef) and engine is None:
        engine = SqlEngine(replace=replace)
    if isinstance(output, TableRef):
        check_target(data, output, replace)
    if isinstance(data, TableRef) and spec.transforms:
        raise BlendinError("transforms (microaggregate, pram) are not made in a database "
                           "yet", fix="export the table to a file, or remove the transforms")
    if isinstance(data, TableRef) and spec.suppression == "cells":
        raise BlendinError('suppression = "cells" is not made in a database yet',
                           fix='use suppression = "records", or export the table to a file')
    if isinstance(data, TableRef) and (group_column or original_row):
        raise BlendinError("a table in a database has no row order to number rows or "
                           "classes by", fix="leave out --group-column and --original-row "
                           "(group_column=, original_row=)")
    _check_added(group_column, original_row)
    output_delimiter = output_delimiter or spec.delimiter or ","  # the input's, as the spec says
    if suppressed not in SUPPRESSION_MODES:
        raise BlendinError(f"suppressed must be 'drop' or 'keep', got {suppressed!r}",
                           fix="use 'drop' (remove the records) or 'keep' (show * in QIs)")
    if suppressed == "keep" and spec.suppression == "cells":
        raise BlendinError('suppressed=\'keep\' (--suppressed keep) keeps suppressed records, '
                           'and suppression = "cells" suppresses none: it blanks cells and '
                           "releases every record", fix="leave out suppressed='keep' "
                           "(--suppressed keep)")
    given = {"algorithm": algorithm not in (None, "mondrian"),  # (mondrian: refused below)
             "metric": metric is not None, "time_limit": time_limit is not False,
             "max_checks": max_checks is not False, "seed": seed is not None,
             "recode_suppressed": recode_suppressed is not None}
    algorithm = algorithm or spec.algorithm or "auto"
    metric = metric or spec.metric or "loss"
    check_choice("algorithm", algorithm, tuple(ALGORITHMS) + FULL_DOMAIN)
    unused_search_options(algorithm, given, dp=spec.models,
                          recode=bool(spec.recode_suppressed if recode_suppressed is None
                                      else recode_suppressed))
    for option in ("relaxed", "sets"):
        if getattr(spec, option) and algorithm != "mondrian":
            raise BlendinError(f"{option} is an option of the mondrian algorithm, and "
                               f"{algorithm} runs", fix=f"add --algorithm mondrian (algorithm "
                               f"= \"mondrian\" in the spec), or leave out --{option} "
                               f"({option} = true)")
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
    check_output(output, [spec], engine, data=data)
    order = order_seed(keep_order, shuffle_seed)
    dry_run = getattr(engine, "dry_run", False)
    with progress_callback(progress) as callback:
        # a bar (not a function given) also shows the passes over a file
        bars = callback if isinstance(callback, Progress) else None
        # rows numbered as in the source are read in its order
        numbered = group_column is not None or original_row is not None
        plan = prepare(data, spec, engine, bars=bars, strict=strict,
                       scratch=scratch_for(output), order=None if numbered else order)
        if spec.transforms and plan.engine.name != "embedded":  # before the search
            raise BlendinError(f"transforms (microaggregate, pram) run on the embedded "
                               f"engine, not on {plan.engine.name}",
                               fix="anonymize a file or a DataFrame, or remove the transforms")
        for added in (group_column, original_row):
            if added is not None and added in plan.source.columns:
                raise BlendinError(f"the input already has a column {added!r}, the name "
                                   "asked for an added column",
                                   fix="give the added column another name")
        run = ALGORITHMS.get(algorithm, full_domain_search)
        outcome = run(plan, algorithm=algorithm, metric=metric, suppressed=suppressed,
                      progress=callback)
        if bars is not None:
            bars.close()  # the search's bar, before the release's
        if group_column is not None and plan.signatures is not None:
            outcome.recoder.number_people = True  # a row's class is its person's
        rows = RowColumns(list(plan.qis), group_column=group_column,
                          original_row=original_row, index_base=index_base)
        # a transform works on every released record: the release is held, then written
        release, report = verify(plan, outcome, suppressed, rows=rows,
                                 output=None if spec.transforms else streamed(output),
                                 output_delimiter=output_delimiter,
                                 escape_formulas=escape_formulas, bars=bars,
                                 shuffle=shuffle_for(order, plan))
        applied = []
        if spec.transforms:
            release, report, applied = transformed(plan, release, report)
    found = outcome.solution
    ran = getattr(found, "algorithm", algorithm) if algorithm in FULL_DOMAIN else algorithm
    if plan.sample is not None:  # SafePub chose its node itself: no search ran
        ran = SAFEPUB
    result = released_result(
        plan, outcome, release, report, data=data, output=output, suppressed=suppressed,
        start=start, nodes_checked=outcome.nodes_checked, algorithm=ran, metric=metric,
        solution=outcome.solution, requested_algorithm=algorithm,
        algorithm_reason=getattr(found, "reason", ""),
        proven_optimal=getattr(found, "optimal", None) if algorithm in FULL_DOMAIN else None,
        recoded_parts=outcome.parts, cells=outcome.cells, cell_records=outcome.cell_records,
        short_records=outcome.short_records, transformed=applied, notes=outcome.notes)
    if original_row is not None:  # verified, yet linkable row by row: said where it shows
        result.warnings.append(
            f"the release's column {original_row!r} holds each record's source row number: "
            "anyone who holds the source can link every released record back to its person "
            "(for internal use only; drop the column before the release leaves)")
    if dry_run:
        return result
    return written(result, output, output_delimiter, escape_formulas)


#: the search options an algorithm has no use for: Mondrian partitions by medians (no
#: metric, no tie to break), Datafly climbs greedily, and only the heuristic (or auto,
#: which may run it) has a budget and random moves
_BUDGET = ("time_limit", "max_checks", "seed")
UNUSED_OPTIONS = {"mondrian": ("metric", "policy", *_BUDGET), "datafly": ("policy", *_BUDGET),
                  "optimal": _BUDGET, "exhaustive": _BUDGET, "binary": _BUDGET}


def unused_search_options(algorithm: str, given: dict[str, bool], *, recode: bool,
                          dp: list, cli: bool = False) -> None:
    """Refuse an option given (``given[name]``) that ``algorithm`` would ignore, named as
    the user typed it: a flag (``cli``) or a keyword argument. With ``recode`` (the
    suppressed records recoded) the heuristic's budget and seed bound its search of them.
    With differential privacy among the models ``dp``, SafePub chooses its node: no search
    option is used (its randomness is the model's ``seed``)."""
    if any(isinstance(model, DifferentialPrivacy) for model in dp):
        for name in ("algorithm", "metric", "policy", *_BUDGET, "recode_suppressed"):
            if given.get(name):
                said = "--" + name.replace("_", "-") if cli else f"{name}="
                seed = (" (its randomness is the model's seed: seed = N under its "
                        "[[privacy]])" if name == "seed" else "")
                raise BlendinError(f"{said} is not used with differential-privacy: SafePub "
                                   f"chooses its node and suppresses what it must{seed}",
                                   fix=f"leave out {said}")
    for name in UNUSED_OPTIONS.get(algorithm, ()):
        if given.get(name) and not (recode and name in _BUDGET):
            said = "--" + name.replace("_", "-") if cli else f"{name}="
            users = ("auto or heuristic" if name in _BUDGET else
                     "auto, optimal, heuristic, exhaustive or binary")
            raise BlendinError(f"{said} is not used by the {algorithm} algorithm",
                               fix=f"leave out {said}, or use --algorithm {users}" if cli
                               else f'leave out {said}, or pass algorithm="auto"')


def _check_added(group_column: str | None, original_row: str | None) -> None:
    """The columns a release adds have names, and not the same one."""
    for option, name in (("--group-column", group_column), ("--original-row", original_row)):
        if name is not None and not name.strip():
            raise BlendinError(f"{option} names no column",
                               fix=f"give {option} NAME ({option[2:].replace('-', '_')}= in "
                               "Python), or leave it out")
    if group_column is not None and group_column == original_row:
        raise BlendinError(f"the class and the row number columns are both named "
                           f"{group_column!r}", fix="give --group-column and --original-row "
                           "different names")
