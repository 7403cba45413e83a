"""Re-applying a saved full-domain solution to new data of the same shape."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Sequence

import numpy as np

from blendin.anonymize.prepare import as_spec, prepare
from blendin.anonymize.release import (
    check_output,
    order_seed,
    released_result,
    scratch_for,
    shuffle_for,
    streamed,
    verify,
    written,
)
from blendin.anonymize.result import Result
from blendin.anonymize.search import Outcome, full_domain_outcome, within_limit
from blendin.anonymize.solutions import (
    changed_since_saved,
    check_levels,
    load_solution,
    not_reapplied,
    plain,
    saved_levels,
    spec_from_solution,
)
from blendin.engines.kernels import FullDomainRecoder
from blendin.errors import BlendinError
from blendin.metrics import utility_of_node
from blendin.plan import Plan, plan_node
from blendin.progress import Progress, bars_for
from blendin.spec import Spec


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
    >>> from blendin.anonymize.solutions import solution_dict
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
    not_reapplied(payload, given)
    used = spec_from_solution(payload, given, unknown=unknown)
    if delimiter is not None:
        used.delimiter = delimiter
    if encoding is not None:
        used.encoding = encoding
    output_delimiter = output_delimiter or used.delimiter or ","
    saved = saved_levels(payload)
    levels = tuple(saved[q] for q in used.quasi_identifiers)
    check_output(output, [used, *([given] if given else [])], engine, data=data,
                  solution=solution)
    order = order_seed(keep_order, shuffle_seed)
    with bars_for(progress) as bars:
        plan = prepare(data, used, engine, bars=bars, strict=strict,
                       scratch=scratch_for(output), order=order)
        check_levels(saved, plan.hierarchies)
        outcome = _saved_outcome(plan, levels)
        release, report = verify(plan, outcome, suppressed, output=streamed(output),
                                 output_delimiter=output_delimiter,
                                 escape_formulas=escape_formulas, bars=bars,
                                 shuffle=shuffle_for(order, plan))
    origin = str(solution) if isinstance(solution, str | os.PathLike) else "a saved solution"
    result = released_result(
        plan, outcome, release, report, data=data, output=output, suppressed=suppressed,
        start=start, notes=notes, nodes_checked=0, algorithm="saved", metric="-",
        solution=payload, applied_from=origin)
    return written(result, output, output_delimiter, escape_formulas)


def _trust_of(payload: dict, spec: Spec | None) -> list[str]:
    """Refuse a solution edited since it was saved, unless a spec gives the roles and models
    (then say so); note one too old to carry a digest."""
    changed = changed_since_saved(payload)
    if changed and spec is None:
        raise BlendinError(
            "the solution was changed after it was saved (its digest no longer matches, or "
            "was taken out): its "
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
    if spec is None and payload.get("version") in (3, 4):
        return ["the solution was saved by an older blendin, whose digest does not cover "
                "its person key, related tables, transforms, cell suppression, normalize, "
                "weights or households: an edit of them would go unnoticed; fix: save it "
                "again, or give --spec"]
    return []


def _saved_outcome(plan: Plan, levels: Sequence[int]) -> Outcome:
    """:func:`full_domain_outcome` at the saved levels, the records of values a saved tree
    or file does not cover suppressed too (they count against the limit)."""
    forced = _unknown_tuples(plan)
    if not forced.any():
        return full_domain_outcome(plan, levels, saved=True)
    ft = plan.ft
    recoding = plan_node(ft, levels, plan.models, identifiers=plan.removed,
                         missing=plan.missing, forced=forced)
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
    within_limit(recoding, ft, plan.max_suppression, saved=True)
    utility = {k: plain(v) for k, v in utility_of_node(
        ft, levels, tuple_bad, weights=plan.search.weights).items()}
    named = dict(zip(ft.qi_names, (int(v) for v in levels)))
    return Outcome(plan.rows_of(FullDomainRecoder(recoding)), named, 0, None,
                   recoding.suppressed_records, sizes, utility)


def _unknown_tuples(plan: Plan) -> np.ndarray:
    """Tuples holding a value that a saved tree or file does not cover (to suppress)."""
    ft = plan.ft
    forced = np.zeros(len(ft.counts), dtype=bool)
    for i, q in enumerate(ft.qi_names):
        unknown = plan.unknown_values(q)
        if unknown:
            ground = plan.hierarchies[q].ground.astype(str)
            codes = np.flatnonzero(np.isin(ground, np.asarray(unknown, dtype=str)))
            forced |= np.isin(ft.tuples[:, i], codes)
    return forced
