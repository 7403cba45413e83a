"""Optimal full-domain search: the node of best utility among all acceptable nodes.

Exact, with two kinds of pruning that are proven, never guessed:

- *utility bound*: every node has a lower bound of its figure that no suppression can beat
  (the figure with nothing suppressed for the cell metrics, which only grows under
  generalization). Nodes whose bound is worse than the best acceptable node found so far
  cannot win and are never checked.
- *monotone models* (predictive tagging, as in Flash and OLA): when a node fails models
  that are monotone in the setting at hand (with suppression when records may be
  suppressed), every specialization of it fails too and is never checked.

The lattice is swept top-down, layer by layer (sum of levels), each layer in order of the
lower bound. High nodes are mostly acceptable and their figures set the bound early; a
failing node removes its whole sub-lattice below. Where neither pruning applies (a
non-monotone model, a metric without a tight bound) every remaining node is checked, so the
answer is always the exact optimum.
"""

from __future__ import annotations

import numpy as np

from blendin.errors import BlendinError
from blendin.search.common import Candidate, Context, Solution, tolerance

#: the largest lattice searched by default
MAX_NODES = 1_000_000


def too_big(size: int, max_nodes: int) -> BlendinError:
    return BlendinError(
        f"the generalization lattice has {size:,} nodes, more than the {max_nodes:,} an "
        "optimal search visits",
        fix='use algorithm = "datafly" (greedy) or algorithm = "mondrian" (local '
        "recoding), use fewer quasi-identifiers or hierarchy levels, or raise max_nodes")


def optimal(ctx: Context, max_nodes: int = MAX_NODES) -> Solution:
    """The exact best acceptable node (ties broken by the context's policy)."""
    lattice = ctx.lattice
    if lattice.size > max_nodes:
        raise too_big(lattice.size, max_nodes)
    nodes = lattice.nodes()
    bound = ctx.lower_bounds(nodes)
    height = nodes.sum(axis=1)
    order = np.lexsort((bound, -height))
    starts = np.flatnonzero(np.diff(height[order], prepend=-1))
    layers = np.split(order, starts[1:])
    # dead: proven unacceptable (failed monotone models, or below such a node)
    dead = np.zeros(lattice.size, bool)
    # a lower bound of the suppression penalty, passed down from generalizations
    extra = np.zeros(lattice.size)
    strides = np.array(lattice.strides, np.int64)
    tops = np.array(lattice.heights) - 1
    found: list[Candidate] = []  # acceptable nodes that may still be (tied) best
    best, leader = np.inf, None  # best figure; smallest policy key among its ties
    limited = ctx.checker.limit > 0
    for layer in layers:
        # a node lies below a dead node iff one of its successors is dead (all successors
        # are in the layer above, already settled); the settled suppression passes down too
        # successors of the layer's nodes (the node itself where a QI is at its top)
        above = np.where(nodes[layer] < tops, layer[:, None] + strides, layer[:, None])
        dead[layer] |= dead[above].any(axis=1)
        if limited:
            extra[layer] = np.maximum(extra[layer], extra[above].max(axis=1))
        # nodes of one layer do not cover each other: filter the layer once
        live = layer[~dead[layer] & (bound[layer] <= best + tolerance(best))]
        for j in live.tolist():
            if bound[j] > best + tolerance(best):
                break  # the layer is sorted by bound: the rest cannot win either
            low = ctx.bound_with(bound[j], extra[j])
            if low > best + tolerance(best):
                continue
            if leader is not None and limited and low >= best - tolerance(best):
                # it can at most tie: it must come first by the policy to matter. (Without
                # suppression such nodes are still checked: most fail, and a failure
                # rules out all the nodes below it.)
                key = ctx.static_key(nodes[j])
                if key is not None and key > leader:
                    continue
            result = ctx.check(nodes[j])
            extra[j] = max(extra[j], ctx.settled(result))
            if not result.acceptable:
                dead[j] = result.proven
                continue
            candidate = ctx.candidate(result)
            if candidate.score > best + tolerance(best):
                continue
            found.append(candidate)
            if candidate.score < best:
                best = candidate.score
                found = [c for c in found if c.score <= best + tolerance(best)]
            ties = [ctx.static_key(c.levels) for c in found]
            leader = min(ties) if None not in ties else None
    if not found:
        raise ctx.nothing_found()
    return ctx.solution(ctx.best(found), "optimal")
