"""Samarati's binary search on the height of the lattice (Samarati 2001).

The height of a node is its sum of levels. With monotone models, if some node of height h
is acceptable, so is some node of every greater height (its generalizations), so the lowest
height holding an acceptable node is found by binary search, checking the nodes of a height
until one is acceptable. All acceptable nodes of that height are then returned: they are
the k-minimal generalizations of lowest height (nothing lower is acceptable). The one
chosen follows the preference policy, the metric breaking ties (the metric alone when there
is no policy). Nodes below a failing node are not checked (they fail too); each node is
checked at most once. With models that are not monotone the heights are scanned upward
instead, which stays exact.
"""

from __future__ import annotations

import numpy as np

from blendin.search.common import Context, Solution
from blendin.search.optimal import MAX_NODES, too_big


class _Layers:
    """The lattice by height, with nodes proven unacceptable (see NodeCheck.proven) passed
    down: a node below one of them is unacceptable."""

    def __init__(self, ctx: Context) -> None:
        lattice = ctx.lattice
        self.ctx = ctx
        self.nodes = lattice.nodes()
        height = self.nodes.sum(axis=1)
        order = np.argsort(-height, kind="stable")
        starts = np.flatnonzero(np.diff(height[order], prepend=-1))
        self.by_height = {int(height[layer[0]]): layer for layer in np.split(order, starts[1:])}
        self.dead = np.zeros(lattice.size, bool)
        self.strides = np.array(lattice.strides, np.int64)
        self.tops = np.array(lattice.heights) - 1
        self.seen: dict[int, object] = {}

    def live(self, h: int) -> np.ndarray:
        """Nodes of height ``h`` not yet proven unacceptable."""
        for above_h in sorted(self.by_height, reverse=True):
            if above_h < h:
                break
            layer = self.by_height[above_h]
            above = np.where(self.nodes[layer] < self.tops,
                             layer[:, None] + self.strides, layer[:, None])
            self.dead[layer] |= self.dead[above].any(axis=1)
        layer = self.by_height[h]
        return layer[~self.dead[layer]]

    def candidate(self, j: int, climb: bool = False):
        """The node's Candidate if it is acceptable, else None (each node checked once).

        With ``climb``, a node proven unacceptable is first extended upward through
        unacceptable generalizations; everything below the last one is marked: one such
        node rules out many nodes of this height at once.
        """
        if j not in self.seen:
            result = self.ctx.check(self.nodes[j])
            self.dead[j] |= result.proven
            self.seen[j] = self.ctx.candidate(result) if result.acceptable else None
            if climb and result.proven:
                self._climb(j)
        return self.seen[j]

    def _climb(self, j: int) -> None:
        moved = True
        while moved:
            moved = False
            levels = self.nodes[j]
            for s, lv, top in zip(self.strides, levels, self.tops):
                up = j + int(s)
                if lv >= top or (up in self.seen and not self.dead[up]):
                    continue  # no such node, or acceptable (or unacceptable, unproven)
                if self.dead[up] or (self.candidate(up) is None and self.dead[up]):
                    j, moved = up, True
                    break
        self.dead |= (self.nodes <= self.nodes[j]).all(axis=1)

    def any_acceptable(self, h: int) -> bool:
        for j in self.live(h).tolist():
            if not self.dead[j] and self.candidate(j, climb=True) is not None:
                return True
        return False


def binary(ctx: Context, max_nodes: int = MAX_NODES) -> Solution:
    """All acceptable nodes of the lowest feasible height; one chosen by policy/metric."""
    lattice = ctx.lattice
    if lattice.size > max_nodes:
        raise too_big(lattice.size, max_nodes)
    layers = _Layers(ctx)
    top = lattice.max_height
    if ctx.checker.monotone:
        if not ctx.check(lattice.top).acceptable:
            raise ctx.nothing_found()
        low, high = 0, top  # invariant: height `high` is feasible
        while low < high:
            mid = (low + high) // 2
            if layers.any_acceptable(mid):
                high = mid
            else:
                low = mid + 1
        lowest = high
    else:
        lowest = next((h for h in range(top + 1) if layers.any_acceptable(h)), None)
        if lowest is None:
            raise ctx.nothing_found()
    found = [c for c in map(layers.candidate, layers.live(lowest).tolist()) if c is not None]
    chosen = ctx.by_policy(found)
    return ctx.solution(chosen, "binary", minimal=[c.levels for c in found], optimal=False)
