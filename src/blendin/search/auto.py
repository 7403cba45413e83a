"""``algorithm = "auto"``: the optimal search where it finishes quickly, else the heuristic.

The optimal search checks a share of the lattice that depends on the pruning the models
allow: with models monotone in the setting at hand (k-anonymity, distinct l-diversity; the
others without suppression) a failing node rules out everything below it, so lattices of up
to ``MONOTONE_NODES`` nodes are swept in seconds; without that pruning (t-closeness or
entropy l-diversity with suppression) every node within the utility bound may need a check,
so the limit is ``OTHER_NODES``. Larger lattices go to the anytime heuristic.
"""

from __future__ import annotations

from blendin.search.common import Context

#: largest lattice given to the optimal search when the models allow pruning below failures
MONOTONE_NODES = 100_000
#: ... and when they do not
OTHER_NODES = 20_000


def choose(ctx: Context, max_nodes: int) -> tuple[str, str]:
    """``(algorithm, reason)`` for this search."""
    size = ctx.lattice.size
    monotone = ctx.checker.monotone
    limit = min(max_nodes, MONOTONE_NODES if monotone else OTHER_NODES)
    pruning = ("models monotone here, so failing nodes prune the nodes below" if monotone
               else "models not monotone with suppression, so little can be pruned")
    if size <= limit:
        return "optimal", (f"lattice of {size:,} nodes, at most {limit:,} ({pruning}): "
                           "exact search")
    return "heuristic", (f"lattice of {size:.3g} nodes, more than the {limit:,} an exact "
                         f"search finishes quickly ({pruning}): anytime heuristic")
