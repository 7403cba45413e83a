"""An anytime full-domain heuristic for lattices too large for the optimal search.

It always holds a *verified* node (checked acceptable, the figure computed as the optimal
search computes it) and improves it until the budget (seconds and/or node checks) runs out
or it proves nothing better exists:

1. the top of the lattice is checked first (a zero budget returns it), then Datafly's greedy
   climb from the bottom gives a good acceptable node quickly;
2. *guided local search*: around the current best node ``x`` the neighbours one level lower
   (``x - e_i``) and one level higher (``x + e_j``) in each QI are checked. How many records
   each step adds to or removes from the suppressed ones is a first-order model of the
   suppression at moves that lower some QIs and raise others (``x - e_i + e_j``, and with a
   third QI either way); the figure's part without suppression is exact and free (it is
   additive over the QIs), so every move gets a predicted figure. Moves predicted to stay
   within the suppression limit and to beat the best node are checked in order of that
   prediction; the first that really improves becomes the new best node;
3. at a local optimum the search kicks the best node at random (seeded: the same seed gives
   the same path) and climbs back to an acceptable node by the same model before searching
   locally again;
4. on lattices small enough to list (``PROOF_NODES``), once local search stalls the nodes
   that could still beat the best (unsuppressed figure lower, not below a node proven
   unacceptable) are checked in order of that bound; when none is left the best node is
   proven optimal and the search stops.

Nothing is pruned on a guess: a node is skipped only when its lower bound cannot beat the
best node, or when a check proved it unacceptable (monotone models). Every node returned
passed the same checks as the optimal search's, so its figure is never below the optimum.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

from blendin.errors import BlendinError
from blendin.metrics import CELL_METRICS
from blendin.search.common import Candidate, Context, Solution, tolerance

#: lattices up to this many nodes are listed to prove the best node optimal
PROOF_NODES = 200_000
#: default budget when none is given (seconds)
DEFAULT_SECONDS = 10.0


@dataclass(frozen=True)
class Budget:
    """How long the heuristic may search: seconds of wall time and/or node checks (None: no
    limit on that one). A budget of zero still checks the top of the lattice.

    >>> Budget(seconds=5).describe()
    '5 s'
    >>> Budget(seconds=None, checks=1000).describe()
    '1,000 node checks'
    """

    seconds: float | None = DEFAULT_SECONDS
    checks: int | None = None

    def __post_init__(self) -> None:
        if self.seconds is not None and not self.seconds >= 0:
            raise BlendinError(f"time_limit must be 0 or more seconds, got {self.seconds!r}",
                               fix="write e.g. time_limit = 10 (--time-limit 10)")
        if self.checks is not None and (int(self.checks) != self.checks or self.checks < 0):
            raise BlendinError(f"max_checks must be a whole number >= 0, got {self.checks!r}",
                               fix="write e.g. max_checks = 5000 (--max-checks 5000)")

    def describe(self) -> str:
        parts = []
        if self.seconds is not None:
            parts.append(f"{self.seconds:g} s")
        if self.checks is not None:
            parts.append(f"{self.checks:,} node checks")
        return " or ".join(parts) or "no limit"


@dataclass(frozen=True)
class _Seen:
    """What a check showed of one node (``figure``: the metric with its violating classes
    suppressed, exact when acceptable, a guide otherwise)."""

    acceptable: bool
    suppressed: int
    figure: float
    candidate: Candidate | None


class _OutOfBudget(Exception):
    pass


def heuristic(ctx: Context, budget: Budget | None = None, seed: int = 0) -> Solution:
    """The best acceptable node found within ``budget`` (see the module's docstring).

    ``Solution.optimal`` is True when the search proved no node is better; ``trace`` lists
    ``(seconds, nodes checked, best figure)`` at every improvement.
    """
    search = _Search(ctx, budget or Budget(), seed)
    search.run()
    if search.best is None:
        raise ctx.nothing_found()
    return ctx.solution(search.best, "heuristic", optimal=search.proven,
                        trace=tuple(search.trace))


class _Search:
    def __init__(self, ctx: Context, budget: Budget, seed: int) -> None:
        self.ctx = ctx
        self.budget = budget
        self.rng = np.random.default_rng(seed)
        lattice = ctx.lattice
        self.q = lattice.q
        self.tops = np.array(lattice.heights, np.int64) - 1
        self.limit = ctx.checker.limit
        self.seen: dict[tuple[int, ...], _Seen] = {}
        self.dead = np.zeros((0, self.q), np.int64)  # maximal nodes proven unacceptable
        self.best: Candidate | None = None
        self.proven = False
        self.trace: list[tuple[float, int, float]] = []
        self.start = time.perf_counter()
        self.deadline = None if budget.seconds is None else self.start + budget.seconds
        self.first_check = ctx.checks
        ctx.progress_total = budget.checks

    # ---- budget, bounds, checks ------------------------------------------------------------

    def spent(self) -> bool:
        if self.budget.checks is not None and \
                self.ctx.checks - self.first_check >= self.budget.checks:
            return True
        return self.deadline is not None and time.perf_counter() >= self.deadline

    @property
    def best_score(self) -> float:
        return np.inf if self.best is None else self.best.score

    def beats(self, value: float) -> bool:
        """True when a figure of ``value`` would improve on the best node."""
        best = self.best_score
        return value < best - tolerance(best)

    def bounds(self, nodes: np.ndarray) -> np.ndarray:
        """Lower bound of the figure at each node (exact without suppression, cell metrics)."""
        if self.ctx.metric in CELL_METRICS:
            return self.ctx.costs.unsuppressed_all(self.ctx.metric, nodes, self.ctx.weights)
        return self.ctx.lower_bounds(nodes)

    def below_dead(self, nodes: np.ndarray) -> np.ndarray:
        if not len(self.dead) or not len(nodes):
            return np.zeros(len(nodes), bool)
        return (nodes[:, None, :] <= self.dead[None, :, :]).all(axis=2).any(axis=1)

    def visit(self, levels, *, force: bool = False) -> _Seen:
        """Check a node once (raises _OutOfBudget when the budget is spent, unless
        ``force``)."""
        key = tuple(int(v) for v in levels)
        if key in self.seen:
            return self.seen[key]
        if not force and self.spent():
            raise _OutOfBudget
        result = self.ctx.check(key)
        figure = self.ctx.score(result)
        candidate = self.ctx.candidate(result) if result.acceptable else None
        seen = _Seen(bool(result.acceptable), int(result.n_suppressed), figure, candidate)
        self.seen[key] = seen
        if result.proven:
            node = np.array(key, np.int64)
            keep = ~(self.dead <= node).all(axis=1)
            self.dead = np.vstack([self.dead[keep], node])
        if candidate is not None:
            self.offer(candidate)
        return seen

    def offer(self, c: Candidate) -> None:
        best = self.best
        # a tie within rounding goes to the policy, as in the optimal search
        if best is not None and not self.beats(c.score) and (
                c.score > best.score + tolerance(best.score)
                or self.ctx.policy_key(c) >= self.ctx.policy_key(best)):
            return
        self.best = c
        self.trace.append((time.perf_counter() - self.start, self.ctx.checks, c.score))
        progress = self.ctx.progress
        if progress is not None and getattr(progress, "shows_best", False):
            # displays that declare it also show the best figure so far
            progress(self.ctx.checks, self.ctx.progress_total, best=c.score)

    # ---- the phases ------------------------------------------------------------------------

    def run(self) -> None:
        top = self.visit(self.ctx.lattice.top, force=True)
        if not top.acceptable and self.ctx.checker.monotone:
            return  # nothing is acceptable
        try:
            self.climb(np.zeros(self.q, np.int64))
            if self.best is None:
                self.prove()  # only models that are not monotone fail at the top
                return
            while True:
                if not self.local_search():
                    if self.prove():
                        return
                    if not self.kick():
                        return
        except _OutOfBudget:
            return

    def climb(self, start: np.ndarray) -> None:
        """Datafly's rule from ``start``: raise the QI with most distinct values until
        acceptable (the first seed, and the repair after a kick)."""
        levels = start.copy()
        while True:
            seen = self.visit(levels)
            if seen.acceptable:
                return
            groups = self.ctx.checker.groups(levels)
            distinct = [len(np.unique(c)) if lv < top else -1
                        for c, lv, top in zip(groups.codes, levels, self.tops)]
            if max(distinct, default=-1) < 0:
                return
            levels[int(np.argmax(distinct))] += 1

    def local_search(self) -> bool:
        """Improve the best node by guided moves until none helps; False when stuck."""
        improved_any = False
        while self.best is not None and self.improve():
            improved_any = True
        return improved_any

    def improve(self) -> bool:
        """One round around the best node: True when it moved to a better one."""
        x = np.array(self.best.levels, np.int64)
        here = self.seen[tuple(int(v) for v in x)]
        start = self.best
        eye = np.eye(self.q, dtype=np.int64)
        down = np.full(self.q, np.inf)  # records added to the suppressed by x - e_i
        up = np.zeros(self.q)  # records removed from them by x + e_j
        order = np.argsort(self.bounds(x - eye * (x > 0)[:, None]))
        for i in order:
            if x[i] == 0:
                continue
            node = x - eye[i]
            if self.below_dead(node[None])[0]:
                continue  # proven unacceptable: down[i] stays infinite
            seen = self.visit(node)
            down[i] = max(seen.suppressed - here.suppressed, 0)
            if self.best is not start:
                return True  # a lower node is better: move there at once
        for j in range(self.q):
            if x[j] < self.tops[j]:
                seen = self.visit(x + eye[j])
                up[j] = max(here.suppressed - seen.suppressed, 0)
        if self.best is not start:
            return True
        return self.guided(x, here, down, up)

    def guided(self, x: np.ndarray, here: _Seen, down: np.ndarray, up: np.ndarray) -> bool:
        """Check the moves the first-order model predicts to be better, best first."""
        moves = self.moves(x, down, up)
        if not len(moves):
            return False
        nodes = x + moves
        predicted_sup = here.suppressed + (np.where(moves < 0, down, 0.0).sum(axis=1)
                                           - np.where(moves > 0, up, 0.0).sum(axis=1))
        bound = self.bounds(nodes)
        per_record = self.record_cost(x, here)
        predicted = bound + np.maximum(predicted_sup, 0) * per_record
        slack = max(1.0, 0.02 * self.limit)
        keep = (predicted_sup <= self.limit + slack) & np.array([self.beats(b) for b in bound])
        nodes, predicted = nodes[keep], predicted[keep]
        alive = ~self.below_dead(nodes)
        nodes, predicted = nodes[alive], predicted[alive]
        if not len(nodes):
            return False
        start = self.best
        tried = 0
        for j in np.argsort(predicted, kind="stable"):
            key = tuple(int(v) for v in nodes[j])
            if key in self.seen:
                continue
            self.visit(key)
            tried += 1
            if self.best is not start:
                return True
            if tried >= 2 * self.q:
                break
        return False

    def moves(self, x: np.ndarray, down: np.ndarray, up: np.ndarray) -> np.ndarray:
        """Moves lowering one or two QIs and raising one or two others (at most three QIs
        changed), within the lattice."""
        q = self.q
        lower = [i for i in range(q) if x[i] > 0 and np.isfinite(down[i])]
        raise_ = [j for j in range(q) if x[j] < self.tops[j]]
        out = []
        for i in lower:
            for j in raise_:
                if i != j:
                    m = np.zeros(q, np.int64)
                    m[i], m[j] = -1, 1
                    out.append(m)
        for i, k in itertools.combinations(lower, 2):
            for j in raise_:
                if j not in (i, k):
                    m = np.zeros(q, np.int64)
                    m[i], m[k], m[j] = -1, -1, 1
                    out.append(m)
        for i in lower:
            for j, k in itertools.combinations(raise_, 2):
                if i not in (j, k):
                    m = np.zeros(q, np.int64)
                    m[i], m[j], m[k] = -1, 1, 1
                    out.append(m)
        return np.array(out, np.int64).reshape(-1, q)

    def record_cost(self, x: np.ndarray, here: _Seen) -> float:
        """What one suppressed record adds to the figure, estimated at ``x``."""
        bound = float(self.bounds(x[None])[0])
        if here.suppressed:
            return max(here.figure - bound, 0.0) / here.suppressed
        floors = self.ctx.record_floors(x[None])
        return float(floors[0])

    def kick(self) -> bool:
        """Leave a local optimum: lower a few random QIs of the best node, raise as many
        others, climb back to an acceptable node and search from there."""
        x = np.array(self.best.levels, np.int64)
        for _ in range(500):
            y = x.copy()
            n = int(self.rng.integers(1, max(2, self.q // 4) + 1))
            lower = self.rng.permutation(np.flatnonzero(y > 0))[:n]
            y[lower] -= 1
            room = np.flatnonzero(y < self.tops)
            room = room[~np.isin(room, lower)]
            raise_ = self.rng.permutation(room)[:n]
            y[raise_] += 1
            if tuple(int(v) for v in y) in self.seen or self.below_dead(y[None])[0]:
                continue
            if not self.beats(float(self.bounds(y[None])[0])):
                continue
            seen = self.visit(y)
            if not seen.acceptable:
                self.climb(y)
            self.local_search_from(y)
            return True
        return False

    def local_search_from(self, y: np.ndarray) -> None:
        """Descend from an acceptable node ``y`` that is not the best: move to lower
        acceptable neighbours while their figure improves on ``y``'s."""
        key = tuple(int(v) for v in y)
        seen = self.seen.get(key)
        if seen is None or not seen.acceptable:
            return
        current = seen
        eye = np.eye(self.q, dtype=np.int64)
        while True:
            lows = [y - eye[i] for i in range(self.q) if y[i] > 0]
            lows = [n for n in lows if not self.below_dead(n[None])[0]
                    and self.beats(float(self.bounds(n[None])[0]))]
            moved = False
            for node in lows:
                s = self.visit(node)
                if s.acceptable and s.figure < current.figure - tolerance(current.figure):
                    y, current, moved = node, s, True
                    break
            if not moved:
                return

    def prove(self) -> bool:
        """On a small lattice, check what could still beat the best node, in order of
        bound; True when the best node is proven optimal (or the lattice exhausted)."""
        lattice = self.ctx.lattice
        if lattice.size > PROOF_NODES:
            return False
        nodes = lattice.nodes().astype(np.int64)
        bound = self.bounds(nodes)
        for j in np.argsort(bound, kind="stable").tolist():
            best = self.best
            if best is not None and bound[j] > best.score + tolerance(best.score):
                break  # sorted: nothing further can beat (or tie with) the best node either
            node = nodes[j]
            if tuple(node.tolist()) in self.seen or self.below_dead(node[None])[0]:
                continue
            if best is not None and not self.beats(bound[j]):
                # it can at most tie: it matters only if the tie rule could put it first,
                # as in the optimal search (a policy on classes or suppression needs a check)
                key = self.ctx.static_key(node)
                if key is not None and key >= self.ctx.policy_key(best):
                    continue
            self.visit(node)
        self.proven = self.best is not None
        return True
