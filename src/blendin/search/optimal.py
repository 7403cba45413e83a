"""Optimal full-domain search: the node of best utility among all acceptable nodes.

Exact, with pruning that is proven, never guessed:

- *utility bound*: every node has a lower bound of its figure that no suppression can beat
  (for the cell metrics the figure with nothing suppressed, which only grows under
  generalization; for discernibility and AECS one from the most classes the node can
  hold). Nodes whose bound is worse than the best acceptable node found so far cannot win
  and are not checked. The metrics are NOT assumed monotone under suppression (a coarser
  node can suppress less and lose less), so acceptable nodes above the minimal ones are
  still weighed when their bound allows.
- *settled suppression*: with suppression, the records that models monotone with
  suppression (k-anonymity, distinct l-diversity) reject at a node are suppressed at every
  specialization too; their count, and the penalty of an acceptable node's suppression,
  raise the bound of the nodes below.
- *monotone models* (predictive tagging, as in Flash and OLA): when a node fails models
  that are monotone in the setting at hand (with suppression when records may be
  suppressed), every specialization of it fails too and is not checked. Without
  suppression a failing node is first extended upward through failing generalizations, so
  one check rules out a larger sub-lattice; on the way up, a node above an acceptable one
  is acceptable (and no better) without a check, when every model is monotone.
- *ties*: nodes that can at best tie with the best found are checked only if the
  preference policy could put them first.

The lattice is swept top-down, layer by layer (sum of levels), each layer in order of the
bound. High nodes are mostly acceptable and set the bound early; failing nodes remove
their sub-lattices. Where no pruning applies (a model not monotone with suppression, such
as t-closeness) every node within the bound is checked, so the answer is always the exact
optimum (ties within 1e-9 relative go to the policy, then to fewer steps, then to the
smaller levels in QI order).
"""

from __future__ import annotations

import numpy as np

from blendin.errors import BlendinError
from blendin.lattice import NodeCheck
from blendin.metrics import CELL_METRICS
from blendin.search.common import Candidate, Context, Solution, tolerance

#: the largest lattice searched by default
MAX_NODES = 1_000_000


def too_big(size: int, max_nodes: int) -> BlendinError:
    return BlendinError(
        f"the generalization lattice has {size:,} nodes, more than the {max_nodes:,} an "
        "exact lattice search visits",
        fix='use algorithm = "auto" or "heuristic" (anytime search within a time limit), '
        '"datafly" (greedy) or algorithm = "mondrian" (local recoding), use fewer '
        "quasi-identifiers or hierarchy levels, or raise max_nodes")


def optimal(ctx: Context, max_nodes: int = MAX_NODES) -> Solution:
    """The exact best acceptable node (ties broken by the context's policy)."""
    lattice = ctx.lattice
    if lattice.size > max_nodes:
        raise too_big(lattice.size, max_nodes)
    search = _Sweep(ctx)
    search.run()
    if not search.found:
        raise ctx.nothing_found()
    best = ctx.best(search.found)
    return ctx.solution(best, "optimal", check=search.checks[best.levels])


