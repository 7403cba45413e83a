"""The exact full-domain search over people's signatures (event-level QIs).

With event-level quasi-identifiers a class is a set of people with equal signatures (the
set of their generalized QI tuples), which is no tuple of codes: the lattice's roll-ups do
not apply. Each node is grouped from the signatures themselves, and every node that no
proof rules out is checked and scored, so the node chosen is the best acceptable one
(``optimal`` and ``exhaustive`` alike; ``exhaustive`` checks every node).

Classes only merge under generalization (equal signatures stay equal), so a node that
fails models monotone in this setting fails at every specialization too: those are not
checked (for ``optimal``). The cell metrics weigh each person's distinct tuples; the
suppression limit, discernibility and AECS count people.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from blendin.errors import BlendinError
from blendin.frequency import Classes, summed
from blendin.lattice import Lattice, suppression_limit
from blendin.metrics import utility_of_node
from blendin.models import PrivacyModel, violating
from blendin.people import Signatures
from blendin.search.common import (
    Candidate,
    Solution,
    check_metric,
    check_policy,
    policy_key,
    tolerance,
)
from blendin.search.optimal import MAX_NODES

#: what the search over signatures runs (auto is optimal there)
PEOPLE_ALGORITHMS = ("auto", "optimal", "exhaustive")


@dataclass(frozen=True, eq=False)
class PeopleCheck:
    """A node checked over signatures: each signature's class, the classes' people, the
    classes to suppress and the people in them."""

    levels: tuple[int, ...]
    class_of: np.ndarray
    sizes: np.ndarray
    violating: np.ndarray
    n_suppressed: int
    acceptable: bool

    def suppressed_signatures(self) -> np.ndarray:
        return self.violating[self.class_of]


def check_people(sigs: Signatures, models: Sequence[PrivacyModel], levels: Sequence[int],
                 limit: int) -> PeopleCheck:
    """Group the signatures at ``levels``, test the models, count the people to suppress.

    >>> import pyarrow as pa
    >>> from blendin.codes import COUNT
    >>> from blendin.hierarchy.core import Hierarchy
    >>> from blendin.models import KAnonymity
    >>> ward = Hierarchy.from_rows([["a", "*"], ["b", "*"]])
    >>> d = pa.table({"id": ["1", "1", "2", "3"], "ward": ["a", "b", "a", "a"],
    ...               COUNT: [1, 1, 1, 1]})
    >>> sigs = Signatures.of(d, "id", {"ward": ward}, [])
    >>> check_people(sigs, [KAnonymity(2)], (0,), 1).n_suppressed
    1
    """
    levels = tuple(int(v) for v in levels)
    class_of, n_classes = sigs.classes_at(levels)
    sizes = np.bincount(class_of, weights=sigs.people, minlength=n_classes).astype(np.int64)
    hists = {name: summed(class_of, values, sigs.people, n_classes,
                          len(sigs.domains[name].labels))
             for name, values in sigs.values.items()}
    bad = violating(Classes(sizes, hists, sigs.domains), models, levels)
    n_sup = int(sizes[bad].sum())
    return PeopleCheck(levels, class_of, sizes, bad, n_sup, n_sup <= limit)


def people_utility(sigs: Signatures, result: PeopleCheck,
                   weights: Mapping[str, float] | None = None) -> dict[str, float]:
    """Every metric of a checked node: the cell metrics over the people's distinct tuples,
    discernibility and AECS over people (a suppressed person weighs as many as all)."""
    suppressed = result.suppressed_signatures()[sigs.of_tuple]
    found = utility_of_node(sigs.ft, result.levels, suppressed, weights=weights)
    n = float(sigs.n_people)
    kept = result.sizes[~result.violating].astype(float)
    found["discernibility"] = float(np.square(kept).sum() + n * result.n_suppressed)
    found["aecs"] = n / max(len(kept) + (1 if result.n_suppressed else 0), 1)
    return found


def find_people(sigs: Signatures, models: Sequence[PrivacyModel], *,
                max_suppression: float = 0.0, metric: str = "loss", algorithm: str = "auto",
                policy: str | None = None, weights: Mapping[str, float] | None = None,
                progress: Callable[[int, int], None] | None = None,
                max_nodes: int = MAX_NODES) -> Solution:
    """The acceptable node of least ``metric``, checked over people's signatures; ties
    (within 1e-9 relative) go to the preference ``policy``, then to the lower node, then
    to the smaller levels in QI order, as in :func:`blendin.search.find`.

    >>> import pyarrow as pa
    >>> from blendin.codes import COUNT
    >>> from blendin.hierarchy.core import Hierarchy
    >>> from blendin.models import KAnonymity
    >>> ward = Hierarchy.from_rows([["a", "*"], ["b", "*"]])
    >>> d = pa.table({"id": ["1", "1", "2", "2", "3"], "ward": ["a", "b", "a", "b", "a"],
    ...               COUNT: [1, 1, 1, 1, 1]})
    >>> sigs = Signatures.of(d, "id", {"ward": ward}, [])
    >>> find_people(sigs, [KAnonymity(2)]).levels, find_people(
    ...     sigs, [KAnonymity(2)], max_suppression=0.34).levels
    ((1,), (0,))
    """
    if algorithm not in PEOPLE_ALGORITHMS:
        raise BlendinError(
            f"the {algorithm} search does not work with event-level quasi-identifiers "
            "(values that vary within a person)",
            fix='use algorithm = "optimal" (--algorithm optimal), which searches people\'s '
                "signatures exactly")
    metric = check_metric(metric)
    policy = check_policy(policy)
    started = time.perf_counter()
    lattice = Lattice(sigs.ft.heights)
    if lattice.size > max_nodes:
        raise BlendinError(
            f"the lattice has {lattice.size:,} nodes, more than the {max_nodes:,} the exact "
            "search over people checks",
            fix="give the quasi-identifiers fewer levels, or make a QI person-level")
    n_people = sigs.n_people
    for model in models:
        model.validate(n_people, sigs.domains)
    limit = suppression_limit(max_suppression, n_people)
    flag = "monotone_with_suppression" if limit else "monotone"
    prune = algorithm != "exhaustive" and all(getattr(m, flag) for m in models)
    nodes = lattice.nodes().astype(np.int64)
    heights = nodes.sum(axis=1)
    ruled_out = np.zeros(len(nodes), bool)
    # acceptable nodes that may still be (tied) best: (candidate, check, utility)
    found: list[tuple[Candidate, PeopleCheck, dict]] = []
    best_score, checked = np.inf, 0
    for index in np.lexsort((np.arange(len(nodes)), -heights)):  # top-down
        if ruled_out[index]:
            continue
        levels = tuple(int(v) for v in nodes[index])
        result = check_people(sigs, models, levels, limit)
        checked += 1
        if progress is not None:
            progress(checked, lattice.size)
        if not result.acceptable:
            if prune:  # every specialization fails too
                ruled_out |= (nodes <= nodes[index]).all(axis=1)
            continue
        utility = people_utility(sigs, result, weights)
        score = float(utility[metric])
        if score > best_score + tolerance(best_score):
            continue
        candidate = Candidate(levels, score, result.n_suppressed,
                              int((~result.violating).sum()))
        found.append((candidate, result, utility))
        if score < best_score:
            best_score = score
            found = [f for f in found if f[0].score <= score + tolerance(score)]
    if not found:
        return Solution(None, checked, float("inf"), metric, algorithm, sigs.ft.qi_names,
                        0, 0, lattice_size=lattice.size,
                        seconds=time.perf_counter() - started)
    _, result, utility = min(found, key=lambda f: policy_key(policy, lattice.heights, f[0]))
    return Solution(result.levels, checked, float(utility[metric]), metric,
                    "optimal" if algorithm == "auto" else algorithm, sigs.ft.qi_names,
                    result.n_suppressed, int((~result.violating).sum()), utility,
                    lattice_size=lattice.size, seconds=time.perf_counter() - started,
                    reason=("the exact search over people's signatures (event-level "
                            "quasi-identifiers)" if algorithm == "auto" else ""))
