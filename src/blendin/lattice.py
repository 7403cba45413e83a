"""The generalization lattice and the check of one node.

A node is one generalization level per quasi-identifier. Checking it groups the frequency
table's tuples by their generalized codes (one gather per QI, one mixed-radix int64 key, one
group-sum), tests the privacy models on the classes and counts the records of the violating
classes, which are suppressed when the limit allows. A node is *acceptable* when those
records number at most ``floor(max_suppression * n)``.

A coarser node is grouped from the classes of an already grouped finer node (a roll-up)
rather than from the table's tuples: classes only merge under generalization, so the finer
node's classes, with their sizes and sensitive histograms, are a smaller equivalent input.
Grouped nodes are kept in a cache bounded by a number of array elements; when the closest
cached source is large, a node one level below the target is grouped and kept first, so
the neighbours checked next roll up from it.

A check also proves what it can about the nodes below (see :meth:`Checker.check`): when
the models fail there in any case, and how many records are suppressed at every
specialization. The searches prune with both.
"""

from __future__ import annotations

import math
import operator
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from blendin.codes import combine_keys, factorized, unique_inverse
from blendin.errors import BlendinError
from blendin.frequency import Classes, FrequencyTable, class_slices, in_slices, summed
from blendin.hierarchy.core import first_seen
from blendin.models import PrivacyModel, violating

# a dense count array is used for grouping when the key space is at most this many times the
# number of rows grouped (plus a constant): there it beats hashing (pandas' factorize); past
# it, allocating and scanning the sparse count array costs more (measured on 19,502 keys
# with NumPy 2.4: 0.4x factorize's time in a span of 2x the keys, 0.6x at 8x, 0.9x at 16x;
# 50 keys in a span of 65,536 took 33x)
_DENSE_FACTOR = 4
_DENSE_SLACK = 2048
# sources with more classes than this get an intermediate node grouped (see Checker.groups)
_LADDER_MIN = 2048
# a node's histogram triples are summed when its (class, value) cells are at most 1/_SUM_CELLS
# of the triples, or its classes 1/_SUM_CLASSES of the triples' classes (see Groups.base)
_SUM_CELLS = 2
_SUM_CLASSES = 8


