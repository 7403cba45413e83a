"""What every full-domain search shares: checking and scoring nodes, choosing among them."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from blendin.errors import BlendinError
from blendin.frequency import FrequencyTable
from blendin.lattice import Checker, NodeCheck, violating_classes
from blendin.metrics import (
    CELL_METRICS,
    CellCosts,
    arx_factors,
    arx_loss,
    check_metric,
    class_metrics,
    finish_cell_metric,
    normalized_weights,
)
from blendin.models import PrivacyModel

#: preference among nodes of equal utility (or among minimal nodes, for binary search)
POLICIES: dict[str, str] = {
    "absolute": "fewest generalization steps (smallest sum of levels)",
    "relative": "smallest sum of level / (height - 1)",
    "distribution": "most distinct released tuples (classes)",
    "suppression": "fewest suppressed records",
}


@dataclass(frozen=True)
class Candidate:
    """An acceptable node with its figures."""

    levels: tuple[int, ...]
    score: float
    n_suppressed: int
    n_classes: int


@dataclass(frozen=True, eq=False)
class Solution:
    """The node a full-domain search chose.

    ``score`` is the figure of ``metric`` (lower is better), ``utility`` every metric of the
    node, ``n_suppressed`` the records suppressed and ``n_classes`` the classes kept.
    ``minimal`` lists, for binary search, all acceptable nodes at the lowest feasible height
    (empty otherwise). ``nodes_checked`` counts the nodes grouped and tested.
    """

    levels: tuple[int, ...]
    nodes_checked: int
    score: float
    metric: str
    algorithm: str
    qi_names: tuple[str, ...]
    n_suppressed: int
    n_classes: int
    utility: Mapping[str, float] = field(default_factory=dict)
    minimal: tuple[tuple[int, ...], ...] = ()
    lattice_size: int = 0
    seconds: float = 0.0
    #: proven the best acceptable node (exact searches always; the heuristic when it could
    #: rule out every other node)
    optimal: bool = True
    #: the heuristic's ``(seconds, nodes checked, best figure)`` at each improvement
    trace: tuple[tuple[float, int, float], ...] = ()
    #: for ``algorithm="auto"``: which algorithm ran and why
    reason: str = ""
    #: the search's check of the node: its classes and those to suppress (what the release
    #: is planned from; dropped once it is)
    check: NodeCheck | None = field(default=None, repr=False)

    @property
    def named_levels(self) -> dict[str, int]:
        """QI name -> level."""
        return dict(zip(self.qi_names, self.levels))


class Context:
    """A search's shared state: the checker, the metric and the preference policy."""

    def __init__(
        self,
        ft: FrequencyTable,
        models: Sequence[PrivacyModel],
        *,
        max_suppression: float,
        metric: str,
        policy: str | None,
        weights: Mapping[str, float] | None,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        self.ft = ft
        self.metric = check_metric(metric)
        self.policy = check_policy(policy)
        self.checker = Checker(ft, models, max_suppression)
        self.lattice = self.checker.lattice
        self.weights = normalized_weights(ft.qi_names, weights)
        self.costs = CellCosts.of(ft)
        self.progress = progress
        #: what progress reports as the total (None where checks do not sweep the lattice)
        self.progress_total: int | None = self.lattice.size
        self.n = ft.n_records
        self.started = time.perf_counter()

    # ---- checks and scores -----------------------------------------------------------------

    @property
    def checks(self) -> int:
        return self.checker.checks

    def check(self, levels: Sequence[int]) -> NodeCheck:
        result = self.checker.check(levels)
        if self.progress is not None:
            self.progress(self.checker.checks, self.progress_total)
        return result

    def lower_bounds(self, nodes: np.ndarray) -> np.ndarray:
        """A lower bound of the metric at each node, whatever is suppressed there.

        Exact (the unsuppressed figure) for cell metrics. For discernibility and AECS, from
        the most classes a node can have: no more than the distinct tuples, nor than the
        product of the distinct values present at each QI's level; n records in at most c
        classes give AECS >= n / c and, by Cauchy-Schwarz, sum |E|^2 >= n^2 / c (suppression
        only adds to both).
        """
        if self.metric in (*CELL_METRICS, "arx-loss"):
            return self.costs.unsuppressed_all(self.metric, nodes, self.weights)
        cap = np.full(len(nodes), float(len(self.ft.counts)))
        product = np.ones(len(nodes))
        for i, present in enumerate(self._present):
            product *= present[nodes[:, i]]
        cap = np.minimum(cap, product)
        if self.metric == "discernibility":
            return np.maximum(self._floor, self.n * float(self.n) / cap)
        return self.n / cap

    def lattice_bounds(self) -> np.ndarray:
        """:meth:`lower_bounds` of every node of the lattice, in index order.

        For the cell metrics and arx-loss a node's bound combines one term per (QI, level):
        outer products over the QIs give them all in index order, the terms combined in the
        same order as :meth:`lower_bounds` (the same figures), without a gather per node.
        """
        if self.metric == "arx-loss":
            product = np.ones(1)
            for factors, height in zip(self._arx_factors, self.lattice.heights):
                product = np.multiply.outer(product, factors[:height]).ravel()
            return product - 1.0
        if self.metric in CELL_METRICS:
            raw = np.zeros(1)
            for w, totals in zip(self.weights, self.costs.totals[self.metric]):
                raw = np.add.outer(raw, w * np.asarray(totals, dtype=float)).ravel()
            return finish_cell_metric(self.metric, raw, self.n, len(self.weights))
        return self.lower_bounds(self.lattice.nodes())

    @functools.cached_property
    def _present(self) -> list[np.ndarray]:
        """Per QI, the distinct values present at each level."""
        return [np.array([len(np.unique(np.take(h.codes[lv], self.ft.columns[i])))
                          for lv in range(h.height)], dtype=float)
                for i, h in enumerate(self.ft.hierarchies)]

    @functools.cached_property
    def _floor(self) -> float:
        """The unsuppressed discernibility of the finest node (no node does better)."""
        counts = self.ft.counts.astype(float)
        return float(np.square(counts).sum())

    def score(self, result: NodeCheck) -> float:
        """The metric of an acceptable checked node, its violating classes suppressed."""
        groups, bad = result.groups, result.violating
        sizes = groups.sizes.astype(float)
        if self.metric == "discernibility":
            kept = sizes[~bad]
            return float(np.square(kept).sum() + self.n * result.n_suppressed)
        if self.metric == "aecs":
            n_classes = int((~bad).sum()) + (1 if result.n_suppressed else 0)
            return self.n / n_classes
        if self.metric == "arx-loss":
            return self._arx_loss(result)
        base = self.costs.unsuppressed(self.metric, result.levels, self.weights)
        if not result.n_suppressed or self.metric == "height":
            return float(base)
        return float(base + self._penalty(result))

    def _penalty(self, result: NodeCheck, mask: np.ndarray | None = None) -> float:
        """What suppressing the violating classes (or those of ``mask``) adds to a cell
        metric."""
        bad = np.flatnonzero(result.violating if mask is None else mask)
        if not len(bad) or self.metric == "height":
            return 0.0
        sizes = np.take(result.groups.weights, bad)
        codes = result.groups.codes_of(bad)
        costs, metric = self.costs, self.metric
        per_class = np.zeros(len(bad))
        for i, (lv, w) in enumerate(zip(result.levels, self.weights)):
            if metric == "precision":
                per_class += w * (1.0 - costs.share[i][lv])
                continue
            table = {"loss": costs.loss, "gcp": costs.ncp, "entropy": costs.log_mass}[metric]
            cell = np.take(table[i][lv], codes[i])
            per_class += w * ((np.log2(self.n) - cell) if metric == "entropy" else 1.0 - cell)
        raw = float((sizes * per_class).sum())
        return raw if metric == "entropy" else float(
            finish_cell_metric(metric, raw, self.n, len(self.weights)))

    def _arx_loss(self, result: NodeCheck) -> float:
        """arx-loss of a checked node: a suppressed record's cells cost 1, not their share."""
        if not result.violating.any():  # the factors of every (QI, level) are known
            return float(np.prod(self._arx_factors[self._qis, result.levels]) - 1.0)
        sums = self._arx_sums[self._qis, result.levels]  # a copy: added to below
        bad = np.flatnonzero(result.violating)
        if len(bad):
            sizes = np.take(result.groups.weights, bad)
            codes = result.groups.codes_of(bad)
            for i, lv in enumerate(result.levels):
                sums[i] += sizes @ (1.0 - np.take(self.costs.arx_share[i][lv], codes[i]))
        return float(arx_loss(sums, self.n, self.costs.domain_sizes, self.weights))

    @functools.cached_property
    def _arx_sums(self) -> np.ndarray:
        """(QIs, levels) arx-loss sums with nothing suppressed, padded: one gather a node
        (stacking per-QI columns cost more than the rest of scoring a node)."""
        totals = self.costs.totals["arx-loss"]
        table = np.zeros((len(totals), max((len(t) for t in totals), default=0)))
        for i, t in enumerate(totals):
            table[i, :len(t)] = t
        return table

    @functools.cached_property
    def _arx_factors(self) -> np.ndarray:
        """(QIs, levels) arx-loss factors with nothing suppressed (Loss = product - 1)."""
        return arx_factors(self._arx_sums.T, self.n, self.costs.domain_sizes, self.weights).T

    @functools.cached_property
    def _qis(self) -> np.ndarray:
        return np.arange(len(self.ft.qi_names))

    def settled(self, result: NodeCheck) -> float:
        """Records suppressed at this node and every specialization, at least
        (:attr:`NodeCheck.floor_records`; 0 without suppression). :meth:`bound_with` turns
        this into a lower bound of a specialization's figure.
        """
        if self.checker.limit == 0:
            return 0.0
        return float(result.floor_records)

    def record_floors(self, nodes: np.ndarray) -> np.ndarray:
        """Per node, the least a suppressed record adds to a cell metric there: its cells
        would otherwise cost at most the dearest cell of each level."""
        if self.metric not in CELL_METRICS or self.metric == "height":
            return np.zeros(len(nodes))
        costs, raw = self.costs, np.zeros(len(nodes))
        for i, w in enumerate(self.weights):
            if self.metric == "precision":
                saved = 1.0 - costs.share[i]
            else:
                table = {"loss": costs.loss, "gcp": costs.ncp, "entropy": costs.log_mass}[
                    self.metric][i]
                dearest = np.array([t.max() if len(t) else 0.0 for t in table])
                saved = (np.log2(self.n) - dearest) if self.metric == "entropy" else (
                    1.0 - dearest)
            raw += w * np.maximum(saved, 0.0)[nodes[:, i]]
        if self.metric == "entropy":
            return raw
        return finish_cell_metric(self.metric, raw, self.n, len(self.weights))

    def bound_with(self, bound: float, records: float, floor: float = 0.0,
                   penalty: float = 0.0) -> float:
        """A lower bound of a node's figure from its unsuppressed ``bound``, ``records``
        settled as suppressed (:meth:`settled`, here or at a generalization) with ``floor``
        the least each adds (:meth:`record_floors`), and a suppression ``penalty`` known for
        a generalization (a record suppressed costs more at a finer node)."""
        if self.metric in CELL_METRICS:
            return bound + max(penalty, records * floor)
        if not records or self.metric == "arx-loss":
            return bound
        if self.metric == "discernibility":
            # a suppressed record costs n instead of its tuple's count (at most the largest)
            return max(bound, self._floor + records * (self.n - float(self.ft.counts.max())))
        # aecs: the kept classes hold at most n - s records, so number at most n - s
        return max(bound, self.n / (min(len(self.ft.counts), self.n - records) + 1))

    def candidate(self, result: NodeCheck) -> Candidate:
        return Candidate(result.levels, self.score(result), result.n_suppressed,
                         result.n_classes)

    def utility(self, result: NodeCheck) -> dict[str, float]:
        """Every metric of a checked acceptable node."""
        groups, keep = result.groups, ~result.violating
        codes = np.stack([c[keep] for c in groups.codes], axis=1)
        cells = self.costs.cells(result.levels, codes)
        return class_metrics(
            groups.sizes[keep], n_records=self.n, n_suppressed=result.n_suppressed,
            loss=cells["loss"], ncp=cells["ncp"], share=cells["share"],
            log_mass=cells["log_mass"], ground_bits=self.costs.ground_bits,
            levels=result.levels, weights=self.weights, arx_share=cells["arx_share"],
            domain_sizes=self.costs.domain_sizes)

    # ---- choosing --------------------------------------------------------------------------

    def policy_key(self, c: Candidate) -> tuple:
        """Sort key of the preference policy, then fewest steps, then smallest levels."""
        return policy_key(self.policy, self.lattice.heights, c)

    def static_key(self, levels: Sequence[int]) -> tuple | None:
        """:meth:`policy_key` of a node before checking it (None if the policy needs the
        check: distribution, suppression)."""
        if self.policy in ("distribution", "suppression"):
            return None
        levels = tuple(int(v) for v in levels)
        return self.policy_key(Candidate(levels, 0.0, 0, 0))

    def best(self, candidates: Sequence[Candidate]) -> Candidate:
        """The candidate with the best score; ties (within rounding) go to the policy."""
        low = min(c.score for c in candidates)
        ties = [c for c in candidates if c.score <= low + tolerance(low)]
        return min(ties, key=self.policy_key)

    def by_policy(self, candidates: Sequence[Candidate]) -> Candidate:
        """The policy's choice, the metric breaking its ties (binary search's rule)."""
        if self.policy is None:
            return self.best(candidates)
        return min(candidates, key=lambda c: (self.policy_key(c)[0], c.score,
                                              *self.policy_key(c)[1:]))

    def solution(self, chosen: Candidate, algorithm: str,
                 minimal: Sequence[tuple[int, ...]] = (), *, optimal: bool = True,
                 trace: tuple = (), check: NodeCheck | None = None) -> Solution:
        """The search's answer: ``chosen`` with its utility and its ``check`` (checked
        again when not given)."""
        checked = self.checks
        result = check if check is not None else self.checker.check(chosen.levels)
        return Solution(
            levels=chosen.levels,
            nodes_checked=checked,
            score=chosen.score,
            metric=self.metric,
            algorithm=algorithm,
            qi_names=tuple(self.ft.qi_names),
            n_suppressed=chosen.n_suppressed,
            n_classes=chosen.n_classes,
            utility=self.utility(result),
            minimal=tuple(minimal),
            lattice_size=self.lattice.size,
            seconds=time.perf_counter() - self.started,
            optimal=optimal,
            trace=trace,
            check=result,
        )

    def nothing_found(self) -> BlendinError:
        """The error when no node is acceptable: how much suppression the top would need."""
        top = self.checker.check(self.lattice.top)
        share = top.n_suppressed / self.n
        if top.n_suppressed >= self.n:  # suppressing everything is no release: say why
            return unmeetable(self.ft, self.lattice.top, self.checker.models,
                              self.checker.limit)
        hint = (f"allow max_suppression >= {share:.4g} (the fully generalized table "
                f"still needs {top.n_suppressed:,} of {self.n:,} records suppressed)"
                if top.n_suppressed else "relax the privacy models")
        return BlendinError(
            "no generalization meets the privacy models within the suppression limit "
            f"({self.checker.limit:,} records)",
            fix=f"{hint}, or give the hierarchies more levels")


def check_policy(policy: str | None) -> str | None:
    """The policy, or a BlendinError listing the known ones."""
    if policy is not None and policy not in POLICIES:
        raise BlendinError(f"unknown preference policy {policy!r}",
                           fix=f"use one of {', '.join(POLICIES)}")
    return policy


def policy_key(policy: str | None, heights: Sequence[int], c: Candidate) -> tuple:
    """Sort key of ``policy`` (:data:`POLICIES`) among nodes of equal utility, then fewest
    steps, then smallest levels: the tie rule of every full-domain search."""
    relative = sum(lv / (h - 1) for lv, h in zip(c.levels, heights) if h > 1)
    keys = {
        "absolute": sum(c.levels),
        "relative": round(relative, 12),
        "distribution": -c.n_classes,
        "suppression": c.n_suppressed,
    }
    first = keys[policy] if policy else 0
    return (first, sum(c.levels), c.levels)


def unmeetable(ft: FrequencyTable, top: Sequence[int], models: Sequence[PrivacyModel],
               limit: int) -> BlendinError:
    """The error when even the fully generalized table must suppress every record: which
    model fails on which class (raising the suppression limit to 100% releases nothing)."""

    _, _, classes = violating_classes(ft, top, models)
    biggest = int(np.argmax(classes.sizes))
    failing = [m for m in models
               if not np.asarray(m.holds(classes), dtype=bool)[biggest]]
    names = "; ".join(str(m) for m in failing) or "the privacy models"
    which = "all" if len(classes.sizes) == 1 else "the largest class of"
    return BlendinError(
        f"no generalization meets the privacy models within the suppression limit "
        f"({limit:,} records): even with every quasi-identifier fully generalized, {names} "
        f"fails for the class of {which} {int(classes.sizes[biggest]):,} records, so every "
        "record would be suppressed",
        fix=f"relax {names}, or give the hierarchies more levels")


def tolerance(value: float) -> float:
    """Scores closer than this are equal (they come from sums in different orders); none
    around an infinite score (no node yet), which any finite score beats."""
    return 1e-9 * max(1.0, abs(value)) if math.isfinite(value) else 0.0
