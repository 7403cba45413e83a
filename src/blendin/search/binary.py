"""Samarati's binary search on the height of the lattice (Samarati 2001).

The height of a node is its sum of levels. With monotone models, if some node of height h
is acceptable, so is some node of every greater height (its generalizations), so the lowest
height holding an acceptable node is found by binary search, checking the nodes of a height
until one is acceptable. All acceptable nodes of that height are then returned: they are
the k-minimal generalizations of lowest height (nothing lower is acceptable). The one
chosen follows the preference policy, the metric breaking ties (the metric alone when there
is no policy). With models that are not monotone the heights are scanned upward instead,
which stays exact.
"""

from __future__ import annotations

import numpy as np

from blendin.search.common import Context, Solution
from blendin.search.optimal import MAX_NODES, too_big


def _layer(nodes: np.ndarray, height: np.ndarray, h: int) -> np.ndarray:
    return nodes[height == h]


def _any_acceptable(ctx: Context, layer: np.ndarray) -> bool:
    return any(ctx.check(levels).acceptable for levels in layer)


def binary(ctx: Context, max_nodes: int = MAX_NODES) -> Solution:
    """All acceptable nodes of the lowest feasible height; one chosen by policy/metric."""
    lattice = ctx.lattice
    if lattice.size > max_nodes:
        raise too_big(lattice.size, max_nodes)
    nodes = lattice.nodes()
    height = nodes.sum(axis=1)
    top = lattice.max_height
    if ctx.checker.monotone:
        if not ctx.check(lattice.top).acceptable:
            raise ctx.nothing_found()
        low, high = 0, top  # invariant: height `high` is feasible
        while low < high:
            mid = (low + high) // 2
            if _any_acceptable(ctx, _layer(nodes, height, mid)):
                high = mid
            else:
                low = mid + 1
        lowest = high
    else:
        lowest = next((h for h in range(top + 1)
                       if _any_acceptable(ctx, _layer(nodes, height, h))), None)
        if lowest is None:
            raise ctx.nothing_found()
    found = []
    for levels in _layer(nodes, height, lowest):
        result = ctx.check(levels)
        if result.acceptable:
            found.append(ctx.candidate(result))
    chosen = ctx.by_policy(found)
    return ctx.solution(chosen, "binary", minimal=[c.levels for c in found])
