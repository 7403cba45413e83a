"""Release: the outcome applied to the rows by the engine, and proven.

:func:`verify` streams the rows through the engine's recoder (in a random order unless the
source's is kept), regroups the released values, runs the independent checker on them and
commits only what it passes: a written file is renamed into place only then.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from blendin.anonymize.prepare import pass_bar
from blendin.anonymize.result import Result, file_of
from blendin.anonymize.search import Outcome
from blendin.check import anonymity_floor, check_regrouped, check_transforms, weighed_columns
from blendin.engines import is_spark
from blendin.engines.embedded import STREAMED_SUFFIXES
from blendin.engines.kernels import RowColumns, Shuffle
from blendin.engines.sql import SqlSource, TableRef
from blendin.errors import BlendinError
from blendin.excel import class_ids
from blendin.io import _suffix, from_arrow, to_arrow
from blendin.outputs import check_paths
from blendin.plan import Plan
from blendin.progress import Progress
from blendin.spec import Spec
from blendin.transform.microaggregation import Microaggregate
from blendin.transform.table import apply_transforms


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


def verify(plan: Plan, outcome: Outcome, suppressed: str, *,
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
    values, every record's (the frequency table's; with a person key every person's), as
    ``check`` compares them when given the input (docs/spec.md).
    """
    person = [plan.person] if plan.person else []
    columns = list(dict.fromkeys([*person, *plan.qis, *plan.sensitive,
                                  *weighed_columns(plan.spec)]))
    hidden = {"hidden": person} if person else {}  # counted by the checker, not released
    with pass_bar(bars, "releasing", plan.source) as told, plan.engine.release(
            plan.source, outcome.recoder, check_columns=columns, missing=plan.missing,
            suppressed=suppressed, row_columns=rows, output=output,
            delimiter=output_delimiter, escape_formulas=escape_formulas,
            labelled=list(plan.qis), progress=told,
            shuffle=shuffle, blank=list(plan.sensitive), **hidden) as release:
        # the checker is independent of the search: it is told what must hold (the spec),
        # and the input's distribution
        report = check_regrouped(release.regrouped, plan.spec, release.columns,
                                 population=plan.source, reference=plan.domains)
        if not report.passed:
            raise BlendinError(
                f"the release failed the independent check, so it was not released:\n{report}",
                fix="this is a bug in blendin; please report it with the spec")
        _rows_as_checked(release, report, suppressed)
    return release, report


def _rows_as_checked(release, report, suppressed: str) -> None:
    """The rows released (written) are those the checker counted: every record, less the
    suppressed ones where they are dropped (rows showing ``*`` in every QI that a Mondrian
    group released count as suppressed too: between the two). A row lost or repeated on
    its way to the file (a writer, a shuffle's parts) would change the classes checked."""
    if release.rows is None:  # (not counted: Spark)
        return
    least = report.records - (report.suppressed if suppressed == "drop" else 0)
    if not least <= release.rows <= report.records:
        raise BlendinError(
            f"the release holds {release.rows:,} rows and the independent check counted "
            f"{report.records:,} records ({report.suppressed:,} suppressed, which are "
            f"{'dropped' if suppressed == 'drop' else 'kept'}), so it was not released",
            fix="this is a bug in blendin; please report it with the spec")


def transformed(plan: Plan, release, report):
    """The in-memory ``release`` with the spec's transforms applied (microaggregation,
    PRAM), verified again (microaggregated values shared by k records), and what each
    transform did."""
    table = to_arrow(release.data)
    for name, transform in plan.spec.transforms.items():
        if isinstance(transform, Microaggregate) and 0 < table.num_rows < transform.k:
            raise BlendinError(
                f"{name!r} is microaggregated in groups of k = {transform.k} records, and "
                f"the release holds {table.num_rows:,}",
                fix=f"lower the microaggregate k of {name!r} to {table.num_rows} or less")
    spec = plan.spec
    table, applied = apply_transforms(table, spec.transforms, plan.missing,
                                      within=list(spec.quasi_identifiers),
                                      qis=spec.transformed_qis, floor=anonymity_floor(spec.models))
    report = check_transforms(table, plan.spec, report)
    if not report.passed:
        raise BlendinError(
            f"the release failed the independent check, so it was not released:\n{report}",
            fix="this is a bug in blendin; please report it with the spec")
    release.data = table
    return release, report, applied


