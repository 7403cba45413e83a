"""Search: the frequency table in, an outcome out (what to release, and its figures).

A full-domain search (auto, optimal, heuristic, exhaustive, binary, datafly) chooses one level
per quasi-identifier; Mondrian partitions the tuples. Either way the :class:`Outcome` carries
the recoder the engine applies to the rows, the classes and the utility.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from blendin.anonymize.prepare import ProgressCallback
from blendin.anonymize.solutions import plain
from blendin.engines.kernels import FullDomainRecoder, MondrianRecoder
from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.lattice import Checker, suppression_limit
from blendin.metrics import utility_of_node
from blendin.models import dp
from blendin.people import PersonMask
from blendin.plan import ClassKeyer, Plan, Recoding, plan_node, plan_part, with_cells
from blendin.search import find
from blendin.search.mondrian import mondrian, mondrian_utility, settle_starred
from blendin.search.people import check_people, find_people, people_utility
from blendin.search.remainder import Part, parts_utility, recode_remainder


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
    #: suppression by cells: the cells blanked per QI, the records that have one, and the
    #: records that fell short of k at the node (the suppression limit counts them)
    cells: dict[str, int] | None = None
    cell_records: int = 0
    short_records: int = 0
    #: what the user should know of how the algorithm came to its release
    notes: list[str] = field(default_factory=list)


FULL_DOMAIN = ("auto", "optimal", "heuristic", "exhaustive", "binary", "datafly")


def full_domain_search(plan: Plan, *, algorithm: str, metric: str, suppressed: str,
                       progress: ProgressCallback | None) -> Outcome:
    """Search the generalization lattice, then apply the chosen node to every row."""
    ft, options = plan.ft, plan.search
    if plan.sample is not None:  # SafePub chooses its node itself
        levels = dp.find_dp(plan.sample, Checker(ft, plan.models, 1.0),
                            plan.sample.records_in_input)
        return full_domain_outcome(plan, levels)
    if plan.signatures is not None:
        if options.recode_suppressed:
            raise BlendinError("recode_suppressed does not work with event-level "
                               f"quasi-identifiers ({', '.join(plan.people.event_level)})",
                               fix="remove recode_suppressed (--recode-suppressed)")
        solution = find_people(plan.signatures, plan.models,
                               max_suppression=plan.max_suppression, metric=metric,
                               algorithm=algorithm, policy=options.policy,
                               weights=options.weights, progress=progress)
    else:
        solution = find(ft, plan.models, max_suppression=plan.max_suppression, metric=metric,
                        algorithm=algorithm, policy=options.policy, weights=options.weights,
                        progress=progress, time_limit=options.time_limit,
                        max_checks=options.max_checks, seed=options.seed)
    levels = solution.levels
    if levels is None:
        raise BlendinError(
            "no generalization meets the privacy models within the suppression limit "
            f"({100 * plan.max_suppression:g}%)",
            fix="allow more suppression (max_suppression), give the hierarchies more "
            "levels, or relax the models")
    checked = int(solution.nodes_checked)
    if options.recode_suppressed:
        if any(m.needs_population for m in plan.models):
            raise BlendinError("recode_suppressed cannot be used with a model that counts a "
                               "population (delta-presence, k-map against a table)",
                               fix="remove recode_suppressed (--recode-suppressed)")
        return _recoded_outcome(plan, tuple(levels), metric=metric,
                                nodes_checked=checked, solution=solution)
    return full_domain_outcome(plan, tuple(levels), nodes_checked=checked,
                               solution=solution)


def _recoded_outcome(plan: Plan, levels: tuple[int, ...], *, metric: str,
                     nodes_checked: int, solution: Any) -> Outcome:
    """The release at ``levels`` with its suppressed records recoded at nodes of their own
    where they form valid classes (search/remainder.py); the union is checked as a whole."""
    ft, options = plan.ft, plan.search
    main = plan_node(ft, levels, plan.models, identifiers=plan.removed, missing=plan.missing)
    within_limit(main, ft, plan.max_suppression)
    first = Part(levels, ~main.suppressed_tuples)
    # each round searches the (small) remainder with the heuristic for a second at most
    budget = 1.0 if options.time_limit is None else min(1.0, options.time_limit / 4)
    parts = recode_remainder(ft, first, plan.models, metric=metric, weights=options.weights,
                             time_limit=budget, max_checks=options.max_checks,
                             seed=options.seed)
    if not parts:
        return full_domain_outcome(plan, levels, nodes_checked=nodes_checked,
                                   solution=solution)
    left, recodings = main.suppressed_tuples.copy(), []
    for part in parts:
        recodings.append(plan_part(ft, part.levels, left, part.tuples,
                                   identifiers=plan.removed, missing=plan.missing))
        left &= ~part.tuples
    metrics, sizes = parts_utility(ft, [first, *parts], weights=options.weights)
    named = _named(ft, levels)
    described = [{"levels": dict(zip(ft.qi_names, (int(v) for v in p.levels))),
                  "records": p.records(ft)} for p in parts]
    return Outcome(FullDomainRecoder(main, recodings), named, nodes_checked, solution,
                   int(ft.counts[left].sum()), sizes,
                   {k: plain(v) for k, v in metrics.items()}, described)


def full_domain_outcome(plan: Plan, levels: Sequence[int], *,
                        nodes_checked: int = 0, solution: Any = None,
                        saved: bool = False) -> Outcome:
    """Release ``plan`` at the node ``levels``: recode, mark the suppressed, measure.

    The suppression limit is enforced here too, whoever chose the node (``saved``: a saved
    solution, whose failure on new data is the user's to know, not a bug).
    """
    if plan.signatures is not None:
        return people_outcome(plan, levels, nodes_checked=nodes_checked, solution=solution,
                              saved=saved)
    ft = plan.ft
    recoding = plan_node(ft, levels, plan.models, identifiers=plan.removed,
                         missing=plan.missing, checked=getattr(solution, "check", None))
    within_limit(recoding, ft, plan.max_suppression, saved)
    named = _named(ft, levels)
    found = getattr(solution, "utility", None)
    if not found or tuple(solution.levels) != tuple(recoding.levels) or (
            solution.n_suppressed != recoding.suppressed_records):
        # the search measured its node already; anything else is measured here
        found = utility_of_node(ft, levels, recoding.suppressed_tuples,
                                weights=plan.search.weights)
    utility = {k: plain(v) for k, v in found.items()}
    if getattr(solution, "check", None) is not None:  # planned: its classes are not kept
        solution = dataclasses.replace(solution, check=None)
    if plan.spec.suppression == "cells":
        return _cells_outcome(plan, recoding, named, nodes_checked, solution, utility)
    return Outcome(plan.rows_of(FullDomainRecoder(recoding)), named, nodes_checked,
                   solution, recoding.suppressed_records, recoding.class_sizes, utility)


def _cells_outcome(plan: Plan, recoding: Recoding, named: dict[str, int], nodes_checked: int,
                   solution: Any, utility: dict[str, float]) -> Outcome:
    """The node's release with the records of its violating classes kept, the fewest QI
    cells blank (``suppression = "cells"``); its utility is the node's, which counts those
    records as suppressed."""
    k = max(m.k for m in plan.models)
    short = recoding.suppressed_records
    recoding, blanked, records, sizes = with_cells(recoding, plan.ft, k,
                                                   plan.spec.cell_priority)
    cells = dict(zip(plan.ft.qi_names, (int(v) for v in blanked)))
    return Outcome(plan.rows_of(FullDomainRecoder(recoding)), named, nodes_checked,
                   solution, 0, sizes, utility, cells=cells, cell_records=records,
                   short_records=short)


def people_outcome(plan: Plan, levels: Sequence[int], *, nodes_checked: int = 0,
                   solution: Any = None, saved: bool = False) -> Outcome:
    """Release the people of ``plan`` (event-level QIs) at ``levels``: every row recoded,
    the rows of the people in violating classes suppressed, whole (search/people.py)."""
    sigs = plan.signatures
    limit = suppression_limit(plan.max_suppression, sigs.n_people)
    result = check_people(sigs, plan.models, levels, limit)
    levels = result.levels
    if not result.acceptable:
        share = 100 * result.n_suppressed / sigs.n_people
        raise BlendinError(
            f"at levels {_named(plan.ft, levels)}, {result.n_suppressed:,} people "
            f"({share:.2f}%) are in classes that violate the models, more than the limit of "
            f"{100 * plan.max_suppression:g}%; nothing was released",
            fix="anonymize this data afresh (blendin anonymize), or raise max_suppression"
            if saved else "this is a bug in blendin; please report it with the spec")
    gone = result.suppressed_signatures()
    generalized = plan.ft.generalized(levels)
    radices = [len(h.labels[lv]) for h, lv in zip(plan.ft.hierarchies, levels)]
    recoding = Recoding(tuple(plan.ft.qi_names), tuple(plan.ft.hierarchies), levels,
                        ClassKeyer(radices, generalized), np.zeros(0, np.int64),
                        result.n_suppressed, gone[sigs.of_tuple],
                        result.sizes[~result.violating], plan.removed, plan.missing)
    persons = PersonMask(plan.person, sigs.keys, gone[sigs.of_person], plan.missing,
                         classes=result.class_of[sigs.of_person])
    utility = {k: plain(v) for k, v in people_utility(sigs, result,
                                                      plan.search.weights).items()}
    return Outcome(FullDomainRecoder(recoding, persons=persons), _named(plan.ft, levels),
                   nodes_checked, solution, result.n_suppressed,
                   recoding.class_sizes, utility)


def _named(ft: FrequencyTable, levels: Sequence[int]) -> dict[str, int]:
    return dict(zip(ft.qi_names, (int(v) for v in levels)))


def within_limit(recoding: Recoding, ft: FrequencyTable, max_suppression: float,
                 saved: bool = False) -> None:
    """Refuse a recoding that suppresses more than ``max_suppression`` of the records: a
    bug when the search chose it, the user's to know when a ``saved`` solution did."""
    if recoding.suppressed_records > suppression_limit(max_suppression, ft.n_records):
        share = 100 * recoding.suppressed_records / ft.n_records
        levels = ", ".join(f"{q} {lvl}" for q, lvl in zip(ft.qi_names, recoding.levels))
        if not saved:
            raise BlendinError(
                f"the search chose levels {levels}, where {recoding.suppressed_records:,} "
                f"records ({share:.2f}%) must be suppressed, over the limit of "
                f"{100 * max_suppression:g}%; nothing was released",
                fix="this is a bug in blendin; please report it with the spec")
        raise BlendinError(
            f"the saved solution does not hold on this data: at levels {levels}, "
            f"{recoding.suppressed_records:,} records ({share:.2f}%) are in classes that "
            f"violate the models, more than the limit of {100 * max_suppression:g}%",
            fix="anonymize this data afresh (blendin anonymize), or raise max_suppression in "
            "the spec and give it: blendin apply ... --spec SPEC (spec= in Python); the saved "
            "solution itself cannot be edited")


def _mondrian(plan: Plan, *, algorithm: str, metric: str, suppressed: str,
              progress: ProgressCallback | None) -> Outcome:
    """Multidimensional local recoding (search/mondrian.py): partition, label, measure."""
    ft = plan.ft
    if plan.signatures is not None:
        raise BlendinError(
            "Mondrian does not work with event-level quasi-identifiers (values that vary "
            f"within a person: {', '.join(plan.people.event_level)})",
            fix='use algorithm = "optimal" (--algorithm optimal)')
    found = mondrian(ft, plan.models, relaxed=plan.search.relaxed, sets=plan.search.sets,
                     max_suppression=plan.max_suppression)
    # a group shown as * in every QI reads as suppressed records (and with them, as one group)
    p = settle_starred(ft, found, plan.models, missing=plan.missing)
    # the partitions are found on the frequency table; releasing them is a per-batch lookup
    recoder = MondrianRecoder(ft, p, identifiers=plan.removed, missing=plan.missing)
    utility = {k: plain(v) for k, v in mondrian_utility(ft, p).items() if k != "groups"}
    suppressed = p.suppressed(ft)
    notes = [] if p is found else [_settled_note(plan, found.suppressed(ft), suppressed)]
    return Outcome(recoder, {}, 0, p, suppressed, p.sizes(ft), utility, notes=notes)


def _settled_note(plan: Plan, found: int, settled: int) -> str:
    """The warning of a Mondrian release whose starred groups were suppressed: from
    ``found`` suppressed to ``settled``."""
    unit = "records" if plan.people is None else "people"
    extra = settled - found
    share = settled / max(plan.ft.n_records, 1)
    past = (f" ({100 * share:.2f}% in all, past max_suppression of "
            f"{100 * plan.max_suppression:g}%)" if share > plan.max_suppression else "")
    return (f"{extra:,} more {unit} were suppressed{past}: Mondrian's groups that show * in "
            "every quasi-identifier read as suppressed records, and with them broke a model "
            "on a sensitive attribute")


#: algorithms that are not a full-domain lattice search; everything else goes to find()
ALGORITHMS: dict[str, Callable[..., Outcome]] = {"mondrian": _mondrian}


