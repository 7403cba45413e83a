"""Datafly (Sweeney 1997): greedy full-domain generalization, then suppression.

From the original data, while the models fail beyond the suppression limit, generalize one
more level the quasi-identifier with the most distinct values at its current level (ties:
the first in order); the violating classes of the first acceptable node are suppressed. Fast
on any lattice size, and acceptable by construction, but not optimal.
"""

from __future__ import annotations

import numpy as np

from blendin.search.common import Context, Solution


def datafly(ctx: Context) -> Solution:
    """The node the greedy climb stops at."""
    heights = ctx.lattice.heights
    ctx.progress_total = None  # a climb visits a handful of nodes of any lattice
    levels = list(ctx.lattice.bottom)
    while True:
        result = ctx.check(levels)
        if result.acceptable:
            return ctx.solution(ctx.candidate(result), "datafly", optimal=False)
        distinct = [len(np.unique(codes)) if lv + 1 < h else -1
                    for codes, lv, h in zip(result.groups.codes, levels, heights)]
        if max(distinct, default=-1) < 0:
            raise ctx.nothing_found()
        levels[int(np.argmax(distinct))] += 1