def released_result(plan: Plan, outcome: Outcome, release, report, *, data, output,
                    suppressed: str, start: float, notes: Sequence[str] = (),
                    **made) -> Result:
    """The Result of a verified release: ``outcome``'s figures on ``plan``, the release as
    the kind of table the input was (or where it was written: a file, a table in the
    database), the checker's ``report``, ``notes`` before the plan's warnings, and ``made``
    (how it was made: the algorithm, the metric, the solution...)."""
    in_table = isinstance(output, TableRef) and not getattr(plan.engine, "dry_run", False)
    sizes = outcome.class_sizes
    records, suppressed_records, people = plan.ft.n_records, outcome.suppressed, None
    if plan.people is not None:  # the search counted people; the checker counted the rows
        records, suppressed_records = report.records, report.suppressed
        people = {**plan.people.to_dict(), "suppressed_people": outcome.suppressed}
    return Result(
        data=like_input(release.data, data), levels=outcome.levels, utility=outcome.utility,
        classes=int(len(sizes)), min_class_size=int(sizes.min()) if len(sizes) else 0,
        suppressed=suppressed_records, records=records, people=people,
        seconds=time.perf_counter() - start, check=report, spec=plan.spec,
        hierarchies=plan.hierarchies, sensitive_hierarchies=plan.sensitive_hierarchies,
        suppressed_mode=suppressed, written=release.path,
        written_table=SqlSource(plan.source.db, output) if in_table else None,
        source=plan.source if isinstance(plan.source, SqlSource) else None,
        release_people=getattr(release, "people", None),
        read={} if file_of(data) is None else {"data": file_of(data)},
        warnings=[*notes, *plan.warnings], **made)


def order_seed(keep_order: bool, seed: int | None) -> int | None:
    """The seed of the released rows' random order (None: the source's order), fresh
    unless one is given; drawn before the first pass, which may keep the rows in it."""
    if keep_order:
        if seed is not None:
            raise BlendinError("the rows are kept in order and a seed is given to shuffle "
                               "them", fix="leave out --shuffle-seed or --keep-order "
                               "(shuffle_seed= or keep_order= in Python)")
        return None
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise BlendinError(f"shuffle_seed must be a whole number >= 0, got {seed!r}",
                           fix="give e.g. --shuffle-seed 7 (shuffle_seed=7 in Python), or leave "
                           "it out (a fresh order)")
    return secrets.randbits(63) if seed is None else seed


def shuffle_for(seed: int | None, plan: Plan) -> Shuffle | None:
    """The random order of the released rows, from :func:`order_seed`."""
    return None if seed is None else Shuffle(seed, plan.ft.n_records)


def check_output(output, specs: Sequence[Spec], engine=None, **inputs) -> None:
    """The release never replaces an input (the data, a saved solution: those of
    ``inputs`` given as files), the spec's hierarchy files or its population tables; an
    existing other file is replaced (the CLI asks for --force first). A remote path
    (``s3://``) is Spark's to check, and refused for another ``engine``."""
    if output is None or isinstance(output, TableRef):
        return  # a table: the SQL engine checks it
    if "://" in str(output):
        spark = getattr(engine, "name", engine) == "spark" or (
            engine is None and is_spark(inputs.get("data")))
        if not spark:
            raise BlendinError(f"the output {str(output)!r} is a remote path, which only "
                               "Spark writes", fix="give a file on this machine, or "
                               "engine=\"spark\" (--engine spark)")
        return
    paths = {name: file_of(value) for name, value in inputs.items()
             if file_of(value) is not None}
    for spec in specs:
        paths.update(spec.files_read())
    check_paths(paths, {"output": (output, "table")}, force=True, folders=True)


def like_input(release, data):
    """The release as the kind of table the input was (a Spark release of a pandas frame,
    say, comes back as pandas); None when it was written to a file instead."""
    if release is None:
        return None
    if is_spark(release):
        if is_spark(data):
            return release
        release = release.toArrow()
    return from_arrow(release, data)


def streamed(output: str | os.PathLike | None) -> str | os.PathLike | None:
    """``output`` when the release can be written batch by batch (CSV, Parquet, a table)."""
    if isinstance(output, TableRef):
        return output
    if output is None or _suffix(Path(output)) not in STREAMED_SUFFIXES:
        return None
    return output


def scratch_for(output) -> Path | None:
    """Where a run keeps what it puts aside on disk (a CSV file's rows between its passes):
    beside the file it writes, which is sized for the rows, else the system's temporary
    folder (None)."""
    out = streamed(output)
    return None if out is None or isinstance(out, TableRef) else Path(out).parent


def written(result: Result, output, delimiter: str, escape_formulas: bool) -> Result:
    """Write an in-memory release to ``output`` (Excel) when it was not streamed there."""
    if output is not None and result.written is None and not isinstance(output, TableRef):
        result.written = result.write(output, delimiter=delimiter,
                                      escape_formulas=escape_formulas)
    return result