class _Sweep:
    """The top-down sweep and its state (see the module's docstring)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        lattice = ctx.lattice
        self.nodes = lattice.nodes()
        self.bound = ctx.lattice_bounds()
        #: proven unacceptable (failed monotone models, or below such a node)
        self.dead = np.zeros(lattice.size, bool)
        #: 1 acceptable, -1 not, 0 not checked
        self.status = [0] * lattice.size
        #: the bounds and levels as Python numbers, for the node-by-node steps
        self.bounds: list[float] = self.bound.tolist()
        #: records settled as suppressed, and a suppression penalty known, at the node or a
        #: generalization (passed down: both bound the node's figure from below)
        self.records = np.zeros(lattice.size)
        self.penalty = np.zeros(lattice.size)
        self.floor = ctx.record_floors(self.nodes)
        #: with only monotone models, the suppressed classes are exactly the settled ones,
        #: so an acceptable node's penalty holds for its specializations
        self.exact_penalty = ctx.checker.monotone
        self.strides = np.array(lattice.strides, np.int64)
        self.tops = np.array(lattice.heights) - 1
        self.found: list[Candidate] = []  # acceptable nodes that may still be (tied) best
        self.checks: dict[tuple[int, ...], NodeCheck] = {}  # their checks, for the solution
        self.best = np.inf
        self.cutoff = np.inf  # the best plus the tolerance of ties
        self.leader = None  # the smallest policy key among the ties of the best
        self.limited = ctx.checker.limit > 0
        #: acceptability passes up to generalizations (all models monotone, nothing
        #: suppressed): a node above an acceptable one needs no check
        self.tagging = ctx.checker.monotone and not self.limited

    def run(self) -> None:
        nodes, bound, dead = self.nodes, self.bound, self.dead
        records, penalty = self.records, self.penalty
        height = nodes.sum(axis=1, dtype=np.int16)
        # layers top-down, each by bound: two stable sorts (the second a radix sort of
        # small ints) order as lexsort does, in a third of its time
        order = np.argsort(bound, kind="stable")
        order = order[np.argsort(-height[order], kind="stable")]
        starts = np.flatnonzero(np.diff(height[order], prepend=-1))
        for layer in np.split(order, starts[1:]):
            # a node lies below a dead node iff one of its successors is dead (all
            # successors are in the layer above, already settled); so does settled
            # suppression. (Successor of a node at the top of a QI: the node itself.)
            above = np.where(nodes[layer] < self.tops, layer[:, None] + self.strides,
                             layer[:, None])
            dead[layer] |= dead[above].any(axis=1)
            if dead[layer].all():
                break  # every node below has a successor here: all dead too
            if self.limited:
                records[layer] = np.maximum(records[layer], records[above].max(axis=1))
                penalty[layer] = np.maximum(penalty[layer], penalty[above].max(axis=1))
            # nodes of one layer do not cover each other: filter the layer once
            live = layer[~dead[layer] & (bound[layer] <= self.cutoff)]
            bounds = self.bounds
            self.ctx.checker.expect(nodes[live])  # they may share one roll-up source
            for j in live.tolist():
                if bounds[j] > self.cutoff:
                    break  # the layer is sorted by bound: the rest cannot win either
                if dead[j] or (self.limited and not self.worth_checking(j)):
                    continue
                result = self.visit(j)
                if result.proven and not self.limited:
                    # without suppression the acceptable nodes are few and high: a failing
                    # node is worth extending upward, to rule out more below at once
                    self.climb(j, layer)

    def worth_checking(self, j: int) -> bool:
        """False when the node provably cannot be (or tie with a preferred) best node.
        (Without suppression, its bound alone tells: :meth:`run` filters on it.)"""
        best = self.best
        low = self.ctx.bound_with(self.bound[j], self.records[j], self.floor[j],
                                  self.penalty[j])
        if low > best + tolerance(best):
            return False
        if self.leader is not None and self.limited and low >= best - tolerance(best):
            # it can at most tie: it must come first by the policy to matter. (Without
            # suppression such nodes are still checked: most fail, and a failure rules
            # out all the nodes below it.)
            key = self.ctx.static_key(self.nodes[j])
            if key is not None and key > self.leader:
                return False
        return True

    def levels(self, j: int) -> tuple[int, ...]:
        """Node ``j``'s levels (a row of ``nodes``: faster than decoding the index)."""
        return tuple(self.nodes[j].tolist())

    def visit(self, j: int):
        """Check node ``j`` and record what it shows."""
        ctx = self.ctx
        result = ctx.check(self.levels(j))
        if self.limited:
            self.records[j] = max(self.records[j], ctx.settled(result))
        self.status[j] = 1 if result.acceptable else -1
        if not result.acceptable:
            self.dead[j] |= result.proven
            return result
        candidate = ctx.candidate(result)
        if self.limited and self.exact_penalty and ctx.metric in CELL_METRICS:
            self.penalty[j] = max(self.penalty[j], candidate.score - self.bound[j])
        best = self.best
        if candidate.score > best + tolerance(best):
            return result
        self.found.append(candidate)
        self.checks[candidate.levels] = result
        if candidate.score < best:
            self.best = best = candidate.score
            self.cutoff = best + tolerance(best)
            self.found = [c for c in self.found if c.score <= best + tolerance(best)]
            self.checks = {c.levels: self.checks[c.levels] for c in self.found}
        keys = [ctx.static_key(c.levels) for c in self.found]
        self.leader = min(keys) if None not in keys else None
        return result

    def above_accepted(self, j: int) -> bool:
        """Node ``j`` generalizes a node known acceptable, one of its predecessors (see
        ``tagging``; the climbs, going up, mostly meet acceptable nodes next to them)."""
        if not self.tagging:
            return False
        status = self.status
        return any(status[j - s] == 1
                   for s, lv in zip(self.ctx.lattice.strides, self.levels(j)) if lv)

    def climb(self, j: int, layer: np.ndarray) -> None:
        """From a node proven unacceptable, walk up through unacceptable generalizations
        as far as they go; everything below the last one is unacceptable.

        Only the nodes of the current ``layer`` below it are marked: the layers above are
        done, and every node below it in a lower layer has a successor below it in this
        layer, through which :meth:`run` passes the mark down (a node x below the last
        one, lower in QI i, has x + e_i below it one layer up). Marking the whole lattice
        each time cost a sixth of the search on a 13,000-node lattice."""
        lattice, status, dead = self.ctx.lattice, self.status, self.dead
        moved = True
        while moved:
            moved = False
            levels = self.levels(j)
            ups = [j + s for s, lv, h in zip(lattice.strides, levels, lattice.heights)
                   if lv + 1 < h]
            for s in sorted(ups, key=self.bounds.__getitem__):
                if status[s] == 1 or (status[s] == -1 and not dead[s]):
                    continue
                if status[s] == 0 and self.above_accepted(s):
                    # acceptable, and no better than the accepted node below it (its
                    # figure is no lower without suppression, and it loses the tie by
                    # every policy); its layer is done, so nothing else would check it
                    status[s] = 1
                    continue
                if status[s] == 0 and not self.visit(s).proven:
                    continue
                j, moved = s, True
                break
        self.dead[layer[(self.nodes[layer] <= self.nodes[j]).all(axis=1)]] = True
