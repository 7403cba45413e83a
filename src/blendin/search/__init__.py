"""Full-domain search over the generalization lattice (and Mondrian, in mondrian.py).

``find`` runs one of: ``optimal`` (exact best utility, pruned), ``exhaustive`` (every node,
the reference), ``binary`` (Samarati's binary search on height: all k-minimal nodes of the
lowest height), ``datafly`` (greedy), ``heuristic`` (anytime local search within a budget,
for lattices too large for ``optimal``) and ``auto`` (``optimal`` where it finishes quickly,
else ``heuristic``: the default). Every algorithm returns an acceptable node: its
violating classes hold at most ``floor(max_suppression * n)`` records, which are suppressed.

>>> import pandas as pd
>>> from blendin.frequency import FrequencyTable
>>> from blendin.hierarchy.core import Hierarchy
>>> from blendin.models import KAnonymity
>>> age = Hierarchy.from_rows([["31", "30-39", "*"], ["35", "30-39", "*"], ["42", "40-49", "*"]])
>>> df = pd.DataFrame({"age": ["31", "35", "35", "42", "42"]})
>>> ft = FrequencyTable.from_table(df, {"age": age})
>>> find(ft, [KAnonymity(2)]).levels
(1,)
>>> find(ft, [KAnonymity(2)], max_suppression=0.2).levels
(0,)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.models import PrivacyModel
from blendin.search import auto, binary, datafly, exhaustive, heuristic, optimal
from blendin.search.common import POLICIES, Candidate, Context, Solution
from blendin.search.heuristic import Budget
from blendin.search.optimal import MAX_NODES

#: full-domain algorithms find() runs
ALGORITHMS = ("auto", "optimal", "exhaustive", "binary", "datafly", "heuristic")

__all__ = ["ALGORITHMS", "POLICIES", "Budget", "Candidate", "Solution", "find"]


def find(
    ft: FrequencyTable,
    models: Sequence[PrivacyModel],
    *,
    max_suppression: float = 0.0,
    metric: str = "loss",
    algorithm: str = "auto",
    policy: str | None = None,
    weights: Mapping[str, float] | None = None,
    progress: Callable[[int, int], None] | None = None,
    max_nodes: int = MAX_NODES,
    time_limit: float | None = heuristic.DEFAULT_SECONDS,
    max_checks: int | None = None,
    seed: int = 0,
) -> Solution:
    """Search the lattice of ``ft``'s hierarchies for a node meeting ``models``.

    ``metric`` is one of :data:`blendin.metrics.METRICS` (all losses: lower is better);
    ``policy`` one of :data:`POLICIES` (how ties are broken; for binary search, how the
    k-minimal node is chosen); ``weights`` ``{qi: weight}`` scale the QIs in the metrics.
    ``progress(nodes_checked, lattice_size)`` is called after each check (size None for
    datafly). Lattices of more than ``max_nodes`` nodes are refused by the exact algorithms.
    The heuristic stops after ``time_limit`` seconds or ``max_checks`` node checks (None: no
    limit on that one) with the best node verified so far; ``seed`` fixes its random moves.
    ``Solution.algorithm`` says what ran, ``reason`` why (for ``auto``), ``optimal`` whether
    the node is proven best. Raises BlendinError when no node is acceptable.
    """
    if algorithm not in ALGORITHMS:
        extra = " (Mondrian runs through blendin.search.mondrian)" if algorithm == "mondrian" \
            else ""
        raise BlendinError(f"unknown search algorithm {algorithm!r}{extra}",
                           fix=f"use one of {', '.join(ALGORITHMS)}")
    ctx = Context(ft, models, max_suppression=max_suppression, metric=metric, policy=policy,
                  weights=weights, progress=progress)
    budget = Budget(time_limit, max_checks)
    reason = ""
    if algorithm == "auto":
        algorithm, reason = auto.choose(ctx, max_nodes)
    if algorithm == "datafly":
        return datafly.datafly(ctx)
    if algorithm == "heuristic":
        found = heuristic.heuristic(ctx, budget, seed)
        return dataclasses.replace(found, reason=reason) if reason else found
    run = {"optimal": optimal.optimal, "exhaustive": exhaustive.exhaustive,
           "binary": binary.binary}[algorithm]
    found = run(ctx, max_nodes)
    return dataclasses.replace(found, reason=reason) if reason else found