class Lattice:
    """All level vectors of a set of hierarchies; ``index`` is their mixed-radix number.

    >>> lat = Lattice([2, 3])
    >>> lat.size, lat.index((1, 2)), lat.levels(5)
    (6, 5, (1, 2))
    >>> lat.successors((0, 2))
    [(1, 2)]
    """

    def __init__(self, heights: Sequence[int]) -> None:
        self.heights = tuple(int(h) for h in heights)
        self.q = len(self.heights)
        self.size = math.prod(self.heights)
        strides, span = [], 1
        for h in reversed(self.heights):
            strides.append(span)
            span *= h
        self.strides = tuple(reversed(strides))

    @property
    def bottom(self) -> tuple[int, ...]:
        return (0,) * self.q

    @property
    def top(self) -> tuple[int, ...]:
        return tuple(h - 1 for h in self.heights)

    @property
    def max_height(self) -> int:
        """Sum of the top's levels."""
        return sum(self.top)

    def index(self, levels: Sequence[int]) -> int:
        return sum(map(operator.mul, map(int, levels), self.strides))

    def levels(self, index: int) -> tuple[int, ...]:
        out = []
        for s, h in zip(self.strides, self.heights):
            out.append((index // s) % h)
        return tuple(out)

    def nodes(self) -> np.ndarray:
        """Every node's levels (int16), shape (size, QIs), row ``i`` the node of index ``i``."""
        if not self.q:
            return np.zeros((1, 0), np.int16)
        grid = np.indices(self.heights, dtype=np.int16)  # (QIs, *heights): index order
        return np.ascontiguousarray(grid.reshape(self.q, -1).T)

    def successors(self, levels: Sequence[int]) -> list[tuple[int, ...]]:
        """Nodes one level higher in one QI."""
        out = []
        for i, (lv, h) in enumerate(zip(levels, self.heights)):
            if lv + 1 < h:
                out.append((*levels[:i], lv + 1, *levels[i + 1:]))
        return [tuple(int(v) for v in n) for n in out]

    def predecessors(self, levels: Sequence[int]) -> list[tuple[int, ...]]:
        """Nodes one level lower in one QI."""
        out = []
        for i, lv in enumerate(levels):
            if lv > 0:
                out.append((*levels[:i], lv - 1, *levels[i + 1:]))
        return [tuple(int(v) for v in n) for n in out]


class Groups:
    """The equivalence classes of a node.

    ``codes[i]`` is the int64 code, at the node's level, of QI ``i`` for every class;
    ``sizes`` the records per class; ``hists[attr]`` the sensitive values as sparse triples
    ``(class, value, count)``. Codes and histograms are computed on first use: most checks
    need neither (histograms are summed from the finer node's, through ``inverse``, only
    when this node serves as the source of a roll-up).
    """

    __slots__ = ("levels", "sizes", "_hists", "_codes", "_keys", "_radices", "_pending",
                 "_weights")

    def __init__(self, levels, sizes, hists=None, *, codes=None, keys=None, radices=None,
                 pending=None) -> None:
        self.levels: tuple[int, ...] = levels
        self.sizes: np.ndarray = sizes
        self._hists = hists
        self._codes = codes
        self._keys = keys
        self._radices = radices
        #: (the finer node's histogram triples, its class -> this node's class), or until
        #: first needed (most checked nodes never need histograms), (the source of the
        #: roll-up, its class -> this node's class)
        self._pending = pending
        self._weights = None

    @property
    def weights(self) -> np.ndarray:
        """``sizes`` as floats (what bincount sums)."""
        if self._weights is None:
            self._weights = self.sizes.astype(float)
        return self._weights

    @property
    def codes(self) -> tuple[np.ndarray, ...]:
        if self._codes is None:
            self._codes = _decode(self._keys, self._radices)
            self._keys = None
        return self._codes

    def codes_of(self, index: np.ndarray) -> tuple[np.ndarray, ...]:
        """The code columns of the classes ``index`` only."""
        if self._codes is None:
            return _decode(np.take(self._keys, index), self._radices)
        return tuple(np.take(c, index) for c in self._codes)

    @property
    def hists(self) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        if self._hists is None:
            if self._pending is None:
                self._hists = {}
            else:
                finer, inverse = self._finer()
                self._hists = {attr: _roll_hist(np.take(inverse, rows), vals, counts,
                                                    len(self.sizes))
                               for attr, (rows, vals, counts) in finer.items()}
                self._pending = None
        return self._hists

    @property
    def has_hists(self) -> bool:
        return bool(self._hists) or self._pending is not None

    def base(self):
        """(triples per attribute, their class -> this node's class, or None when the
        triples are this node's own): what a coarser node's histograms are summed from.

        The triples are summed here only where that pays: when the node's (class, value)
        pairs are sure to be at most half as many as the triples (a dense count), or when
        the node has far fewer classes than the triples' classes. Otherwise the coarser
        node takes the same triples through the composed class map: a gather the size of
        the finer node's classes instead of a hash of every triple (most nodes grouped on
        the way down from the table's tuples are never a source again)."""
        if self._hists is not None or self._pending is None:
            return self.hists, None
        finer, inverse = self._finer()
        n = len(self.sizes)
        cells = sum(n * (int(v.max()) + 1) for _, v, _ in finer.values() if len(v))
        triples = sum(len(r) for r, _, _ in finer.values())
        if _SUM_CELLS * cells <= triples or _SUM_CLASSES * n <= len(inverse):
            return self.hists, None
        return finer, inverse

    def _finer(self):
        """``_pending`` with the source's triples (asked of the source now)."""
        source, inverse = self._pending
        if isinstance(source, Groups):
            base, through = source.base()
            self._pending = (base, inverse if through is None else np.take(inverse, through))
        return self._pending

    def triples(self, attr: str):
        """(class, value, count, through) of ``attr``: the class of a triple is
        ``through[class]`` when ``through`` is not None (histograms not summed yet)."""
        if self._hists is None and self._pending is not None:
            finer, inverse = self._finer()
            rows, vals, counts = finer[attr]
            return rows, vals, counts, inverse
        return (*self.hists[attr], None)

    def __len__(self) -> int:
        return len(self.sizes)

    @property
    def weight(self) -> int:
        """Array elements held (for the cache bound): the sizes, their floats once made,
        the keys or the code columns (a node grouped by keys holds two arrays, not one a
        QI, until a roll-up decodes them)."""
        arrays = (1 + (self._weights is not None) + (self._keys is not None)
                  + (len(self._codes) if self._codes is not None else 0))
        own = len(self.sizes) * arrays
        if self._pending is not None:
            # the finer node's triples are counted with that node (shared by its roll-ups)
            return own + len(self._pending[1])
        return own + sum(3 * len(t[0]) for t in (self._hists or {}).values())


@dataclass(frozen=True, eq=False)
class NodeCheck:
    """The outcome of checking a node.

    ``violating`` marks the classes that fail a model (their records are suppressed when
    the node is acceptable). When the node is not acceptable, the check may have stopped
    once past the limit: ``n_suppressed`` and ``violating`` are then lower bounds.
    """

    levels: tuple[int, ...]
    acceptable: bool
    n_suppressed: int
    groups: Groups
    violating: np.ndarray
    #: unacceptable, and proven so for every specialization (monotone models failed)
    proven: bool = False
    #: the classes the models that are monotone in this setting alone make violate; with
    #: suppression, their records are suppressed at every specialization too
    settled: np.ndarray | None = None
    #: records suppressed at this node and at every specialization, at least
    floor_records: int = 0

    @property
    def n_classes(self) -> int:
        """Classes kept (not suppressed)."""
        return int(len(self.violating) - self.violating.sum())


def suppression_limit(max_suppression: float, n_records: int) -> int:
    """Records that may be suppressed: ``floor(max_suppression * n)``.

    >>> suppression_limit(0.05, 30162), suppression_limit(0.29, 10**8)
    (1508, 29000000)
    """
    if not 0.0 <= max_suppression <= 1.0:
        raise BlendinError(
            f"max_suppression must be a share between 0 and 1, got {max_suppression!r}",
            fix="write e.g. 0.05 for 5%",
        )
    share = max_suppression * n_records
    # the product rounds a hair below a whole number (0.29 * 10**8 = 28999999.999999996):
    # a slack relative to it as well as an absolute one keeps the records the share allows
    return int(math.floor(share + 1e-9 + 1e-12 * share))


class Checker:
    """Checks lattice nodes of one frequency table against privacy models.

    >>> import pandas as pd
    >>> from blendin.hierarchy.core import Hierarchy
    >>> from blendin.models import KAnonymity
    >>> h = Hierarchy.from_rows([["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
    >>> ft = FrequencyTable.from_table(pd.DataFrame({"x": ["1", "2", "3", "3"]}), {"x": h})
    >>> checker = Checker(ft, [KAnonymity(2)])
    >>> [checker.check(lv).acceptable for lv in [(0,), (1,), (2,)]]
    [False, True, True]
    """

    def __init__(
        self,
        ft: FrequencyTable,
        models: Sequence[PrivacyModel],
        max_suppression: float = 0.0,
        *,
        cache_budget: int = 8_000_000,
    ) -> None:
        self.ft = ft
        self.models = list(models)
        if not self.models:
            raise BlendinError("no privacy model given", fix="add e.g. KAnonymity(5)")
        self.n_records = ft.n_records
        for model in self.models:
            model.validate(self.n_records, ft.domains)
        self.limit = suppression_limit(max_suppression, self.n_records)
        self.lattice = Lattice(ft.heights)
        self._flag = "monotone_with_suppression" if self.limit > 0 else "monotone"
        # monotone models first (a failure there is proof for the specializations), and
        # within each, cheap models (class sizes only) before those needing histograms;
        # models of the whole release last, on the classes the others keep, in the order
        # given (as release.plan applies them: see models.violating)
        order = sorted(self.models, key=lambda m: (m.release, False, False) if m.release
                       else (False, not getattr(m, self._flag), m.attribute is not None))
        #: (model, monotone in this setting, what it reads) in the order applied
        self._steps = [(m, getattr(m, self._flag), _reads(m)) for m in order]
        self.attrs = sorted({m.attribute for m in self.models if m.attribute is not None})
        #: acceptable nodes have acceptable generalizations (so unacceptable ones have
        #: unacceptable specializations)
        self.monotone = all(getattr(m, self._flag) for m in self.models)
        self.radices = [[len(lab) for lab in h.labels] for h in ft.hierarchies]
        self._maps: dict[tuple[int, int, int], np.ndarray] = {}
        self._scaled: dict[tuple[int, int, int, int], np.ndarray] = {}
        self.checks = 0
        self.cache_budget = cache_budget
        self._cache: OrderedDict[int, Groups] = OrderedDict()
        self._slots: dict[int, int] = {}
        self._slot_index: dict[int, int] = {}
        self._slot_levels = np.zeros((16, self.lattice.q), np.int64)
        self._slot_cost = np.full(16, np.inf)
        self._free: list[int] = list(range(16))
        self._bottom = self._bottom_groups()
        #: the meet (lowest levels) of the nodes grouped from the tuples, with suppression
        self._meet: tuple[int, ...] | None = None
        #: the meet of the nodes a search announced it checks next (see expect)
        self._ahead: tuple[int, ...] | None = None

    def expect(self, nodes: np.ndarray) -> None:
        """Announce the nodes (rows of levels) a search is about to check: the first of
        them with a large source groups their meet, the lowest level of each QI, and the
        others roll up from it. (Only the source changes, never a node's classes.)"""
        self._ahead = tuple(map(int, nodes.min(axis=0))) if len(nodes) > 1 else None

    def _up(self, j: int, a: int, b: int) -> np.ndarray:
        """``map[code of QI j at level a] = its code at level b`` (a <= b), made on first
        use (a search needs few of the pairs)."""
        m = self._maps.get((j, a, b))
        if m is None:
            h = self.ft.hierarchies[j]
            m = self._maps[j, a, b] = np.zeros(len(h.labels[a]), np.int64)
            m[h.codes[a]] = h.codes[b]
        return m

    def _bottom_groups(self) -> Groups:
        ft = self.ft
        levels = (0,) * len(ft.qi_names)
        # the ground level's codes are the ground codes (a hierarchy's rows are its
        # distinct ground values, in order): shared, not copied (26 MiB at 480,000 tuples
        # of 7 QIs)
        codes = tuple(
            column.astype(np.int64, copy=False) if _identity(h.codes[0])
            else np.take(h.codes[0], column).astype(np.int64)
            for column, h in zip(ft.columns, ft.hierarchies))
        hists = {}
        for attr in self.attrs:
            rows, values, counts = ft.cells[attr]
            hists[attr] = (rows, values, counts.astype(float))
        return Groups(levels, ft.counts.astype(np.int64), hists, codes=codes)

    # ---- grouping -------------------------------------------------------------------------

    def _source(self, levels: tuple[int, ...], index: int) -> Groups:
        """A cached node at or below ``levels`` with few classes: a cached predecessor when
        one is small (searches mostly check a successor of a node just checked, and a small
        source rolls up at the cost of the calls alone), else the cached node with fewest
        classes."""
        cache, near = self._cache, None
        for stride, lv in zip(self.lattice.strides, levels):
            if lv and index - stride in cache:
                found = cache[index - stride]
                if near is None or len(found) < len(near[1]):
                    near = index - stride, found
        if near is not None and len(near[1]) <= _LADDER_MIN:
            cache.move_to_end(near[0])
            return near[1]
        n = len(self._slot_cost)
        if not self._slots:
            return self._bottom
        below = (self._slot_levels[:n] <= np.asarray(levels)).all(axis=1)
        cost = np.where(below, self._slot_cost, np.inf)
        slot = int(np.argmin(cost))
        if not np.isfinite(cost[slot]) or cost[slot] >= len(self._bottom):
            return self._bottom
        index = self._slot_index[slot]
        self._cache.move_to_end(index)
        return self._cache[index]

    def _remember(self, groups: Groups, index: int | None = None) -> None:
        weight = groups.weight
        if weight > self.cache_budget:
            return
        index = self.lattice.index(groups.levels) if index is None else index
        if index in self._cache:
            return
        # summed here, not kept: a node's weight grows when a roll-up decodes its keys
        held = sum(cached.weight for cached in self._cache.values())
        while self._cache and held + weight > self.cache_budget:
            old, old_groups = self._cache.popitem(last=False)
            held -= old_groups.weight
            slot = self._slots.pop(old)
            self._slot_cost[slot] = np.inf
            self._free.append(slot)
        if not self._free:
            grow = len(self._slot_cost)
            self._slot_levels = np.concatenate([self._slot_levels, np.zeros_like(
                self._slot_levels)])
            self._slot_cost = np.concatenate([self._slot_cost, np.full(grow, np.inf)])
            self._free.extend(range(grow, 2 * grow))
        slot = self._free.pop()
        self._slots[index] = slot
        self._slot_index[slot] = index
        self._slot_levels[slot] = groups.levels
        self._slot_cost[slot] = len(groups)
        self._cache[index] = groups

    def groups(self, levels: Sequence[int], *, remember: bool = True) -> Groups:
        """The classes of the node at ``levels``, rolled up from the closest grouped node."""
        return self._groups(tuple(map(int, levels)), remember)

    def _groups(self, levels: tuple[int, ...], remember: bool = True) -> Groups:
        index = self.lattice.index(levels)
        if index in self._cache:
            self._cache.move_to_end(index)
            return self._cache[index]
        if levels == self._bottom.levels:
            return self._bottom
        source = self._source(levels, index)
        if source is self._bottom and self.limit:
            # with suppression the sweep only goes down, so nothing cached lies below the
            # next node: group and keep the meet of the nodes grouped from the tuples so
            # far, under most of the nodes of the layers to come (0.8-0.95x the search
            # time of the 5% cases; without suppression the climbs leave sources below)
            meet = None if self._meet is None else tuple(map(min, levels, self._meet))
            self._meet = levels if meet is None else meet
            if meet is not None and _between(source.levels, meet, levels):
                source = self._groups(meet)
        ahead = self._ahead
        if (ahead is not None and len(source) > _LADDER_MIN
                and _between(source.levels, ahead, levels)):
            # the announced nodes share one source: near the top of the lattice each of
            # them would roll up all the tuples into a handful of classes (adult, k=5 with
            # t-closeness at 0%: 7 of the 10 checks roll up the meet's 739 classes instead,
            # 0.92x the instructions of the call)
            source = self._groups(ahead)
        if len(source) > _LADDER_MIN:
            # a large source: first group a node just below this one (one level lower in
            # every QI) and keep it; the neighbours checked next roll up from it cheaply
            step = tuple(max(s, lv - 1) for s, lv in zip(source.levels, levels))
            span = math.prod(self.radices[i][lv] for i, lv in enumerate(step))
            # only where the step is sure to be much smaller than the source (with
            # histograms too: they pass down through class maps, not re-summed per node,
            # so the ladder's extra groupings no longer pay for themselves: 0.65x the search
            # time on fars with l-diversity or t-closeness)
            if _between(source.levels, step, levels) and span * 2 <= len(source):
                source = self._groups(step)
        groups = _roll_up(source, levels, self._up, self.radices, self._scaled)
        if remember:
            self._remember(groups, index)
        return groups

    # ---- checking -------------------------------------------------------------------------

    def check(self, levels: Sequence[int]) -> NodeCheck:
        """Group the node, test the models, count what must be suppressed.

        Monotone models go first, and costly models (sensitive histograms) see only the
        classes the others let through; the check stops once the limit is exceeded.

        It also counts records suppressed at every specialization of the node
        (``floor_records``). With suppression, the records of classes rejected by models
        monotone with suppression (k-anonymity, distinct l-diversity) are suppressed below
        too. A class rejected only by a model that is monotone without suppression
        (entropy or recursive l-diversity, t-closeness) splits below into classes of which
        at least one is rejected (were they all accepted, their union, this class, would
        be): one record each at least. When that count passes the limit, every
        specialization fails too.
        """
        levels = tuple(map(int, levels))
        self.checks += 1
        groups = self._groups(levels)
        sizes, domains = groups.sizes, self.ft.domains
        # the classes failing a model so far (a new array per model: ``settled`` keeps one)
        violating = np.zeros(len(sizes), bool)
        n_sup, proven, settled, floor, counting, any_bad = 0, True, None, 0, True, False
        for model, flagged, kind in self._steps:
            if settled is None and not flagged:
                settled, floor = violating, n_sup  # what the monotone models alone suppress
            if kind == "sizes":
                new = ~model.holds(Classes(sizes, {}, domains))
                if any_bad:
                    new &= ~violating
            else:
                live = np.flatnonzero(~violating)
                if kind == "release":
                    # a release-wide bound: its suppression proves nothing per class below
                    counting = False
                    local = ~model.holds(Classes(sizes[live], {}, domains),
                                         budget=self.limit - n_sup)
                elif kind == "population":
                    people = model.population_at(levels, groups.codes_of(live))
                    local = ~model.holds(Classes(sizes[live], {}, domains, people))
                else:
                    local = np.zeros(len(live), bool)
                    for part in class_slices(len(live), len(domains[model.attribute].labels)):
                        classes = Classes(sizes[live[part]], self._dense_hists(
                            groups, live[part], model.attribute), domains)
                        local[part] = ~model.holds(classes)
                        if not flagged and counting and model.monotone:
                            floor += (_must_go(model, classes, local[part])
                                      - int(local[part].sum()))
                new = np.zeros(len(sizes), bool)
                new[live[local]] = True
            proven = proven and flagged
            if not flagged:
                counting = counting and model.monotone
            if not new.any():  # nothing more to suppress, nor to count
                continue
            violating, any_bad = violating | new, True
            if not flagged and counting:
                floor += int(new.sum())
            n_sup = int(sizes[violating].sum())
            if n_sup > self.limit:
                break
        ok = n_sup <= self.limit
        if settled is None:
            settled, floor = violating, n_sup
        proven = not ok and (proven or floor > self.limit)
        return NodeCheck(levels, ok, n_sup, groups, violating, proven=proven, settled=settled,
                         floor_records=floor)

    def _dense_hists(self, groups: Groups, live: np.ndarray, attr: str) -> dict[str, np.ndarray]:
        """Dense (len(live), values) histogram of ``attr`` in the classes ``live``."""
        rows, vals, counts, through = groups.triples(attr)
        if len(live) == len(groups):  # every class (as always without suppression)
            position = through
        else:  # other classes go to one extra row, dropped at the end
            position = np.full(len(groups), len(live), np.int64)
            position[live] = np.arange(len(live))
            if through is not None:
                position = np.take(position, through)
        width = len(self.ft.domains[attr].labels)
        flat = (rows if position is None else np.take(position, rows)) * width + vals
        dense = np.bincount(flat, weights=counts, minlength=(len(live) + 1) * width)
        return {attr: dense[:len(live) * width].astype(np.int64).reshape(len(live), width)}

    def suppressed_tuples(self, levels: Sequence[int]) -> np.ndarray:
        """Bool per tuple of the frequency table: its records are suppressed at ``levels``."""
        result = self.check(levels)
        if not result.violating.any():
            return np.zeros(len(self.ft.counts), bool)
        radices = [self.radices[i][lv] for i, lv in enumerate(levels)]
        codes = [self._up(i, 0, lv)[self._bottom.codes[i]] for i, lv in enumerate(levels)]
        both = [np.concatenate([c, g[result.violating]])
                for c, g in zip(codes, result.groups.codes)]
        key = (_keys(both, radices) if math.prod(radices) < 2**62
               else _ranked_key(both, radices))
        return np.isin(key[:len(codes[0])], key[len(codes[0]):])


def _reads(model: PrivacyModel) -> str:
    """What a check hands ``model``: class sizes alone, the kept classes' sizes with the
    suppression budget left (a release-wide model), their people, or their histograms."""
    if model.release:
        return "release"
    if model.needs_population:
        return "population"
    return "sizes" if model.attribute is None else "histogram"


def _must_go(model: PrivacyModel, classes: Classes, failing: np.ndarray) -> int:
    """Records to remove, at least, from the ``failing`` classes before what is left of each
    can meet ``model`` (at least one per class; see Checker.check).

    For t-closeness with the equal distance, more: a sub-multiset of n of a class's records
    is within t of the table's distribution q only if ``1 - sum_i min(c_i / n, q_i) <= t``
    (records beyond ``n q_i`` of a value are excess, whatever is kept), which holds exactly
    for n up to some n*: the class must lose at least ``size - n*`` records. (Relaxed to
    fractional counts, with a wider slack than the model's: a lower bound.)
    """
    count = int(failing.sum())
    if getattr(model, "key", "") != "t-closeness" or getattr(model, "distance", "") != "equal":
        return count
    hist = np.asarray(classes.histograms[model.attribute][failing], dtype=float)
    overall = np.asarray(classes.domains[model.attribute].overall, dtype=float)
    q = overall / overall.sum()
    size = hist.sum(axis=1)
    t = float(model.t) + 1e-6

    def close(n: np.ndarray) -> np.ndarray:
        share = np.divide(hist, n[:, None], out=np.zeros_like(hist), where=n[:, None] > 0)
        return (n == 0) | (1.0 - np.minimum(share, q).sum(axis=1) <= t)

    low, high = np.zeros_like(size), size.copy()  # low is close enough; find the largest
    high[close(size)] = 0  # (a class close enough as a whole loses nothing here)
    while (high - low > 1).any():
        mid = np.floor((low + high) / 2)
        ok = close(mid)
        low, high = np.where(ok, mid, low), np.where(ok, high, mid)
    kept = np.where(high == 0, size, low)
    return int(np.maximum(size - kept, 1).sum())


def _nonzero(counts: np.ndarray) -> np.ndarray:
    """Positions of the nonzero counts: NumPy finds them in a bool mask 2.5x (int64) to 8x
    (sparse float) faster than in the numbers, the mask included."""
    return np.flatnonzero(counts != 0)


def _between(low: tuple[int, ...], mid: tuple[int, ...], high: tuple[int, ...]) -> bool:
    """Node ``mid`` lies strictly between ``low`` and ``high``: it generalizes ``low``, is
    generalized by ``high``, and is neither (an intermediate source worth grouping)."""
    return (mid != low and mid != high and all(map(int.__le__, low, mid))
            and all(map(int.__le__, mid, high)))


def _keys(cols: Sequence[np.ndarray], radices: Sequence[int]) -> np.ndarray:
    """Mixed-radix key of code columns (exact: raises no overflow for < 2**62 spans)."""
    key = np.zeros(len(cols[0]) if cols else 0, np.int64)
    for col, radix in zip(cols, radices):
        key = key * radix + col
    return key


def _roll_up(source: Groups, levels: tuple[int, ...], up, radices,
             scaled: dict[tuple[int, int, int, int], np.ndarray]) -> Groups:
    """Group ``source``'s classes into the classes of the coarser node ``levels``.

    ``up(j, a, b)`` maps QI j's codes at level a to level b; ``scaled`` keeps each level
    map multiplied by a stride for the next calls."""
    rad = [r[b] for r, b in zip(radices, levels)]
    m = len(source.sizes)
    has_hists = source.has_hists
    # QIs with a single value at this level add nothing to the key
    active = [j for j, r in enumerate(rad) if r > 1]
    span = math.prod([rad[j] for j in active])
    changed = [j for j, (a, b) in enumerate(zip(source.levels, levels)) if a != b]
    if span < 2**62 and len(changed) == 1 and source._keys is not None:
        # one QI moves up (most roll-ups of a search): rewrite its digit of the source's
        # keys in place of decoding every QI's codes and combining them again
        j = changed[0]
        low_span = math.prod(rad[j + 1:])
        high, low = np.divmod(source._keys, low_span)
        high, code = np.divmod(high, source._radices[j])
        key = (high * rad[j] + np.take(up(j, source.levels[j], levels[j]), code)) * low_span
        key += low
    elif span < 2**62:
        codes = source.codes
        # key = sum of per-QI maps scaled by the QI's stride: one gather and add per QI
        key = None
        stride = span
        for j in active:
            stride //= rad[j]
            a, b = source.levels[j], levels[j]
            if a == b:
                part = codes[j] * stride
            else:
                table = scaled.get((j, a, b, stride))
                if table is None:
                    table = scaled[j, a, b, stride] = up(j, a, b) * stride
                part = np.take(table, codes[j])
            if key is None:
                key = part
            else:
                key += part
        if key is None:
            key = np.zeros(m, np.int64)
    else:
        codes = source.codes
        cols = [codes[j] if source.levels[j] == levels[j] else
                up(j, source.levels[j], levels[j])[codes[j]] for j in active]
        key = _ranked_key(cols, [rad[j] for j in active])
        span = None
    inverse = None
    if span is not None and span <= _DENSE_FACTOR * m + _DENSE_SLACK:
        dense = np.bincount(key, weights=source.weights, minlength=span)
        occupied = _nonzero(dense)
        sizes = dense[occupied].astype(np.int64)
        if has_hists:
            rank = np.zeros(span, np.int64)
            rank[occupied] = np.arange(len(occupied))
            inverse = np.take(rank, key)
        groups = Groups(levels, sizes, keys=occupied, radices=rad)
    else:
        inverse, uniq = factorized(key)
        sizes = np.bincount(inverse, weights=source.weights, minlength=len(uniq)).astype(np.int64)
        if span is not None:
            groups = Groups(levels, sizes, keys=uniq, radices=rad)
        else:
            first = first_seen(inverse, len(uniq))
            groups = Groups(levels, sizes, codes=tuple(
                (c if source.levels[i] == levels[i] else up(i, source.levels[i], levels[i])[c])[
                    first] for i, c in enumerate(codes)))
    if has_hists:
        groups._pending = (source, inverse)
    return groups


def _identity(codes: np.ndarray) -> bool:
    """Whether ``codes[g] == g`` for every g."""
    return bool(np.array_equal(codes, np.arange(len(codes))))


def _decode(keys: np.ndarray, rad: Sequence[int]) -> tuple[np.ndarray, ...]:
    """Code columns from mixed-radix keys over the QIs of radix > 1 (the others are 0)."""
    keys = np.asarray(keys, np.int64)
    out = [np.zeros(len(keys), np.int64) for _ in rad]
    rest = keys
    for j in reversed(range(len(rad))):
        if rad[j] > 1:
            rest, out[j] = np.divmod(rest, rad[j])
    return tuple(out)


def _ranked_key(cols: Sequence[np.ndarray], rad: Sequence[int]) -> np.ndarray:
    """A key for spans past int64: combine column by column, re-ranking when it grows."""
    key = np.zeros(len(cols[0]), np.int64)
    span = 1
    for col, r in zip(cols, rad):
        if span * r >= 2**62:
            import pandas as pd  # not at import: start-up time (as groupby.py)
            key, uniq = pd.factorize(key, sort=False)
            key = key.astype(np.int64)
            span = len(uniq)
        key = key * r + col
        span *= r
    return key


def _roll_hist(cls: np.ndarray, vals: np.ndarray, counts: np.ndarray, n_classes: int):
    """Sum sparse (class, value, count) triples that share class and value (float counts)."""
    if len(cls) == 0:
        return cls, vals, counts
    width = int(vals.max()) + 1
    pair = cls * width + vals
    span = n_classes * width
    if span <= _DENSE_FACTOR * len(pair) + _DENSE_SLACK:
        dense = np.bincount(pair, weights=counts, minlength=span)
        nz = _nonzero(dense)
        return nz // width, nz % width, dense[nz]
    import pandas as pd  # not at import: start-up time (as groupby.py)
    inverse, uniq = pd.factorize(pair, sort=False)
    summed = np.bincount(inverse, weights=counts, minlength=len(uniq))
    uniq = np.asarray(uniq, np.int64)
    return uniq // width, uniq % width, summed


# -- the classes of one node, away from the lattice's caches -------------------------------


def violating_classes(ft: FrequencyTable, levels: Sequence[int],
                      models: Sequence[PrivacyModel]) -> tuple[np.ndarray, np.ndarray, Classes]:
    """At node ``levels``: a bool per class (True = violates some model), each tuple's
    class id, and the Classes (with the histograms the models use, no others, and the
    people of the first model with a population)."""
    generalized = ft.generalized(levels)
    radices = [len(h.labels[lvl]) for h, lvl in zip(ft.hierarchies, levels)]
    return violating_of_keys(ft, levels, models, generalized,
                      combine_keys(generalized, radices), math.prod(radices))


def violating_of_keys(ft: FrequencyTable, levels: Sequence[int], models: Sequence[PrivacyModel],
               generalized: np.ndarray, keys: np.ndarray,
               span: int, forced: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, Classes]:
    """:func:`violating_classes` given each tuple's generalized codes and class key
    (smaller than ``span``); the classes of the ``forced`` tuples are suppressed whatever
    the models say."""
    class_of_tuple, n_classes = unique_inverse(keys, span)
    sizes = np.bincount(class_of_tuple, weights=ft.counts, minlength=n_classes)
    used = {m.attribute for m in models if getattr(m, "attribute", None) in ft.cells}
    widest = max((len(ft.domains[name].labels) for name in used), default=1)
    parts = class_slices(n_classes, widest)
    suppressed = None
    if forced is not None:
        suppressed = np.zeros(n_classes, bool)
        suppressed[class_of_tuple[forced]] = True
    sliced = len(parts) > 1
    if sliced:  # the classes of a sensitive column's models, a slice at a time
        failing = _failing_in_slices(ft, class_of_tuple, sizes, used, models, parts)
        suppressed = failing if suppressed is None else suppressed | failing
        histograms = {}
    else:
        histograms = {name: summed(np.take(class_of_tuple, ft.cells[name].rows),
                                   ft.cells[name].values, ft.cells[name].counts, n_classes,
                                   len(ft.domains[name].labels)) for name in used}
    classes = Classes(sizes.astype(np.int64), histograms, ft.domains)
    return _violating(ft, levels, models, generalized, class_of_tuple, classes, suppressed,
                      sized=sliced)


def _failing_in_slices(ft: FrequencyTable, class_of_tuple: np.ndarray, sizes: np.ndarray,
                       used: set[str], models: Sequence[PrivacyModel],
                       parts: Sequence[slice]) -> np.ndarray:
    """The classes a model of a sensitive column fails, a slice of classes at a time."""
    cells = {}  # each column's cells by class, and where each slice's are
    for name in used:
        rows, values, counts = ft.cells[name]
        of = np.take(class_of_tuple, rows)
        cells[name] = (of, values, counts, in_slices(of, parts))
    failing = np.zeros(len(sizes), bool)
    for i, part in enumerate(parts):
        classes = Classes(sizes[part].astype(np.int64), {
            name: summed(of[at[i]] - part.start, values[at[i]], counts[at[i]],
                         part.stop - part.start, len(ft.domains[name].labels))
            for name, (of, values, counts, at) in cells.items()}, ft.domains)
        for model in models:
            if getattr(model, "attribute", None) in used and not model.needs_population:
                failing[part] |= ~np.asarray(model.holds(classes), dtype=bool)
    return failing


def _violating(ft: FrequencyTable, levels: Sequence[int], models: Sequence[PrivacyModel],
               generalized: np.ndarray, class_of_tuple: np.ndarray, classes: Classes,
               suppressed: np.ndarray | None, sized: bool = False
               ) -> tuple[np.ndarray, np.ndarray, Classes]:
    """:func:`violating` on ``classes`` (``sized``: sizes only, the sensitive columns'
    models already counted in ``suppressed``), with the people of the first model with a
    population carried by the classes."""
    n_classes = len(classes.sizes)
    counted = [m for m in models if m.needs_population]
    codes: Sequence[np.ndarray] = ()
    if counted:  # each class's codes, from its first tuple
        first = first_seen(class_of_tuple, n_classes)
        codes = [np.asarray(c)[first] for c in generalized.T]
    checked = ([m for m in models if m.attribute is None or m.needs_population] if sized
               else models)
    bad = violating(classes, checked, levels, codes, suppressed)
    if counted:  # the classes carry the people of the first model with a population
        classes = replace(classes, population=counted[0].population_at(levels, codes))
    return bad, class_of_tuple, classes
