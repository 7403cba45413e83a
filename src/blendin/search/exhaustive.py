"""Exhaustive full-domain search: check every node. The reference the others are tested on."""

from __future__ import annotations

from blendin.search.common import Context, Solution
from blendin.search.optimal import MAX_NODES, too_big


def exhaustive(ctx: Context, max_nodes: int = MAX_NODES) -> Solution:
    """The best acceptable node after checking every node of the lattice."""
    lattice = ctx.lattice
    if lattice.size > max_nodes:
        raise too_big(lattice.size, max_nodes)
    found = []
    for levels in lattice.nodes():
        result = ctx.check(levels)
        if result.acceptable:
            found.append(ctx.candidate(result))
    if not found:
        raise ctx.nothing_found()
    return ctx.solution(ctx.best(found), "exhaustive")
